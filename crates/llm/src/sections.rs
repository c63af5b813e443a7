//! The two-section reply format (MIRAGE's `### THOUGHT:` / `### RESPONSE:`): the schema line prompts
//! carry, splitting a reply into its sections and parsing the RESPONSE against its schema.
//!
//! The gateway parses this format, the simulated model writes it and agents build their format
//! paragraph from it; it lives on its own so that none of them imports another for it.

use serde_json::Value;

use super::schema::{check_bounds, parse_structured, schema_type};

/// The fixed marker of the line that carries the RESPONSE's JSON schema in a Sections prompt. It is
/// ASCII and the same in every language, so that a model served over HTTP (where no schema travels with
/// the request) can still find the schema — the simulated model reads it — and so that the re-ask can
/// find the format paragraph it must restate.
pub const SECTIONS_SCHEMA_MARKER: &str = "RESPONSE JSON schema:";

/// The schema line a Sections prompt ends with: the marker, then the schema as one line of JSON.
pub fn sections_schema_line(schema: &Value) -> String {
    format!("{SECTIONS_SCHEMA_MARKER} {schema}")
}

/// A format paragraph in English, for prompts that carry none.
pub(crate) fn default_sections_format(schema: &Value) -> String {
    let what = if schema_type(schema) == "string" {
        "the text itself"
    } else {
        "one JSON object that follows the schema below"
    };
    format!(
        "### Reply format\nWrite `### THOUGHT:` followed by your reasoning, then `### RESPONSE:` followed by {what}.\n{}",
        sections_schema_line(schema)
    )
}

/// A reply split into its two sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sections {
    /// The reasoning; empty when the reply has no THOUGHT header.
    pub thought: String,
    /// Everything after the RESPONSE header.
    pub response: String,
}

/// Finds the headers of a `### THOUGHT:` / `### RESPONSE:` reply. Lenient in what models actually write:
/// any number of `#`, bold markers, any letter case, an ASCII or a full-width colon (Chinese replies use
/// `：`), and both sections on one line (the paper's own example). A word "response" inside the thought is
/// not a header: a header is at a line start or after `#`/`*`, and is followed by a colon.
pub fn split_sections(content: &str) -> Result<Sections, String> {
    let response = find_header(content, "response")
        .ok_or_else(|| "the reply has no `### RESPONSE:` section".to_string())?;
    let body = content[response.1..].trim();
    let thought = match find_header(&content[..response.0], "thought") {
        Some((_, end)) => content[end..response.0].trim(),
        None => "",
    };
    Ok(Sections {
        thought: thought.to_string(),
        response: body.to_string(),
    })
}

/// `(start, end)` of the first header `word` in `content`: start of its leading markup, end after the
/// colon.
fn find_header(content: &str, word: &str) -> Option<(usize, usize)> {
    let lower = content.to_lowercase();
    // Lower-casing can change byte lengths outside ASCII; fall back to an exact-case search then.
    let hay = if lower.len() == content.len() {
        lower.as_str()
    } else {
        content
    };
    let mut from = 0;
    while let Some(rel) = find_word(&hay[from..], word) {
        let at = from + rel;
        from = at + word.len();
        let before = &content[..at];
        let prefix = before.trim_end_matches([' ', '*', '\t']);
        let marked = prefix.ends_with('#');
        let line_start = prefix.is_empty() || prefix.ends_with('\n');
        if !(marked || line_start) {
            continue;
        }
        let after = &content[at + word.len()..];
        let rest = after.trim_start_matches([' ', '*', '\t']);
        let colon = if rest.starts_with(':') {
            1
        } else if rest.starts_with('：') {
            '：'.len_utf8()
        } else {
            continue;
        };
        let end = content.len() - rest.len() + colon;
        // Include trailing bold markers after the colon (`**RESPONSE:**`).
        let end = end + content[end..].len() - content[end..].trim_start_matches('*').len();
        let start = prefix.trim_end_matches('#').len();
        return Some((start, end));
    }
    None
}

/// Case-insensitive search of an ASCII word, in a haystack already lower-cased when possible.
fn find_word(hay: &str, word: &str) -> Option<usize> {
    hay.find(word)
        .or_else(|| hay.find(word.to_uppercase().as_str()))
}

