//! Structured output: parsing a reply in the style its schema asks for, and the re-ask that follows a
//! reply that cannot be parsed.
//!
//! The rules of each style live in [`crate::schema`] and [`crate::sections`], shared with the
//! simulated model; this module decides what the gateway does with a reply that breaks them.

use serde_json::Value;

use crate::schema::parse_structured;
use crate::sections::{default_sections_format, parse_sections, SECTIONS_SCHEMA_MARKER};
use crate::types::{ChatRole, Message, OutputStyle, ReplyNotes, ResponseSchema, Usage};

/// What a re-ask adds to the sample index, so that the model samples afresh rather than repeating the
/// reply it could not use.
const RERUN_SAMPLE_STEP: u64 = 0x9E37_79B9_7F4A_7C15;

/// The value of a reply, parsed in the style its schema asks for.
pub(super) fn parse(content: &str, schema: &ResponseSchema) -> Result<Value, String> {
    match schema.style {
        OutputStyle::Json => parse_structured(content, &schema.schema),
        OutputStyle::Sections => parse_sections(content, &schema.schema),
    }
}

/// The messages of a re-ask: the original ones, the reply that could not be used and why, in the
/// schema's style.
pub(super) fn reask(
    schema: &ResponseSchema,
    original: &[Message],
    bad: &str,
    reason: &str,
) -> Vec<Message> {
    match schema.style {
        OutputStyle::Json => rerun_messages(original, bad, reason),
        OutputStyle::Sections => rerun_sections_messages(original, bad, reason, &schema.schema),
    }
}

/// What the provider met on the way to an answer, into the call's usage: each request the endpoint
/// refused for a setting it does not take (a structured-output or token-limit fallback followed) is a
/// retry of the call — the server saw a request, so the ledger has a $0 `retry` entry for it — but it
/// used none of the call's `max_retries`; a reply cut to `max_tokens` is counted in `truncated`.
pub(super) fn note_reply(notes: &ReplyNotes, usage: &mut Usage) {
    usage.retries += u64::from(notes.fallback_requests);
    usage.truncated += u64::from(notes.truncated);
}

/// The value of a reply that still does not parse when the re-asks have run out, where one can be
/// read without guessing, from a two-section reply that has no `### RESPONSE:` header at all (small
/// models often leave the headers out): a free-text one (a speech, an introduction, an answer) is taken
/// whole as its RESPONSE, as the MIRAGE reference implementation reads a reply it cannot split; a JSON
/// one is read from the reply as a whole when it holds an object that fits the schema. Its parse
/// failures stay counted. Nothing else has such a reading: a reply with headers but a bad RESPONSE, or
/// any JSON-style reply, fails.
pub(super) fn last_resort(content: &str, schema: &ResponseSchema) -> Option<Value> {
    let text = content.trim();
    if schema.style != OutputStyle::Sections
        || text.is_empty()
        || crate::sections::split_sections(text).is_ok()
    {
        return None;
    }
    if schema.schema.get("type").and_then(Value::as_str) == Some("string") {
        return Some(Value::String(text.to_string()));
    }
    parse_sections(&format!("### RESPONSE:\n{text}"), &schema.schema).ok()
}

/// The sample index of a re-ask.
pub(super) fn resample(sample: u64) -> u64 {
    sample.wrapping_add(RERUN_SAMPLE_STEP)
}

/// The re-ask: the bad output and what was wrong with it, then the original final instruction again so
/// that the question stays the last thing the model reads.
fn rerun_messages(original: &[Message], bad: &str, reason: &str) -> Vec<Message> {
    let mut msgs = original.to_vec();
    let last_paragraph = original
        .iter()
        .rev()
        .find(|m| m.role == ChatRole::User)
        .and_then(|m| {
            m.content
                .split("\n\n")
                .filter(|p| !p.trim().is_empty())
                .last()
        })
        .unwrap_or("")
        .to_string();
    msgs.push(Message {
        role: ChatRole::Assistant,
        content: bad.into(),
    });
    msgs.push(Message::user(format!(
        "Your previous reply could not be used ({reason}). Reply again with only a JSON object that follows the required schema.\n\n{last_paragraph}"
    )));
    msgs
}

