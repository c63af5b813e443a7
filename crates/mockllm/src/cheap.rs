//! `--replies cheap`: chat completions answered without reading the prompt.
//!
//! Why it exists: the simulated model tokenizes every prompt (tiktoken) and runs BM25 over it, so in a
//! throughput benchmark (`scripts/bench-sweep.sh`, docs/performance.md) the mock spent as much CPU per
//! request as the sweep it was there to measure (issue 32). A benchmark of sleuth needs a server whose
//! answers cost next to nothing but still let every game run to its end.
//!
//! What a cheap reply guarantees:
//! - it has the shape the request asks for: a JSON `response_format` schema is filled (objects with
//!   every listed and every `required` property, enums from their values, arrays between `minItems`
//!   and `maxItems` with distinct values when the items are an enum, numbers within
//!   `minimum..=maximum`, short strings within `minLength..=maxLength`, the first non-null branch of
//!   `anyOf`/`oneOf` and of a list of types, as the simulated model does); a request whose last user
//!   message carries a [`SECTIONS_SCHEMA_MARKER`] line is answered `### THOUGHT: …\n### RESPONSE: …`
//!   (free text for a string schema, the filled JSON otherwise), as the gateway's parser wants it;
//!   anything else gets one short sentence, cut to `max_tokens` by the estimate below;
//! - it is deterministic: choices come from a small RNG seeded with the XXH3 hash of the last user
//!   message and the request's `seed` (sample index), so the same request gets the same reply and
//!   different samples get different ones;
//! - usage is an estimate, never a tokenization: [`estimate`] (bytes / 4, rounded up) per text, and
//!   [`estimate_messages`] adds the framing `sleuth_llm::tokens::count_messages` adds (4 tokens a
//!   message, 3 to prime the reply); `cached_tokens` is 0. `--context-window` compares the same
//!   estimate with the window (`MockState::check_context`, given [`estimate_messages`]);
//! - log-probabilities, when asked for, list one entry per enum choice: the value chosen, with 0.6 of
//!   the probability, and every option in `top`, so PLAYER*'s reading of them agrees with the JSON.
//!
//! What it does not: the answers are not grounded in the prompt. A game against it is played to its
//! end — every call parsed, every vote cast — but not meaningfully; its outcomes measure nothing.

use std::str::FromStr;
use std::sync::Arc;

use serde_json::{Map, Value};
use sleuth_llm::{
    ChatRequest, ChatResponse, ChatRole, Message, OutputStyle, TokenLogprob, SECTIONS_SCHEMA_MARKER,
};
use xxhash_rust::xxh3::xxh3_64_with_seed;

#[cfg(test)]
mod tests;

/// How the mock writes chat completions (`--replies`).
///
/// The default is the simulated model, whose answers are grounded in the prompt and identical to the
/// in-process provider's, which is what tests of sleuth's behaviour need. `Cheap` exists for load
/// benchmarks, where the mock's own CPU would otherwise be half of what is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Replies {
    /// `sleuth_llm::simulated::respond`: tokenizes the prompt and answers from it.
    #[default]
    Simulated,
    /// This module: valid for the reply shape asked, without reading the prompt.
    Cheap,
}

/// A `--replies` value that is neither `simulated` nor `cheap`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown reply mode `{0}` (expected simulated or cheap)")]
pub struct UnknownReplies(pub String);

impl FromStr for Replies {
    type Err = UnknownReplies;
    fn from_str(s: &str) -> Result<Self, UnknownReplies> {
        match s {
            "simulated" => Ok(Replies::Simulated),
            "cheap" => Ok(Replies::Cheap),
            other => Err(UnknownReplies(other.to_string())),
        }
    }
}

/// Bytes per token of the estimate: cl100k averages about 4 bytes a token on English prose.
const BYTES_PER_TOKEN: u64 = 4;

/// The most items an array gets, whatever its `minItems` says: a request of a few bytes must not make
/// the mock build a reply of gigabytes.
const MAX_ITEMS: usize = 32;

