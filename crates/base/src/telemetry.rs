//! Metric names, their descriptions, and the Prometheus exporter.
//!
//! Every metric sleuth exports is named here, so `docs/metrics.md` and dashboards have one list to follow.
//! Labels are low-cardinality only (model, phase, purpose, outcome, stage); game and agent ids go to the
//! transcript, never to labels.

use std::net::SocketAddr;

use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

pub const LLM_CALLS: &str = "sleuth_llm_calls_total";
pub const LLM_LATENCY: &str = "sleuth_llm_request_duration_seconds";
pub const LLM_TOKENS: &str = "sleuth_llm_tokens_total";
pub const LLM_COST: &str = "sleuth_llm_cost_microusd_total";
pub const LLM_RETRIES: &str = "sleuth_llm_retries_total";
pub const LLM_PARSE_FAILURES: &str = "sleuth_llm_parse_failures_total";
pub const LLM_IN_FLIGHT: &str = "sleuth_llm_requests_in_flight";
pub const LLM_CONCURRENCY_LIMIT: &str = "sleuth_llm_concurrency_limit";
pub const LLM_CACHE_HITS: &str = "sleuth_llm_cache_hits_total";
pub const LLM_FALLBACKS: &str = "sleuth_llm_fallbacks_total";
pub const LLM_TRUNCATED: &str = "sleuth_llm_truncated_replies_total";
pub const LLM_PROMPT_CACHE: &str = "sleuth_llm_prompt_cache_tokens_total";
pub const LLM_SHORTENED: &str = "sleuth_llm_shortened_prompts_total";
pub const LLM_BYTES_TOKENIZED: &str = "sleuth_llm_bytes_tokenized_total";
pub const BATCH_LINES: &str = "sleuth_batch_lines_total";
pub const BATCHES_SUBMITTED: &str = "sleuth_batches_submitted_total";
pub const BATCH_OPEN: &str = "sleuth_batches_open";
pub const BATCH_WAITING_GAMES: &str = "sleuth_games_waiting_batch";
pub const GAMES: &str = "sleuth_games_total";
pub const GAMES_IN_FLIGHT: &str = "sleuth_games_in_flight";
pub const STAGE_DURATION: &str = "sleuth_game_stage_duration_seconds";
pub const MEMORY_RECORDS: &str = "sleuth_memory_records_total";
pub const GATEWAY_RESTARTS: &str = "sleuth_node_gateway_restarts_total";
pub const SWEEP_GAMES: &str = "sleuth_sweep_games";
pub const SWEEP_BUDGET_USD: &str = "sleuth_sweep_budget_usd";
pub const CLUSTER_WORKERS: &str = "sleuth_cluster_workers";
pub const CLUSTER_QUEUE: &str = "sleuth_cluster_queue_entries";
pub const CLUSTER_CLAIMED: &str = "sleuth_cluster_claimed_total";
pub const WORKER_CAPACITY: &str = "sleuth_worker_capacity";

/// The Prometheus type of an exported metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

impl MetricKind {
    /// The type as the exposition format's `# TYPE` line names it.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Histogram => "histogram",
        }
    }
}

/// Every metric sleuth exports, with its type: what dashboards (`grafana/dashboards/`) and their test
/// (`tests/it/dashboards.rs`) check queries against. A new constant above belongs here too (a unit test
/// below fails otherwise), and in a dashboard panel (`tests/it/dashboards.rs` fails otherwise).
pub const EXPORTED: &[(&str, MetricKind)] = &[
    (LLM_CALLS, MetricKind::Counter),
    (LLM_LATENCY, MetricKind::Histogram),
    (LLM_TOKENS, MetricKind::Counter),
    (LLM_COST, MetricKind::Counter),
    (LLM_RETRIES, MetricKind::Counter),
    (LLM_PARSE_FAILURES, MetricKind::Counter),
    (LLM_IN_FLIGHT, MetricKind::Gauge),
    (LLM_CONCURRENCY_LIMIT, MetricKind::Gauge),
    (LLM_CACHE_HITS, MetricKind::Counter),
    (LLM_FALLBACKS, MetricKind::Counter),
    (LLM_TRUNCATED, MetricKind::Counter),
    (LLM_PROMPT_CACHE, MetricKind::Counter),
    (LLM_SHORTENED, MetricKind::Counter),
    (LLM_BYTES_TOKENIZED, MetricKind::Counter),
    (BATCH_LINES, MetricKind::Counter),
    (BATCHES_SUBMITTED, MetricKind::Counter),
    (BATCH_OPEN, MetricKind::Gauge),
    (BATCH_WAITING_GAMES, MetricKind::Gauge),
    (GAMES, MetricKind::Counter),
    (GAMES_IN_FLIGHT, MetricKind::Gauge),
    (STAGE_DURATION, MetricKind::Histogram),
    (MEMORY_RECORDS, MetricKind::Counter),
    (GATEWAY_RESTARTS, MetricKind::Counter),
    (SWEEP_GAMES, MetricKind::Gauge),
    (SWEEP_BUDGET_USD, MetricKind::Gauge),
    (CLUSTER_WORKERS, MetricKind::Gauge),
    (CLUSTER_QUEUE, MetricKind::Gauge),
    (CLUSTER_CLAIMED, MetricKind::Counter),
    (WORKER_CAPACITY, MetricKind::Gauge),
];

