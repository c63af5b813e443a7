//! The server's totals: what a test compares with what a client accounted.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// Totals since the server started. `requests` counts every request to the two POST endpoints; `ok`
/// counts the successful ones; token totals come from successful answers only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MockStats {
    pub requests: u64,
    pub ok: u64,
    pub rate_limited: u64,
    pub server_errors: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Successful chat completions answered with [`super::MALFORMED_REPLY`].
    #[serde(default)]
    pub malformed: u64,
    /// Chat completions refused for good: a malformed body, an unknown model, a setting the
    /// dialect does not take (`response_format` under `llama-cpp`), a prompt past the context window.
    #[serde(default)]
    pub refused: u64,
    /// With `--context-window`: the largest prompt of a chat completion so far, with its completion
    /// limit, in tokens (cl100k), whether or not it fit.
    #[serde(default)]
    pub max_request_tokens: u64,
    /// Batch API (`batches.rs`): files uploaded, batches created, expired, lines answered and failed,
    /// lines answered a second time under a `custom_id` already answered, and the answered lines'
    /// tokens.
    #[serde(default)]
    pub files: u64,
    #[serde(default)]
    pub batches: u64,
    #[serde(default)]
    pub batches_expired: u64,
    #[serde(default)]
    pub batch_lines: u64,
    #[serde(default)]
    pub batch_line_failures: u64,
    #[serde(default)]
    pub batch_lines_duplicate: u64,
    #[serde(default)]
    pub batch_prompt_tokens: u64,
    #[serde(default)]
    pub batch_completion_tokens: u64,
}

/// Live totals; atomics so concurrent requests never contend on a lock for bookkeeping.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) requests: AtomicU64,
    pub(super) ok: AtomicU64,
    pub(super) rate_limited: AtomicU64,
    pub(super) server_errors: AtomicU64,
    pub(super) prompt_tokens: AtomicU64,
    pub(super) completion_tokens: AtomicU64,
    pub(super) malformed: AtomicU64,
    pub(super) refused: AtomicU64,
    pub(super) max_request_tokens: AtomicU64,
    /// Chat completions that reached the model so far (the malformed-output fault counts these).
    pub(super) malformed_slots: AtomicU64,
    pub(super) files: AtomicU64,
    pub(super) batches: AtomicU64,
    /// Batches run so far (the first `batch_expire_first` expire).
    pub(super) batches_run: AtomicU64,
    pub(super) batches_expired: AtomicU64,
    pub(super) batch_lines: AtomicU64,
    pub(super) batch_line_failures: AtomicU64,
    pub(super) batch_lines_duplicate: AtomicU64,
    pub(super) batch_prompt_tokens: AtomicU64,
    pub(super) batch_completion_tokens: AtomicU64,
}

impl Counters {
    pub(super) fn snapshot(&self) -> MockStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        MockStats {
            requests: get(&self.requests),
            ok: get(&self.ok),
            rate_limited: get(&self.rate_limited),
            server_errors: get(&self.server_errors),
            prompt_tokens: get(&self.prompt_tokens),
            completion_tokens: get(&self.completion_tokens),
            malformed: get(&self.malformed),
            refused: get(&self.refused),
            max_request_tokens: get(&self.max_request_tokens),
            files: get(&self.files),
            batches: get(&self.batches),
            batches_expired: get(&self.batches_expired),
            batch_lines: get(&self.batch_lines),
            batch_line_failures: get(&self.batch_line_failures),
            batch_lines_duplicate: get(&self.batch_lines_duplicate),
            batch_prompt_tokens: get(&self.batch_prompt_tokens),
            batch_completion_tokens: get(&self.batch_completion_tokens),
        }
    }
}
