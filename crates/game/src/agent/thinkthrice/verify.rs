//! Self-Verification: each fact (sentence) of an answer is checked against the agent's script, one call
//! per fact; the attempt is scored on authenticity first and length as a tie-breaker.

use minijinja::context;
use serde_json::json;

use super::super::context::{schema, Context};
use super::super::{together, AgentError};
use sleuth_base::text;
use sleuth_llm::{Phase, ResponseSchema};

/// Facts checked per Self-Verification attempt; longer answers are checked on their first sentences.
const SV_MAX_FACTS: usize = 6;
/// An answer passes verification with at least this many supported facts (or all, if it has fewer)…
const SV_MIN_SUPPORTED: usize = 2;
/// …and at least this share of its facts supported.
const SV_MIN_RATIO: f64 = 0.6;

/// Verifies one attempt. Returns the attempt's score and whether it meets the threshold.
pub(super) async fn verify(
    cx: &mut Context,
    answer: &str,
    attempt: u32,
    phase: Phase,
) -> Result<(f64, bool), AgentError> {
    let facts: Vec<String> = text::sentences(answer)
        .into_iter()
        .take(SV_MAX_FACTS)
        .collect();
    let s = schema(
        "verification",
        json!({"type": "object", "properties": {"supported": {"type": "boolean"}}, "required": ["supported"], "additionalProperties": false}),
    );
    // Each fact is checked on its own (one call each, independent of the others): the checks run
    // together, each with the index a one-by-one check would have drawn, and are joined in order.
    let mut checks = Vec::with_capacity(facts.len());
    for f in &facts {
        let user = cx.prompts().render("sv_check", context! { claim => f })?;
        checks.push((user, cx.fork_calls(1)));
    }
    let bound = cx.bound().clone();
    let mut work = Vec::with_capacity(checks.len());
    for (user, unit) in checks {
        work.push(check(unit, user, s.clone(), phase));
    }
    let checked = together(&bound, work).await;
    let mut supported = 0;
    let mut verdicts = Vec::new();
    for (unit, r) in checked {
        let (_, v) = r?;
        cx.join(unit)?;
        let ok = v
            .as_ref()
            .and_then(|v| v["supported"].as_bool())
            .unwrap_or(false);
        supported += usize::from(ok);
        verdicts.push(ok);
    }
    let n = facts.len();
    let ratio = if n == 0 {
        0.0
    } else {
        supported as f64 / n as f64
    };
    let passed = n > 0 && supported >= SV_MIN_SUPPORTED.min(n) && ratio >= SV_MIN_RATIO;
    let words = answer
        .split_whitespace()
        .count()
        .max(answer.chars().count() / 2);
    let score = ratio + 0.1 * (words.min(150) as f64 / 150.0);
    cx.step(
        "sv_attempt",
        format!("attempt {}: {supported}/{n} facts supported", attempt + 1),
        Some(json!({ "attempt": attempt + 1, "supported": supported, "facts": n, "verdicts": verdicts, "passed": passed, "score": score })),
    );
    Ok((score, passed))
}

/// One fact's check in a unit of its own, handed back with its result for joining.
async fn check(
    mut unit: Context,
    user: String,
    schema: ResponseSchema,
    phase: Phase,
) -> (
    Context,
    Result<(String, Option<serde_json::Value>), AgentError>,
) {
    let r = unit.call("sv_check", user, 20, Some(schema), phase).await;
    (unit, r)
}
