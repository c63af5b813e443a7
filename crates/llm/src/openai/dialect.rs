//! What an OpenAI-compatible endpoint accepts: how a structured reply is asked for and which field
//! carries the completion limit — chosen per model, and learnt from the endpoint's refusals.
//!
//! Servers that call themselves OpenAI-compatible differ exactly here. OpenAI and recent vLLM take
//! `response_format: {type: "json_schema"}`; llama.cpp's Python server (llama-cpp-python) accepts only
//! `text` or `json_object` (reading a `schema` field next to the type) and answers anything else with
//! HTTP 500 and a validation message; older vLLM, Ollama and LM Studio differ again. OpenAI reads
//! `max_completion_tokens` (and its reasoning models refuse `max_tokens`, as does any OpenAI model sent
//! both), while llama-cpp-python, older vLLM and Ollama read only `max_tokens` and generate to the end
//! of the context without it. So each setting has a configured value (`structured`, `token_limit` in
//! a sweep's models table, `--structured` / `--token-limit` on the command line) and, where the
//! configured value allows it, steps down once on the refusal that names it, for the rest of the run.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::{Deserialize, Serialize};

use sleuth_base::telemetry as tm;

/// How a reply that must follow a JSON schema is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredMode {
    /// `json_schema` first; on a refusal naming `response_format`, `json_object` with the schema, then
    /// the schema stated in the prompt.
    #[default]
    Auto,
    /// `response_format: {type: "json_schema", json_schema: {name, schema, strict}}` (OpenAI, vLLM).
    JsonSchema,
    /// `response_format: {type: "json_object", schema}` (llama.cpp reads the schema; servers that do
    /// not still return a JSON object), with the schema also stated in the prompt.
    JsonObject,
    /// No `response_format`: the schema is stated in the prompt, and the gateway's parser and re-asks
    /// do the rest.
    Prompt,
}

impl StructuredMode {
    /// The value as written in a sweep file or on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            StructuredMode::Auto => "auto",
            StructuredMode::JsonSchema => "json_schema",
            StructuredMode::JsonObject => "json_object",
            StructuredMode::Prompt => "prompt",
        }
    }

    /// The mode tried first.
    fn first(self) -> StructuredMode {
        match self {
            StructuredMode::Auto => StructuredMode::JsonSchema,
            m => m,
        }
    }

    /// The mode `auto` falls back to after this one is refused.
    fn fallback(self) -> Option<StructuredMode> {
        match self {
            StructuredMode::JsonSchema => Some(StructuredMode::JsonObject),
            StructuredMode::JsonObject => Some(StructuredMode::Prompt),
            StructuredMode::Auto | StructuredMode::Prompt => None,
        }
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(c: u8) -> StructuredMode {
        [
            StructuredMode::Auto,
            StructuredMode::JsonSchema,
            StructuredMode::JsonObject,
            StructuredMode::Prompt,
        ]
        .get(usize::from(c))
        .copied()
        .unwrap_or(StructuredMode::Prompt)
    }
}

impl fmt::Display for StructuredMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StructuredMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(StructuredMode::Auto),
            "json_schema" => Ok(StructuredMode::JsonSchema),
            "json_object" => Ok(StructuredMode::JsonObject),
            "prompt" => Ok(StructuredMode::Prompt),
            other => Err(format!(
                "unknown structured-output mode `{other}` (expected auto, json_schema, json_object or prompt)"
            )),
        }
    }
}

/// Which request field carries the completion limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenLimit {
    /// Both `max_tokens` and `max_completion_tokens`, so that every server finds the one it reads; on
    /// a refusal naming them (OpenAI refuses both at once, and `max_tokens` for reasoning models),
    /// the one the refusal leaves, for the rest of the run.
    #[default]
    Both,
    /// `max_tokens` only (llama.cpp, older vLLM and Ollama read nothing else).
    MaxTokens,
    /// `max_completion_tokens` only (OpenAI).
    MaxCompletionTokens,
}

impl TokenLimit {
    /// The value as written in a sweep file or on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenLimit::Both => "both",
            TokenLimit::MaxTokens => "max_tokens",
            TokenLimit::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    /// Whether `max_tokens` is sent.
    pub(super) fn sends_max_tokens(self) -> bool {
        self != TokenLimit::MaxCompletionTokens
    }

    /// Whether `max_completion_tokens` is sent.
    pub(super) fn sends_max_completion_tokens(self) -> bool {
        self != TokenLimit::MaxTokens
    }

    fn from_code(c: u8) -> TokenLimit {
        [
            TokenLimit::Both,
            TokenLimit::MaxTokens,
            TokenLimit::MaxCompletionTokens,
        ]
        .get(usize::from(c))
        .copied()
        .unwrap_or(TokenLimit::MaxTokens)
    }
}

impl fmt::Display for TokenLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TokenLimit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "both" => Ok(TokenLimit::Both),
            "max_tokens" => Ok(TokenLimit::MaxTokens),
            "max_completion_tokens" => Ok(TokenLimit::MaxCompletionTokens),
            other => Err(format!(
                "unknown token limit `{other}` (expected both, max_tokens or max_completion_tokens)"
            )),
        }
    }
}

/// The settings one provider instance (one route) sends now: the configured ones, stepped down by
/// the refusals met so far. Atomics, because every game of the node shares the route: the first call
/// that meets a refusal moves the setting for all later ones (calls already in flight each meet the
/// refusal once, and each then sends the setting already learnt).
#[derive(Debug)]
pub(super) struct Learnt {
    configured: StructuredMode,
    structured: AtomicU8,
    configured_limit: TokenLimit,
    token_limit: AtomicU8,
}