/// The Sections re-ask. Asking for "only a JSON object" would contradict the format the prompt asked
/// for, so the re-ask restates the two sections: the bad output and what was wrong, then the original
/// question paragraph and the original format paragraph (in the prompt's own language), so that the
/// question stays last but one and the format, with its schema line, last. A prompt without a format
/// paragraph gets one written here from the schema.
fn rerun_sections_messages(
    original: &[Message],
    bad: &str,
    reason: &str,
    schema: &Value,
) -> Vec<Message> {
    let last_user = original
        .iter()
        .rev()
        .find(|m| m.role == ChatRole::User)
        .map(|m| &*m.content)
        .unwrap_or("");
    let paragraphs: Vec<&str> = last_user
        .split("\n\n")
        .filter(|p| !p.trim().is_empty())
        .collect();
    let is_format = |p: &&str| {
        p.lines()
            .any(|l| l.trim_start().starts_with(SECTIONS_SCHEMA_MARKER))
    };
    let format = paragraphs
        .iter()
        .rev()
        .find(|p| is_format(p))
        .map(|p| p.to_string())
        .unwrap_or_else(|| default_sections_format(schema));
    let question = paragraphs
        .iter()
        .rev()
        .find(|p| !is_format(p))
        .copied()
        .unwrap_or("");
    let mut msgs = original.to_vec();
    msgs.push(Message {
        role: ChatRole::Assistant,
        content: bad.into(),
    });
    msgs.push(Message::user(format!(
        "### Instructions\nYour previous reply could not be used ({reason}). Reply again in exactly two sections: `### THOUGHT:` with your reasoning, then `### RESPONSE:` with nothing but the response the format below asks for.\n\n{question}\n\n{format}"
    )));
    msgs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sections::sections_schema_line;
    use serde_json::json;

    #[test]
    fn only_free_text_without_its_sections_is_taken_whole_at_the_end() {
        let speech = ResponseSchema::sections("speech", json!({"type": "string"}));
        assert_eq!(
            last_resort("  I was on deck at ten.\n", &speech),
            Some(json!("I was on deck at ten."))
        );
        assert_eq!(last_resort("   ", &speech), None, "nothing to take");
        let vote = ResponseSchema::sections(
            "vote",
            json!({"type": "object", "properties": {"vote": {"type": "string"}}}),
        );
        assert_eq!(last_resort("Ada", &vote), None, "a vote is not guessed");
        assert_eq!(
            last_resort("I think {\"vote\": \"Ada\"} is right", &vote),
            Some(json!({"vote": "Ada"})),
            "a JSON object written without the headers is read"
        );
        assert_eq!(
            last_resort("### RESPONSE: nobody", &vote),
            None,
            "a reply with its headers is not read again"
        );
        let json_speech = ResponseSchema::json("speech", json!({"type": "string"}));
        assert_eq!(
            last_resort("Ada", &json_speech),
            None,
            "JSON replies keep failing"
        );
    }

    #[test]
    fn a_sections_re_ask_without_a_format_paragraph_writes_one() {
        let schema = json!({"type": "object", "properties": {"vote": {"type": "string", "enum": ["Ada", "Ben"]}}, "required": ["vote"]});
        let msgs = rerun_sections_messages(
            &[Message::user("Context.\n\nQuestion: who?")],
            "Ada",
            "no RESPONSE",
            &schema,
        );
        let last = &msgs[2].content;
        assert!(
            last.contains("Question: who?\n\n### Reply format"),
            "{last}"
        );
        assert!(last.ends_with(&sections_schema_line(&schema)), "{last}");
    }
}