/// Share of the probability the reported log-probabilities give the enum value chosen.
const CHOSEN_PROBABILITY: f64 = 0.6;

/// Sentences of free text, a string RESPONSE and a THOUGHT.
const SENTENCES: &[&str] = &[
    "I was elsewhere at the time, and I can say where.",
    "Someone at this table is not telling the whole truth.",
    "I heard footsteps in the corridor late that night.",
    "The timeline does not add up for everyone here.",
    "I have nothing to hide about that evening.",
    "Let us compare where each of us was after dinner.",
    "That detail points away from me, not towards me.",
    "I noticed a door left open that should have been shut.",
];

/// Short values of string fields.
const PHRASES: &[&str] = &[
    "the study",
    "after midnight",
    "a torn letter",
    "near the stairs",
    "not sure",
    "the cellar key",
    "a quarrel",
    "by the window",
];

/// Estimated tokens of a text: its bytes divided by [`BYTES_PER_TOKEN`], rounded up.
pub(crate) fn estimate(text: &str) -> u64 {
    u64::try_from(text.len())
        .unwrap_or(u64::MAX)
        .div_ceil(BYTES_PER_TOKEN)
}

/// Estimated prompt tokens of a chat: each message's [`estimate`] plus 4 tokens of framing, and 3 to
/// prime the reply — the framing of `sleuth_llm::tokens::count_messages`, with bytes for tokens.
pub(crate) fn estimate_messages(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| 4 + estimate(&m.content))
        .sum::<u64>()
        + 3
}

/// A cheap reply to `req`. Its `usage` is left `None`: the caller estimates it once faults and the
/// dialect have had their say on the content.
pub(crate) fn respond(req: &ChatRequest) -> ChatResponse {
    let last_user = req
        .messages
        .iter()
        .rfind(|m| m.role == ChatRole::User)
        .map_or("", |m| &*m.content);
    let mut w = Writer {
        rng: SplitMix64(xxh3_64_with_seed(last_user.as_bytes(), req.sample)),
        logprobs: Vec::new(),
    };
    let content = match (sections_schema(req, last_user), &req.schema) {
        (Some(schema), _) => {
            let thought = w.sentence();
            let response = if schema_type(&schema) == "string" {
                w.sentence().to_string()
            } else {
                w.fill(&schema).to_string()
            };
            format!("### THOUGHT: {thought}\n### RESPONSE: {response}")
        }
        (None, Some(schema)) => w.fill(&schema.schema).to_string(),
        (None, None) => {
            let sentence = w.sentence();
            let text = match fragment(last_user) {
                "" => sentence.to_string(),
                f => format!("On \"{f}\": {sentence}"),
            };
            let budget = u64::from(req.max_tokens.max(1)) * BYTES_PER_TOKEN;
            cut(&text, usize::try_from(budget).unwrap_or(usize::MAX)).to_string()
        }
    };
    ChatResponse {
        content,
        usage: None,
        logprobs: req.logprobs.then_some(w.logprobs),
        notes: Default::default(),
    }
}

/// The RESPONSE schema of a two-section request, found as the simulated model finds it: the request's
/// own schema when its style is Sections; for a request without a schema, the last line of the last
/// user message that starts with [`SECTIONS_SCHEMA_MARKER`], if its JSON is an object. Searched from
/// the end with `rfind`, so a long prompt is not split into lines.
fn sections_schema(req: &ChatRequest, last_user: &str) -> Option<Arc<Value>> {
    match &req.schema {
        Some(s) if s.style == OutputStyle::Sections => return Some(Arc::clone(&s.schema)),
        Some(_) => return None,
        None => {}
    }
    let mut end = last_user.len();
    while let Some(at) = last_user[..end].rfind(SECTIONS_SCHEMA_MARKER) {
        let line_start = last_user[..at].rfind('\n').map_or(0, |i| i + 1);
        if last_user[line_start..at].trim().is_empty() {
            let rest = &last_user[at + SECTIONS_SCHEMA_MARKER.len()..];
            let line = rest.split('\n').next().unwrap_or("");
            return serde_json::from_str::<Value>(line.trim())
                .ok()
                .filter(Value::is_object)
                .map(Arc::new);
        }
        end = at;
    }
    None
}