/// Parses a Sections reply: the RESPONSE section is the value, checked against `schema`. A string
/// schema takes the section's text as it is (a speech, an answer, a summary); any other schema wants
/// JSON, tolerating a code fence and text around the object. Numeric bounds are checked too: nothing
/// but the prompt enforces this format, so the gateway checks all that agents rely on.
pub fn parse_sections(content: &str, schema: &Value) -> Result<Value, String> {
    let sections = split_sections(content)?;
    let body = sections.response.as_str();
    if body.is_empty() {
        return Err("the RESPONSE section is empty".into());
    }
    if schema_type(schema) == "string" {
        return Ok(Value::String(body.to_string()));
    }
    let v = match parse_structured(body, schema) {
        Ok(v) => v,
        Err(first) => {
            let (Some(a), Some(b)) = (body.find('{'), body.rfind('}')) else {
                return Err(format!("RESPONSE is {first}"));
            };
            if b < a {
                return Err(format!("RESPONSE is {first}"));
            }
            parse_structured(&body[a..=b], schema).map_err(|e| format!("RESPONSE: {e}"))?
        }
    };
    check_bounds(&v, schema, "$").map_err(|e| format!("RESPONSE: {e}"))?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vote_schema() -> Value {
        json!({"type": "object", "properties": {"vote": {"type": "string", "enum": ["Ada", "Ben"]}, "confidence": {"type": "integer", "minimum": 0, "maximum": 2}}, "required": ["vote"]})
    }

    #[test]
    fn sections_are_parsed_into_the_response_value() {
        let reply = "### THOUGHT: Ada lied about 10 pm.\n### RESPONSE: {\"vote\": \"Ada\", \"confidence\": 2}";
        assert_eq!(
            parse_sections(reply, &vote_schema()),
            Ok(json!({"vote": "Ada", "confidence": 2}))
        );
        let s = split_sections(reply).expect("splits");
        assert_eq!(s.thought, "Ada lied about 10 pm.");
        // The paper's one-line example, bold headers, lower case and a fenced, commented object.
        let one_line = "### THOUGHT: hmm ### RESPONSE: {\"vote\": \"Ben\"}";
        assert_eq!(
            parse_sections(one_line, &vote_schema()),
            Ok(json!({"vote": "Ben"}))
        );
        let fenced = "**Thought:** the response of Ben was odd\n**Response:**\n```json\n{\"vote\": \"Ben\"}\n```\nThat is my vote.";
        assert_eq!(
            parse_sections(fenced, &vote_schema()),
            Ok(json!({"vote": "Ben"}))
        );
        assert_eq!(
            split_sections(fenced).expect("splits").thought,
            "the response of Ben was odd"
        );
        // A string schema takes the text as it is.
        let speech = "### THOUGHT: be brief\n### RESPONSE: I was on deck at ten.";
        assert_eq!(
            parse_sections(speech, &json!({"type": "string"})),
            Ok(json!("I was on deck at ten."))
        );
    }

    #[test]
    fn sections_without_a_response_or_against_the_schema_are_refused() {
        let no_response = "### THOUGHT: I think it is Ada. {\"vote\": \"Ada\"}";
        assert!(parse_sections(no_response, &vote_schema())
            .expect_err("no RESPONSE")
            .contains("RESPONSE"));
        let bad_enum = "### THOUGHT: x\n### RESPONSE: {\"vote\": \"Cy\"}";
        assert!(parse_sections(bad_enum, &vote_schema())
            .expect_err("not an option")
            .contains("expected one of"));
        let missing = "### THOUGHT: x\n### RESPONSE: {\"confidence\": 1}";
        assert!(parse_sections(missing, &vote_schema())
            .expect_err("vote missing")
            .contains("missing"));
        let out_of_range = "### THOUGHT: x\n### RESPONSE: {\"vote\": \"Ada\", \"confidence\": 7}";
        assert!(parse_sections(out_of_range, &vote_schema())
            .expect_err("above the maximum")
            .contains("maximum"));
        let not_json = "### THOUGHT: x\n### RESPONSE: Ada, obviously";
        assert!(parse_sections(not_json, &vote_schema())
            .expect_err("not JSON")
            .contains("not JSON"));
        let empty = "### THOUGHT: x\n### RESPONSE:   ";
        assert!(parse_sections(empty, &json!({"type": "string"})).is_err());
    }

    #[test]
    fn sections_accept_the_full_width_colon() {
        let reply = "### THOUGHT：阿达在十点说了谎。\n### RESPONSE：{\"vote\": \"Ada\"}";
        assert_eq!(
            parse_sections(reply, &vote_schema()),
            Ok(json!({"vote": "Ada"}))
        );
        assert_eq!(
            split_sections(reply).expect("splits").thought,
            "阿达在十点说了谎。"
        );
        let zh = "### 思考：无\n### RESPONSE： 我十点在甲板上。";
        assert_eq!(
            parse_sections(zh, &json!({"type": "string"})),
            Ok(json!("我十点在甲板上。"))
        );
    }
}