/// Buckets for LLM latency: from a local mock (milliseconds) to a slow hosted model (a minute).
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Buckets for stage durations: a simulated stage takes milliseconds, a hosted one minutes.
const STAGE_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

/// Why the exporter could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve metrics on {addr}: {message}")]
pub struct TelemetryError {
    pub addr: SocketAddr,
    pub message: String,
}

/// Starts the Prometheus exporter serving `/metrics` on `addr`. Must run inside a tokio runtime.
pub fn serve_metrics(addr: SocketAddr) -> Result<(), TelemetryError> {
    let err = |e: &dyn std::fmt::Display| TelemetryError {
        addr,
        message: e.to_string(),
    };
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Full(LLM_LATENCY.into()), LATENCY_BUCKETS)
        .map_err(|e| err(&e))?
        .set_buckets_for_metric(Matcher::Full(STAGE_DURATION.into()), STAGE_BUCKETS)
        .map_err(|e| err(&e))?
        .install()
        .map_err(|e| err(&e))?;
    describe();
    Ok(())
}

/// Registers help texts; called once the recorder is installed.
pub fn describe() {
    describe_counter!(
        LLM_CALLS,
        Unit::Count,
        "LLM calls that completed, by model, phase, purpose and outcome (ok, parse_failure)."
    );
    describe_histogram!(
        LLM_LATENCY,
        Unit::Seconds,
        "Latency of successful LLM call attempts, by model and phase."
    );
    describe_counter!(
        LLM_TOKENS,
        Unit::Count,
        "Tokens of LLM calls, by model, phase, framework, arm, kind (prompt, completion, cached) and source (live: paid for; cache: replayed at no cost)."
    );
    describe_counter!(LLM_COST, "Cost of live LLM calls in millionths of a US dollar, by model, phase, framework and arm, from the pricing table.");
    describe_counter!(
        LLM_CACHE_HITS,
        Unit::Count,
        "LLM calls answered from the content-addressed cache (at no cost), by model, phase, framework and arm."
    );
    describe_counter!(
        LLM_PROMPT_CACHE,
        Unit::Count,
        "Prompt tokens of chat requests as sleuth's prefix tracker counts them, by model, phase, framework, arm and kind (prompt: all; cacheable: the prefix shared with an earlier request of the model in the run, from 1,024 tokens in 128-token steps, OpenAI's rule). cacheable / prompt is the cacheable share."
    );
    describe_counter!(
        LLM_RETRIES,
        Unit::Count,
        "LLM call attempts that failed and were retried, by model and reason."
    );
    describe_counter!(
        LLM_PARSE_FAILURES,
        Unit::Count,
        "Structured outputs that could not be parsed and were re-asked, by model and purpose."
    );
    describe_counter!(
        LLM_FALLBACKS,
        Unit::Count,
        "Endpoint settings stepped down after a refusal naming them, by model, setting (structured, token_limit), from and to: once per route and run."
    );
    describe_counter!(
        LLM_TRUNCATED,
        Unit::Count,
        "Replies longer than their max_tokens (the server ignored the limit) cut to it, by model."
    );
    describe_counter!(
        LLM_SHORTENED,
        Unit::Count,
        "Prompts shortened to fit the model's context window (dialogue, then memory chunks left out), by model and purpose."
    );
    describe_counter!(
        LLM_BYTES_TOKENIZED,
        Unit::Bytes,
        "Bytes of text the cl100k tokenizer read: texts its process-wide memo did not hold yet. Each distinct text counts once; a rise with every call means something is tokenized again."
    );
    describe_counter!(
        BATCH_LINES,
        Unit::Count,
        "Evaluation calls through the Batch API, by model and outcome: deferred (queued for a batch), answered, failed (inside a batch: a line error, an expired or failed batch), retried_live, retried_batch."
    );
    describe_counter!(
        BATCHES_SUBMITTED,
        Unit::Count,
        "Batches submitted to a provider, by model."
    );
    describe_gauge!(
        BATCH_OPEN,
        Unit::Count,
        "Batches submitted and not yet ended (completed, failed, expired or cancelled)."
    );
    describe_gauge!(
        BATCH_WAITING_GAMES,
        Unit::Count,
        "Games whose evaluation waits on a batch (state evaluating_batch): rows in the batch journal, no actors."
    );
    describe_gauge!(
        LLM_IN_FLIGHT,
        Unit::Count,
        "LLM requests being processed by the gateway now."
    );
    describe_gauge!(
        LLM_CONCURRENCY_LIMIT,
        Unit::Count,
        "Requests this process sends a model at once now, by model: the adaptive limit (AIMD between 1 and max_concurrency), or the fixed one."
    );
    describe_counter!(
        GAMES,
        Unit::Count,
        "Games finished, by protocol and outcome (civilians, murderer, not_played, failed)."
    );
    describe_gauge!(GAMES_IN_FLIGHT, Unit::Count, "Games being played now.");
    describe_histogram!(
        STAGE_DURATION,
        Unit::Seconds,
        "Wall time of each game stage, by protocol and stage."
    );
    describe_counter!(
        GATEWAY_RESTARTS,
        Unit::Count,
        "Times the node supervisor restarted a dead LLM gateway."
    );
    describe_gauge!(
        SWEEP_GAMES,
        Unit::Count,
        "Games of the running sweep by state (queued, in_flight, done, failed, interrupted)."
    );
    describe_gauge!(
        SWEEP_BUDGET_USD,
        "The running sweep's budget in US dollars (absent without one)."
    );
    describe_gauge!(
        CLUSTER_WORKERS,
        Unit::Count,
        "Workers of the cluster that heartbeat (served by the coordinator)."
    );
    describe_gauge!(
        CLUSTER_QUEUE,
        Unit::Count,
        "Game entries of the cluster's work queue by state (waiting: not read yet; delivered: read by a worker, not acknowledged), served by the coordinator."
    );
    describe_counter!(
        CLUSTER_CLAIMED,
        Unit::Count,
        "Game entries this worker claimed from a worker that stopped heartbeating."
    );
    describe_gauge!(
        WORKER_CAPACITY,
        Unit::Count,
        "Games this worker plays at once at most (its --capacity)."
    );
    describe_counter!(
        MEMORY_RECORDS,
        Unit::Count,
        "Records added to agents' memory indexes."
    );
}