/// The last non-empty line of `text`, without Markdown markup, cut to 60 bytes: what a free-text
/// reply echoes, so that replies differ with the question at no cost.
fn fragment(text: &str) -> &str {
    let line = text
        .trim_end()
        .rsplit('\n')
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| c.is_whitespace() || matches!(c, '#' | '*' | '`' | '>' | '-'));
    cut(line, 60).trim_end()
}

/// `text` cut to at most `max` bytes at a character boundary, keeping at least one character.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    if at == 0 {
        at = text.chars().next().map_or(0, char::len_utf8);
    }
    &text[..at]
}

/// The `type` a schema is filled as: its named type (the first non-null one of a list; `null` only if
/// it names nothing else), `object` when it only lists properties, else `string` — as the simulated
/// model reads it.
fn schema_type(schema: &Value) -> &str {
    match schema.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(ts)) => {
            let mut named = ts.iter().filter_map(Value::as_str);
            match named.clone().find(|t| *t != "null") {
                Some(t) => t,
                None if named.next().is_some() => "null",
                None => "string",
            }
        }
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    }
}

/// The branch of an `anyOf`/`oneOf` a reply takes: the first that is not `null` (`None`: all are).
/// A schema without either is its own branch.
fn branch(mut schema: &Value) -> Option<&Value> {
    // Nested unions are followed a few levels down; deeper ones are filled as they stand.
    for _ in 0..8 {
        let Some(alts) = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array)
        else {
            return Some(schema);
        };
        schema = alts
            .iter()
            .find(|a| a.get("type").and_then(Value::as_str) != Some("null"))?;
    }
    Some(schema)
}

/// SplitMix64: a few arithmetic operations a draw, enough for choosing among a handful of values.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A draw in `0..n` (`n` > 0); the modulo bias is irrelevant at these sizes.
    fn below(&mut self, n: usize) -> usize {
        let n = u64::try_from(n.max(1)).unwrap_or(u64::MAX);
        usize::try_from(self.next() % n).unwrap_or(0)
    }

    /// A draw in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Fills schemas from the RNG, recording the log-probabilities of its enum choices.
struct Writer {
    rng: SplitMix64,
    logprobs: Vec<TokenLogprob>,
}

