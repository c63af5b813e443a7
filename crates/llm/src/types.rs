//! The request and response vocabulary every provider speaks.
//!
//! Deliberately smaller than the OpenAI API: only what sleuth's agents, judges and generators use, so a
//! provider (simulated or HTTP) has one shape to implement and the cache key (issue 6) has one shape to hash.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
}

/// One chat message.
///
/// The content is shared, not owned: a character's system prompt (its whole script, 5–15k tokens)
/// goes out with every one of its calls, and while thousands of calls wait for an endpoint's slots
/// each would otherwise hold its own copy, and a second one in the request fitted to the model's
/// window. Cloning a message is a reference count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: ChatRole,
    pub content: Arc<str>,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<Arc<str>>) -> Self {
        Message {
            role: ChatRole::System,
            content: content.into(),
        }
    }
    /// A user message.
    pub fn user(content: impl Into<Arc<str>>) -> Self {
        Message {
            role: ChatRole::User,
            content: content.into(),
        }
    }
}

/// A schema the reply must follow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    /// Schema name sent to the provider; also names the call purpose in errors.
    pub name: String,
    /// The JSON schema (an object schema). Shared: a request is copied on its way (a model's alias, a
    /// prompt fitted to a window) and the schema is the same in every copy.
    pub schema: Arc<serde_json::Value>,
    /// How the reply carries it.
    #[serde(default)]
    pub style: OutputStyle,
}

impl ResponseSchema {
    /// A reply that is a JSON object (OpenAI structured outputs).
    pub fn json(name: &str, schema: serde_json::Value) -> ResponseSchema {
        ResponseSchema {
            name: name.to_string(),
            schema: shared_schema(schema),
            style: OutputStyle::Json,
        }
    }

    /// A `### THOUGHT:` / `### RESPONSE:` reply whose RESPONSE follows `schema` (MIRAGE).
    pub fn sections(name: &str, schema: serde_json::Value) -> ResponseSchema {
        ResponseSchema {
            name: name.to_string(),
            schema: shared_schema(schema),
            style: OutputStyle::Sections,
        }
    }
}

/// Bytes of schemas (as JSON text) [`shared_schema`] keeps per generation.
const SHARED_SCHEMA_BYTES: usize = 1 << 20;

/// One copy of a schema that many calls build alike (every game's multiple-choice answers ask for one
/// of the same letters), shared by all of them: an evaluation asks all of a game's questions at once,
/// and while thousands of them wait for an endpoint's slots each held its own copy (heaptrack, issue
/// 32). Keyed by the schema's JSON text, so only equal schemas share; bounded like the other memos.
fn shared_schema(schema: serde_json::Value) -> Arc<serde_json::Value> {
    static SCHEMAS: std::sync::LazyLock<sleuth_base::memo::Memo<Arc<serde_json::Value>>> =
        std::sync::LazyLock::new(|| sleuth_base::memo::Memo::new(SHARED_SCHEMA_BYTES));
    // Serialising a `Value` cannot fail (its keys are strings); were it to, the schema goes unshared.
    let Ok(text) = serde_json::to_vec(&schema) else {
        return Arc::new(schema);
    };
    let weight = text.len();
    SCHEMAS.get_or_insert_with(sleuth_base::memo::key(&text), move || {
        (Arc::new(schema), weight)
    })
}

/// How a structured reply is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputStyle {
    /// The whole reply is a JSON object; providers are asked for it with `response_format`.
    #[default]
    Json,
    /// Free text in two sections, `### THOUGHT:` then `### RESPONSE:`, as MIRAGE asks of every model. The
    /// format is described in the prompt, not enforced by the provider, so the Rerun module matters.
    Sections,
}