#[cfg(test)]
mod tests {
    use super::{MetricKind, EXPORTED};

    /// The values of every `pub const NAME: &str = "sleuth_…";` in this file, read from its source so
    /// a constant added without an `EXPORTED` entry is caught.
    fn declared_names() -> Vec<String> {
        let file = include_str!("telemetry.rs");
        let src = file.split("#[cfg(test)]").next().unwrap_or(file);
        let mut names = Vec::new();
        for decl in src.split("pub const ").skip(1) {
            let Some((head, _)) = decl.split_once(';') else {
                continue;
            };
            let Some((_, rest)) = head.split_once(": &str") else {
                continue;
            };
            let value = rest.trim().trim_start_matches('=').trim().trim_matches('"');
            if value.starts_with("sleuth_") {
                names.push(value.to_string());
            }
        }
        names
    }

    #[test]
    fn every_metric_constant_is_in_the_exported_list() {
        let declared = declared_names();
        // The scan reads constants on one line and split by rustfmt alike.
        for known in [super::LLM_CALLS, super::SWEEP_BUDGET_USD] {
            assert!(
                declared.iter().any(|d| d == known),
                "{known} in {declared:?}"
            );
        }
        for name in &declared {
            assert!(
                EXPORTED.iter().any(|(n, _)| n == name),
                "{name} is a metric constant but not in telemetry::EXPORTED"
            );
        }
        for (i, (name, _)) in EXPORTED.iter().enumerate() {
            assert!(
                declared.iter().any(|d| d == name),
                "EXPORTED names {name}, which no `pub const` of telemetry.rs declares"
            );
            assert!(
                EXPORTED[..i].iter().all(|(n, _)| n != name),
                "EXPORTED lists {name} twice"
            );
        }
    }

    #[test]
    fn exported_names_follow_prometheus_conventions_for_their_kind() {
        for (name, kind) in EXPORTED {
            assert!(name.starts_with("sleuth_"), "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{name}"
            );
            match kind {
                MetricKind::Counter => assert!(name.ends_with("_total"), "counter {name}"),
                MetricKind::Gauge | MetricKind::Histogram => {
                    assert!(!name.ends_with("_total"), "{} {name}", kind.as_str());
                    for suffix in ["_bucket", "_sum", "_count"] {
                        assert!(!name.ends_with(suffix), "{} {name}", kind.as_str());
                    }
                }
            }
        }
    }
}
