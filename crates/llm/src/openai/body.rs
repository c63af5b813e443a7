//! The chat request as sent and the completion as read, written out here rather than taken from
//! async-openai's types: its `ResponseFormat` has no `schema` next to `json_object` (what llama.cpp
//! reads), and its response type is stricter than the servers sleuth talks to. The body goes through
//! async-openai's client all the same (`create_byot`), with its headers, base URL and errors.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::dialect::{StructuredMode, TokenLimit};
use crate::types::{ChatRequest, ChatRole, OutputStyle, ResponseSchema, TokenLogprob, TokenUsage};

/// The line that states a reply's JSON schema in the prompt (modes `json_object` and `prompt`): this
/// marker, then the schema as one line of JSON. `sleuth mock-llm` reads it, the way it reads the
/// Sections schema line, so that its answers do not depend on the mode.
pub const PROMPT_SCHEMA_MARKER: &str = "Reply JSON schema:";

/// The paragraph appended to the last user message when the schema travels in the prompt. Last, so
/// the stable prefix of the prompt (what providers cache) is untouched.
pub fn prompt_schema_paragraph(schema: &Value) -> String {
    format!(
        "### Reply format\nReply with one JSON object and nothing else. It must follow this JSON schema.\n{PROMPT_SCHEMA_MARKER} {schema}"
    )
}

/// One message as sent.
#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: std::borrow::Cow<'a, str>,
}

/// A chat completion request as sent.
#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    temperature: f32,
    top_p: f32,
    /// `seed` is deprecated by OpenAI but still honoured by most compatible servers (vLLM, Ollama,
    /// llama.cpp, mock-llm), and it is how the sample index reaches them.
    seed: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
    /// One key per character (`ChatRequest::cache_key`): OpenAI routes requests with the same key to
    /// the same prefix cache; servers that do not know the field ignore it (llama.cpp, vLLM).
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

/// The body of `req` with structured output asked for in `mode` (never `Auto`) and the completion
/// limit in the `limit` field(s).
///
/// Only JSON replies use `response_format`: a Sections reply is free text whose format the prompt
/// describes, and asking the endpoint for a JSON object would forbid its THOUGHT section.
pub(super) fn chat_body(req: &ChatRequest, mode: StructuredMode, limit: TokenLimit) -> Body<'_> {
    let json_schema = req.schema.as_ref().filter(|s| s.style == OutputStyle::Json);
    let in_prompt =
        json_schema.filter(|_| matches!(mode, StructuredMode::JsonObject | StructuredMode::Prompt));
    let last_user = req.messages.iter().rposition(|m| m.role == ChatRole::User);
    let mut messages: Vec<WireMessage<'_>> = req
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| WireMessage {
            role: role_name(m.role),
            content: match in_prompt {
                Some(s) if Some(i) == last_user => {
                    format!("{}\n\n{}", m.content, prompt_schema_paragraph(&s.schema)).into()
                }
                _ => (&*m.content).into(),
            },
        })
        .collect();
    if let (Some(s), None) = (in_prompt, last_user) {
        messages.push(WireMessage {
            role: "user",
            content: prompt_schema_paragraph(&s.schema).into(),
        });
    }
    Body {
        model: &req.model,
        messages,
        temperature: req.temperature,
        top_p: req.top_p,
        seed: (req.sample & (i64::MAX as u64)) as i64,
        max_tokens: limit.sends_max_tokens().then_some(req.max_tokens),
        max_completion_tokens: limit
            .sends_max_completion_tokens()
            .then_some(req.max_tokens),
        logprobs: req.logprobs.then_some(true),
        top_logprobs: req.logprobs.then_some(5),
        response_format: json_schema.and_then(|s| response_format(s, mode)),
        prompt_cache_key: req.cache_key.as_deref(),
    }
}

fn role_name(role: ChatRole) -> &'static str {
    match role {
        ChatRole::System => "system",
        ChatRole::User => "user",
        ChatRole::Assistant => "assistant",
    }
}

/// The `response_format` of `mode`, if it sends one.
fn response_format(s: &ResponseSchema, mode: StructuredMode) -> Option<Value> {
    match mode {
        StructuredMode::Auto | StructuredMode::JsonSchema => Some(json!({
            "type": "json_schema",
            "json_schema": {"name": s.name, "schema": s.schema, "strict": true},
        })),
        StructuredMode::JsonObject => Some(json!({"type": "json_object", "schema": s.schema})),
        StructuredMode::Prompt => None,
    }
}