/// One chat completion request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub temperature: f32,
    pub top_p: f32,
    pub max_tokens: u32,
    /// Structured output schema, if the reply must be JSON.
    pub schema: Option<ResponseSchema>,
    /// Ask for token log-probabilities (PLAYER*'s option choice reads them).
    pub logprobs: bool,
    /// Derived from (game seed, agent, call number): makes sampling reproducible. Sent as `seed` over HTTP.
    pub sample: u64,
    /// Groups requests that share a long prefix (one character's calls) for the provider's prompt
    /// cache: sent as OpenAI's `prompt_cache_key` where the endpoint accepts it. It never changes the
    /// answer, so it is not part of the response cache's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
}

/// Tokens a call used, as the provider reported them (or as counted locally when it reported none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's prompt cache (billed at the cached rate).
    pub cached_tokens: u64,
}

impl std::ops::AddAssign for TokenUsage {
    fn add_assign(&mut self, o: Self) {
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.cached_tokens += o.cached_tokens;
    }
}

/// Log-probability of one output token, with its most likely alternatives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f64,
    #[serde(default)]
    pub top: Vec<(String, f64)>,
}

/// What a provider returns for one successful attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub content: String,
    /// `None` when the provider did not report usage; the gateway then counts tokens itself.
    pub usage: Option<TokenUsage>,
    pub logprobs: Option<Vec<TokenLogprob>>,
    /// What happened on the way to this answer that the call's usage should show.
    pub notes: ReplyNotes,
}

/// What the provider met on the way to an answer, beyond the answer itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplyNotes {
    /// Requests the endpoint refused for a setting it does not take (a `response_format`, a
    /// completion-limit field) before this answer, each followed by the setting's fallback
    /// (`llm/openai/dialect.rs`). Each was a request the server saw, so the gateway counts it as a
    /// retry of the call ($0, in `usage.retries` and the ledger), though no retry of `max_retries`.
    pub fallback_requests: u32,
    /// The reply was longer than the request's `max_tokens` (a server that ignored the limit) and was
    /// cut to it.
    pub truncated: bool,
}

/// The phase a call belongs to, for cost per phase (PLAYER* Table A5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Gameplay,
    Evaluation,
    Generation,
}

impl Phase {
    /// Label value in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Gameplay => "gameplay",
            Phase::Evaluation => "evaluation",
            Phase::Generation => "generation",
        }
    }
}

/// Who made a call and why. High-cardinality tags (game, agent) go to the transcript and usage records,
/// never to metric labels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallTags {
    pub game: String,
    pub agent: String,
    pub framework: String,
    pub phase: Phase,
    /// The call purpose (`introduce`, `answer`, `sv_check`, …): a small fixed set, so a metric label.
    pub purpose: String,
}

/// Accounting of one or more calls: what result.json's `usage` and each transcript event carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    pub cost_usd: f64,
    pub retries: u64,
    pub parse_failures: u64,
    /// Replies cut to their `max_tokens` because the server sent more (left out of JSON when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated: u64,
    /// Of the prompt tokens, those a provider's prefix cache could have served (OpenAI's rule, counted
    /// by the gateway's prefix tracker). Set on a game's result only, never on a transcript event: which
    /// of the calls that run together finds a shared prefix first depends on their order, the game's
    /// total does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacheable_prompt_tokens: Option<u64>,
    /// `cacheable_prompt_tokens` over the prompt tokens as the tracker counted them; set with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacheable_share: Option<f64>,
    /// What was left out of prompts to fit the model's context window (`llm/window.rs`); left out of
    /// JSON when nothing was.
    #[serde(default, skip_serializing_if = "Shortening::is_empty")]
    pub shortened: Shortening,
    /// Bytes of text the tokenizer read for the game's calls (`tokens::metered`): what the process's
    /// memo of token ids did not hold yet. Set on a game's result only; it depends on what the process
    /// tokenized before (a second game of the same script reads little), so it is a measure of the
    /// work done, not of the game.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_tokenized: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// True when no call was made.
    pub fn is_empty(&self) -> bool {
        self.calls == 0 && self.retries == 0 && self.parse_failures == 0
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Self) {
        self.calls += o.calls;
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.cached_tokens += o.cached_tokens;
        self.cost_usd += o.cost_usd;
        self.retries += o.retries;
        self.parse_failures += o.parse_failures;
        self.truncated += o.truncated;
        self.shortened += o.shortened;
        self.cacheable_prompt_tokens =
            match (self.cacheable_prompt_tokens, o.cacheable_prompt_tokens) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            };
        self.bytes_tokenized = match (self.bytes_tokenized, o.bytes_tokenized) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        // A share is not additive: it survives a sum only where one side has none.
        self.cacheable_share = match (self.cacheable_share, o.cacheable_share) {
            (Some(x), None) | (None, Some(x)) => Some(x),
            _ => None,
        };
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        let mut u = Usage::default();
        for x in iter {
            u += x;
        }
        u
    }
}

