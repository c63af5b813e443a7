//! Self-Verification: each fact (sentence) of an answer is checked against the agent's script, one call
//! per fact; the attempt is scored on authenticity first and length as a tie-breaker.

use minijinja::context;
use serde_json::json;

use super::super::context::{schema, Context};
use super::super::AgentError;
use crate::llm::Phase;
use crate::text;

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
    let mut supported = 0;
    let mut verdicts = Vec::new();
    for f in &facts {
        let user = cx.prompts().render("sv_check", context! { claim => f })?;
        let (_, v) = cx
            .call("sv_check", user, 20, Some(s.clone()), phase)
            .await?;
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