impl Writer {
    fn sentence(&mut self) -> &'static str {
        SENTENCES[self.rng.below(SENTENCES.len())]
    }

    fn fill(&mut self, schema: &Value) -> Value {
        let Some(schema) = branch(schema) else {
            return Value::Null;
        };
        if let Some(c) = schema.get("const") {
            return c.clone();
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array) {
            return self.choose(options);
        }
        match schema_type(schema) {
            "object" => self.object(schema),
            "array" => self.array(schema),
            "boolean" => Value::Bool(self.rng.next() & 1 == 1),
            "integer" => self.integer(schema),
            "number" => self.number(schema),
            "null" => Value::Null,
            _ => Value::String(self.string(schema)),
        }
    }

    /// Every listed property, then any `required` one not listed (as a short string).
    fn object(&mut self, schema: &Value) -> Value {
        let mut out = Map::new();
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                let v = self.fill(sub);
                out.insert(name.clone(), v);
            }
        }
        let required = schema.get("required").and_then(Value::as_array);
        for name in required.into_iter().flatten().filter_map(Value::as_str) {
            if !out.contains_key(name) {
                let v = Value::String(self.string(&Value::Null));
                out.insert(name.to_string(), v);
            }
        }
        Value::Object(out)
    }

    /// Between `minItems` (default 1, as the simulated model) and `maxItems` (default the larger of
    /// 3 and `minItems`), at most [`MAX_ITEMS`]; enum items distinct, other items distinct when
    /// `uniqueItems` asks (a few extra draws, then as many as were found).
    fn array(&mut self, schema: &Value) -> Value {
        let bound = |k: &str| {
            schema
                .get(k)
                .and_then(Value::as_u64)
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        };
        let min = bound("minItems").unwrap_or(1).min(MAX_ITEMS);
        let max = bound("maxItems")
            .unwrap_or(min.max(3))
            .clamp(min, MAX_ITEMS);
        let want = min + self.rng.below(max - min + 1);
        let sub = schema.get("items").unwrap_or(&Value::Null);
        if let Some(values) = branch(sub)
            .and_then(|s| s.get("enum"))
            .and_then(Value::as_array)
        {
            let mut left: Vec<Value> = values.clone();
            let mut items = Vec::with_capacity(want.min(left.len()));
            while items.len() < want && !left.is_empty() {
                let v = self.choose(&left);
                left.retain(|x| *x != v);
                items.push(v);
            }
            return Value::Array(items);
        }
        let unique = schema.get("uniqueItems").and_then(Value::as_bool) == Some(true);
        let mut items: Vec<Value> = Vec::with_capacity(want);
        for _ in 0..want * 4 {
            if items.len() == want {
                break;
            }
            let v = self.fill(sub);
            if !(unique && items.contains(&v)) {
                items.push(v);
            }
        }
        Value::Array(items)
    }

    /// Uniform in `minimum..=maximum` (defaults 0 and 10, as the simulated model's).
    fn integer(&mut self, schema: &Value) -> Value {
        let lo = schema.get("minimum").and_then(Value::as_f64).unwrap_or(0.0);
        let hi = schema
            .get("maximum")
            .and_then(Value::as_f64)
            .unwrap_or(10.0);
        let (lo, hi) = (lo.ceil() as i64, hi.floor() as i64);
        if hi <= lo {
            return Value::from(lo);
        }
        let span = usize::try_from(hi.abs_diff(lo)).unwrap_or(usize::MAX - 1);
        let step = i64::try_from(self.rng.below(span.saturating_add(1))).unwrap_or(0);
        Value::from(lo.saturating_add(step))
    }

    /// Uniform in `minimum..=maximum` (defaults 0 and 1), to three decimals.
    fn number(&mut self, schema: &Value) -> Value {
        let lo = schema.get("minimum").and_then(Value::as_f64).unwrap_or(0.0);
        let hi = schema.get("maximum").and_then(Value::as_f64).unwrap_or(1.0);
        if hi <= lo {
            return Value::from(lo);
        }
        let x = ((lo + (hi - lo) * self.rng.unit()) * 1000.0).round() / 1000.0;
        Value::from(x.clamp(lo, hi))
    }

    /// A short phrase, cut to `maxLength` characters and padded with dots to `minLength`.
    fn string(&mut self, schema: &Value) -> String {
        let len = |k: &str| {
            schema
                .get(k)
                .and_then(Value::as_u64)
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        };
        let phrase = PHRASES[self.rng.below(PHRASES.len())];
        let mut s: String = match len("maxLength") {
            Some(n) => phrase.chars().take(n).collect(),
            None => phrase.to_string(),
        };
        // Bounded like arrays: a schema cannot make the mock write megabytes.
        let min = len("minLength").unwrap_or(0).min(1024);
        while s.chars().count() < min {
            s.push('.');
        }
        s
    }

    /// One of `options`, uniformly; its log-probability recorded with every option's.
    fn choose(&mut self, options: &[Value]) -> Value {
        if options.is_empty() {
            return Value::Null;
        }
        let pick = self.rng.below(options.len());
        let n = options.len();
        let (chosen, other) = if n == 1 {
            (0.0, f64::NEG_INFINITY)
        } else {
            (
                CHOSEN_PROBABILITY.ln(),
                ((1.0 - CHOSEN_PROBABILITY) / (n - 1) as f64).ln(),
            )
        };
        let label = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        let top = options
            .iter()
            .enumerate()
            .map(|(i, o)| (label(o), if i == pick { chosen } else { other }))
            .collect();
        self.logprobs.push(TokenLogprob {
            token: label(&options[pick]),
            logprob: chosen,
            top,
        });
        options[pick].clone()
    }
}