/// What was left out of prompts to fit a window: per call, and summed over a game in `result.json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shortening {
    /// Calls whose prompt was shortened.
    pub calls: u32,
    /// Lines of dialogue left out.
    pub dialogue: u32,
    /// Memory chunks left out.
    pub recalled: u32,
    /// Calls that were sent the character's script summary in place of the script.
    pub script_summaries: u32,
    /// Prompt tokens (cl100k) the shortening saved.
    pub tokens: u64,
}

impl Shortening {
    pub fn is_empty(&self) -> bool {
        *self == Shortening::default()
    }
}

impl std::ops::AddAssign for Shortening {
    fn add_assign(&mut self, o: Self) {
        self.calls += o.calls;
        self.dialogue += o.dialogue;
        self.recalled += o.recalled;
        self.script_summaries += o.script_summaries;
        self.tokens += o.tokens;
    }
}

/// Who a gateway handle calls for: the sweep, the run and the arm of a game. Attached to the handle a
/// game gets ([`crate::Gateway::scoped`]), so agents and judges need not know about sweeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallScope {
    pub sweep: String,
    pub run: String,
    pub arm: String,
}

impl CallScope {
    /// The ledger entry of one call, under a fresh random name (so that a write repeated after a
    /// lost answer records it once).
    pub fn entry(
        &self,
        tags: &CallTags,
        model: &str,
        source: sleuth_store::CallSource,
        tokens: TokenUsage,
        cost_usd: f64,
        key: Option<&[u8; 32]>,
    ) -> sleuth_store::LedgerEntry {
        sleuth_store::LedgerEntry {
            run: self.run.clone(),
            sweep: self.sweep.clone(),
            game: tags.game.clone(),
            arm: self.arm.clone(),
            model: model.to_string(),
            phase: tags.phase.as_str().to_string(),
            framework: tags.framework.clone(),
            purpose: tags.purpose.clone(),
            source,
            prompt_tokens: tokens.prompt_tokens,
            completion_tokens: tokens.completion_tokens,
            cached_tokens: tokens.cached_tokens,
            cost_usd,
            key: key.map(hex::encode),
            latency_ms: None,
            retries: 0,
            id: Some(format!("{:016x}", rand::random::<u64>())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_built_alike_share_one_copy_and_others_keep_their_own() {
        let letters = |n: usize| -> Vec<String> { (0..n).map(|i| format!("{i}")).collect() };
        let shape = |n: usize| {
            json!({"type": "object", "properties": {"answer": {"type": "string", "enum": letters(n)}},
                   "required": ["answer"]})
        };
        let a = ResponseSchema::json("answer_choice", shape(4));
        let b = ResponseSchema::json("answer_choice", shape(4));
        let c = ResponseSchema::sections("answer_choice", shape(5));
        assert!(Arc::ptr_eq(&a.schema, &b.schema), "equal schemas share");
        assert!(
            !Arc::ptr_eq(&a.schema, &c.schema),
            "a different schema is its own"
        );
        assert_eq!(*c.schema, shape(5), "and says what it was built from");
        assert_eq!(c.style, OutputStyle::Sections);
    }
}