impl Learnt {
    pub(super) fn new(structured: StructuredMode, token_limit: TokenLimit) -> Learnt {
        Learnt {
            configured: structured,
            structured: AtomicU8::new(structured.first().code()),
            configured_limit: token_limit,
            token_limit: AtomicU8::new(token_limit as u8),
        }
    }

    /// The structured-output mode to send now (never `Auto`).
    pub(super) fn structured(&self) -> StructuredMode {
        StructuredMode::from_code(self.structured.load(Ordering::Acquire))
    }

    /// The completion-limit field(s) to send now.
    pub(super) fn token_limit(&self) -> TokenLimit {
        TokenLimit::from_code(self.token_limit.load(Ordering::Acquire))
    }

    /// After `sent` was refused for its `response_format`: whether the request may be sent again in
    /// another mode (only under `auto`, and only while a fallback is left). The first caller to move
    /// the mode logs it at warn and counts it; later ones find it moved already.
    pub(super) fn structured_refused(&self, sent: StructuredMode, model: &str, why: &str) -> bool {
        if self.configured != StructuredMode::Auto {
            return false;
        }
        let now = self.structured();
        if now != sent {
            // Another call moved it meanwhile: send again in the mode it learnt.
            return true;
        }
        let Some(next) = sent.fallback() else {
            return false;
        };
        if self
            .structured
            .compare_exchange(
                sent.code(),
                next.code(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            learnt("structured", sent.as_str(), next.as_str(), model, why);
        }
        true
    }

    /// After `sent` was refused for its completion-limit fields, with `wanted` the field the refusal
    /// leaves: whether the request may be sent again (only from `both`, the default).
    pub(super) fn token_limit_refused(
        &self,
        sent: TokenLimit,
        wanted: TokenLimit,
        model: &str,
        why: &str,
    ) -> bool {
        if self.configured_limit != TokenLimit::Both || wanted == TokenLimit::Both {
            return false;
        }
        let now = self.token_limit();
        if now != sent {
            return now != TokenLimit::Both;
        }
        if sent != TokenLimit::Both {
            return false;
        }
        if self
            .token_limit
            .compare_exchange(
                sent as u8,
                wanted as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            learnt("token_limit", sent.as_str(), wanted.as_str(), model, why);
        }
        true
    }
}

/// One setting stepped down: logged once, counted.
fn learnt(setting: &'static str, from: &'static str, to: &'static str, model: &str, why: &str) {
    tracing::warn!(
        model,
        setting,
        from,
        to,
        refusal = %why,
        "the endpoint refused the request's {setting} `{from}`: sending `{to}` for the rest of the run"
    );
    metrics::counter!(tm::LLM_FALLBACKS, "model" => model.to_string(), "setting" => setting, "from" => from, "to" => to)
        .increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_as_written_and_refuse_anything_else() {
        for m in ["auto", "json_schema", "json_object", "prompt"] {
            assert_eq!(m.parse::<StructuredMode>().unwrap().as_str(), m);
        }
        for t in ["both", "max_tokens", "max_completion_tokens"] {
            assert_eq!(t.parse::<TokenLimit>().unwrap().as_str(), t);
        }
        let e = "json".parse::<StructuredMode>().unwrap_err();
        assert!(e.contains("json_schema, json_object or prompt"), "{e}");
        assert!("max".parse::<TokenLimit>().is_err());
    }

    #[test]
    fn auto_steps_down_once_per_refusal_and_stops_at_the_prompt() {
        let l = Learnt::new(StructuredMode::Auto, TokenLimit::Both);
        assert_eq!(l.structured(), StructuredMode::JsonSchema);
        assert!(l.structured_refused(StructuredMode::JsonSchema, "m", "500"));
        assert_eq!(l.structured(), StructuredMode::JsonObject);
        // A call that was in flight with json_schema meets the refusal too: it resends, the mode stays.
        assert!(l.structured_refused(StructuredMode::JsonSchema, "m", "500"));
        assert_eq!(l.structured(), StructuredMode::JsonObject);
        assert!(l.structured_refused(StructuredMode::JsonObject, "m", "500"));
        assert_eq!(l.structured(), StructuredMode::Prompt);
        assert!(!l.structured_refused(StructuredMode::Prompt, "m", "500"));
    }

    #[test]
    fn a_configured_mode_is_never_changed() {
        let l = Learnt::new(StructuredMode::JsonSchema, TokenLimit::MaxTokens);
        assert!(!l.structured_refused(StructuredMode::JsonSchema, "m", "500"));
        assert_eq!(l.structured(), StructuredMode::JsonSchema);
        let wanted = TokenLimit::MaxCompletionTokens;
        assert!(!l.token_limit_refused(TokenLimit::MaxTokens, wanted, "m", "400"));
        assert_eq!(l.token_limit(), TokenLimit::MaxTokens);
    }

    #[test]
    fn both_limits_step_down_to_the_one_the_refusal_leaves() {
        let l = Learnt::new(StructuredMode::Auto, TokenLimit::Both);
        let wanted = TokenLimit::MaxCompletionTokens;
        assert!(l.token_limit_refused(TokenLimit::Both, wanted, "m", "400"));
        assert_eq!(l.token_limit(), TokenLimit::MaxCompletionTokens);
        // Refused again with the single field: that is final.
        assert!(!l.token_limit_refused(
            TokenLimit::MaxCompletionTokens,
            TokenLimit::MaxTokens,
            "m",
            "400"
        ));
    }
}