/// A chat completion as read: only what sleuth uses, every field optional where some server leaves
/// it out.
#[derive(Debug, Deserialize)]
pub(super) struct Completion {
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Choice {
    #[serde(default)]
    pub message: Option<ChoiceMessage>,
    #[serde(default)]
    pub logprobs: Option<ChoiceLogprobs>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ChoiceMessage {
    #[serde(default)]
    pub content: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ChoiceLogprobs {
    #[serde(default)]
    content: Option<Vec<WireLogprob>>,
}

#[derive(Debug, Deserialize)]
struct WireLogprob {
    token: String,
    logprob: f64,
    #[serde(default)]
    top_logprobs: Vec<WireTop>,
}

#[derive(Debug, Deserialize)]
struct WireTop {
    token: String,
    logprob: f64,
}

impl WireUsage {
    pub(super) fn tokens(&self) -> TokenUsage {
        TokenUsage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            cached_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
        }
    }
}

impl ChoiceLogprobs {
    pub(super) fn tokens(self) -> Option<Vec<TokenLogprob>> {
        self.content.map(|toks| {
            toks.into_iter()
                .map(|t| TokenLogprob {
                    token: t.token,
                    logprob: t.logprob,
                    top: t
                        .top_logprobs
                        .into_iter()
                        .map(|x| (x.token, x.logprob))
                        .collect(),
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;

    fn request(schema: Option<ResponseSchema>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![Message::system("sys"), Message::user("Context.\n\nWho?")],
            temperature: 0.8,
            top_p: 1.0,
            max_tokens: 40,
            schema,
            logprobs: false,
            sample: 3,
            cache_key: None,
        }
    }

    fn vote() -> Value {
        json!({"type": "object", "properties": {"vote": {"type": "string"}}, "required": ["vote"]})
    }

    fn sent(req: &ChatRequest, mode: StructuredMode, limit: TokenLimit) -> Value {
        serde_json::to_value(chat_body(req, mode, limit)).unwrap()
    }

    #[test]
    fn both_limit_fields_by_default_and_one_when_asked() {
        let req = request(None);
        let b = sent(&req, StructuredMode::JsonSchema, TokenLimit::Both);
        assert_eq!(b["max_tokens"], 40);
        assert_eq!(b["max_completion_tokens"], 40);
        let b = sent(&req, StructuredMode::JsonSchema, TokenLimit::MaxTokens);
        assert_eq!(b["max_tokens"], 40);
        assert!(b.get("max_completion_tokens").is_none());
        let b = sent(
            &req,
            StructuredMode::JsonSchema,
            TokenLimit::MaxCompletionTokens,
        );
        assert!(b.get("max_tokens").is_none());
        assert_eq!(b["max_completion_tokens"], 40);
        // f32 settings go out as written, not widened to 0.800000011920929.
        let text =
            serde_json::to_string(&chat_body(&req, StructuredMode::Prompt, TokenLimit::Both))
                .unwrap();
        assert!(text.contains("\"temperature\":0.8,"), "{text}");
        assert_eq!(b["seed"], 3);
        assert!(b.get("response_format").is_none(), "no schema, no format");
    }

    #[test]
    fn each_mode_asks_for_the_schema_its_own_way() {
        let req = request(Some(ResponseSchema::json("vote", vote())));
        let b = sent(&req, StructuredMode::JsonSchema, TokenLimit::Both);
        assert_eq!(b["response_format"]["type"], "json_schema");
        assert_eq!(b["response_format"]["json_schema"]["name"], "vote");
        assert_eq!(b["response_format"]["json_schema"]["schema"], vote());
        assert_eq!(b["messages"][1]["content"], "Context.\n\nWho?");

        let b = sent(&req, StructuredMode::JsonObject, TokenLimit::Both);
        assert_eq!(
            b["response_format"],
            json!({"type": "json_object", "schema": vote()})
        );
        let last = b["messages"][1]["content"].as_str().unwrap();
        assert!(
            last.starts_with("Context.\n\nWho?\n\n### Reply format\n"),
            "{last}"
        );
        assert!(
            last.ends_with(&format!("{PROMPT_SCHEMA_MARKER} {}", vote())),
            "{last}"
        );
        assert_eq!(
            b["messages"][0]["content"], "sys",
            "only the last user message changes"
        );

        let b = sent(&req, StructuredMode::Prompt, TokenLimit::Both);
        assert!(b.get("response_format").is_none());
        assert!(b["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains(PROMPT_SCHEMA_MARKER));
    }

    #[test]
    fn sections_requests_carry_no_response_format_in_any_mode() {
        let req = request(Some(ResponseSchema::sections("vote", vote())));
        for mode in [
            StructuredMode::JsonSchema,
            StructuredMode::JsonObject,
            StructuredMode::Prompt,
        ] {
            let b = sent(&req, mode, TokenLimit::Both);
            assert!(b.get("response_format").is_none(), "{mode}");
            assert_eq!(b["messages"][1]["content"], "Context.\n\nWho?", "{mode}");
        }
    }

    #[test]
    fn lenient_completions_read() {
        let c: Completion = serde_json::from_value(json!({
            "choices": [{"message": {"content": "hi"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1},
        }))
        .unwrap();
        assert_eq!(c.usage.unwrap().tokens().prompt_tokens, 5);
        let c: Completion = serde_json::from_value(json!({"choices": []})).unwrap();
        assert!(c.choices.is_empty() && c.usage.is_none());
    }
}
