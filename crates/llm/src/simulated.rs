//! The simulated model: a deterministic, extractive, schema-aware responder (ARCHITECTURE.md decision 4).
//!
//! It reads nothing but the request. The prompt is split into a *query* (the last paragraph of the last
//! user message) and a *context* (everything else), and the context into sections at Markdown headers.
//! Free text is answered with the context sentences that score highest against the query (BM25 on
//! [`sleuth_base::text::terms`], so Chinese works by characters), up to `max_tokens`. A JSON schema is filled
//! field by field: enums by the value the query-relevant context talks about most, strings by extraction,
//! booleans and numbers from how completely the best sentence covers the query, arrays up to their limits.
//! Earlier enum choices condition later fields, the way an autoregressive model's do.
//!
//! Two header conventions let prompts mark sections: a header containing "do not reveal" (or 不可透露)
//! marks material the model may reason with but never quote; a header containing "rules", "instructions"
//! or "format" (规则, 要求, 格式) marks instructions, which are neither quoted nor scored. See
//! `docs/simulated-model.md`.
//!
//! Sampling at temperature > 0 adds Gumbel noise seeded from a hash of the request and its sample index,
//! so the same request always gets the same answer and different sample indices explore alternatives.
//!
//! A request for the two-section format (MIRAGE's `### THOUGHT:` / `### RESPONSE:`) is answered in that
//! form. It is recognised by its schema's style or — over HTTP, where no schema travels with a request
//! that asks for sections in the prompt — by the schema line the prompt's format paragraph carries
//! ([`SECTIONS_SCHEMA_MARKER`]). The format paragraph is instructions, not the question: it is removed
//! before the prompt is read, so the query is the paragraph before it.
//!
//! A name like `sim-1:0.3` selects a weaker model ([`skill`]): each of its decisions may lapse into a
//! random one. The default name answers as described above.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::tokens;
use super::types::{ChatRequest, ChatResponse, ChatRole, OutputStyle, TokenLogprob, TokenUsage};

/// The two-section reply format: the gateway parses it, this model writes it, agents build their format
/// paragraph with [`sections_schema_line`] and read the THOUGHT with [`split_sections`].
pub use super::sections::{
    parse_sections, sections_schema_line, split_sections, Sections, SECTIONS_SCHEMA_MARKER,
};
use sleuth_base::text::{self, Bm25};

mod read;
mod skill;
use read::{Prompt, Sentence};
pub use skill::skill;
use skill::Lapses;

/// The model name the simulated provider answers to by default.
pub const MODEL: &str = "sim-1";

/// Share of the best sentence's score a sentence needs to be quoted at all.
const RELEVANCE_CUTOFF: f64 = 0.35;

/// A quoted sentence must add at least two terms the query lacks, or this share of its terms: a sentence
/// made of the question's own words restates the question instead of answering it.
const MIN_NOVELTY: f64 = 0.35;

/// Answers one request. Pure: the same request (including its sample index) gives the same response.
pub fn respond(req: &ChatRequest) -> ChatResponse {
    let sections = sections_schema(req);
    let without_format;
    let read = match sections {
        Some(_) => {
            without_format = strip_format(req);
            &without_format
        }
        None => req,
    };
    let prompt = Prompt::parse(read);
    let seed = request_seed(req);
    let mut rng = ChaCha8Rng::from_seed(seed);
    let mut ctx = Ctx {
        prompt: &prompt,
        index: &prompt.index,
        rng: &mut rng,
        temperature: req.temperature.max(0.0) as f64,
        logprobs: Vec::new(),
        lapses: Lapses::of(&req.model, &seed),
    };
    let budget = u64::from(req.max_tokens.max(1));
    let content = match (&sections, &req.schema) {
        (Some(schema), _) => ctx.sections(schema, budget),
        (None, Some(schema)) => {
            let mut conditioning = String::new();
            let v = ctx.fill(&schema.schema, "", 0, &mut conditioning);
            serde_json::to_string(&v).unwrap_or_else(|_| "{}".to_string())
        }
        (None, None) => ctx.free_text(&prompt.query, budget),
    };
    let logprobs = if req.logprobs {
        Some(std::mem::take(&mut ctx.logprobs))
    } else {
        None
    };
    let usage = TokenUsage {
        prompt_tokens: tokens::count_messages(&req.messages),
        completion_tokens: tokens::count(&content),
        cached_tokens: 0,
    };
    ChatResponse {
        content,
        usage: Some(usage),
        logprobs,
        notes: Default::default(),
    }
}

/// The RESPONSE schema of a request that asks for sections: its own schema when its style says so; for
/// a request with no schema, the last schema line of its last user message.
fn sections_schema(req: &ChatRequest) -> Option<Arc<Value>> {
    match &req.schema {
        Some(s) if s.style == OutputStyle::Sections => Some(Arc::clone(&s.schema)),
        Some(_) => None,
        None => {
            let last = req.messages.iter().rfind(|m| m.role == ChatRole::User)?;
            last.content
                .lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix(SECTIONS_SCHEMA_MARKER))
                .and_then(|json| serde_json::from_str::<Value>(json.trim()).ok())
                .filter(|v| v.is_object())
                .map(Arc::new)
        }
    }
}

/// The request with the format paragraphs (those carrying a schema line) removed from its last user
/// message.
fn strip_format(req: &ChatRequest) -> ChatRequest {
    let mut out = req.clone();
    if let Some(m) = out.messages.iter_mut().rfind(|m| m.role == ChatRole::User) {
        m.content = m
            .content
            .split("\n\n")
            .filter(|p| {
                !p.lines()
                    .any(|l| l.trim_start().starts_with(SECTIONS_SCHEMA_MARKER))
            })
            .collect::<Vec<_>>()
            .join("\n\n")
            .into();
    }
    out
}

fn request_seed(req: &ChatRequest) -> [u8; 32] {
    let mut h = Sha256::new();
    for m in &req.messages {
        h.update([m.role as u8]);
        h.update(m.content.as_bytes());
        h.update([0]);
    }
    // A Sections schema does not travel over HTTP (its schema line in the prompt does, and is hashed
    // with the messages); leaving it out keeps answers identical by either road.
    if let Some(s) = req.schema.as_ref().filter(|s| s.style == OutputStyle::Json) {
        h.update(s.schema.to_string().as_bytes());
    }
    h.update(req.sample.to_le_bytes());
    h.finalize().into()
}

struct Ctx<'a> {
    prompt: &'a Prompt,
    index: &'a Bm25,
    rng: &'a mut ChaCha8Rng,
    temperature: f64,
    logprobs: Vec<TokenLogprob>,
    /// A weaker model's lapses (`None` at full skill: no draw is made).
    lapses: Option<Lapses>,
}

impl Ctx<'_> {
    /// When the next decision lapses, a uniform draw from [0, 1) to make it with; `None` when it does
    /// not (always at full skill).
    fn lapse(&mut self) -> Option<f64> {
        let l = self.lapses.as_mut()?;
        l.lapse().then(|| l.unit())
    }

    /// A lapse's sentences: up to `k` of the whole context, secrets included, in random order.
    fn stray(&mut self, k: usize) -> Vec<usize> {
        let n = self.prompt.sentences.len();
        self.lapses.as_mut().map_or(Vec::new(), |l| l.pick(n, k))
    }

    fn gumbel(&mut self) -> f64 {
        let u: f64 = self.rng.gen_range(1e-12..1.0);
        -(-u.ln()).ln()
    }

    /// Quotable sentences ranked by noisy relevance to `query`. Sentences scoring under a third of the
    /// best are dropped: an answer stays on topic instead of padding itself with a shared word or two.
    fn ranked(&mut self, query: &str) -> Vec<usize> {
        let query_terms: std::collections::HashSet<String> =
            text::terms(query).into_iter().collect();
        let novel = |s: &Sentence| {
            let t = &s.read.quote_counts;
            let len: u32 = t.values().sum();
            let new: u32 = t
                .iter()
                .filter(|(x, _)| !query_terms.contains(*x))
                .map(|(_, n)| n)
                .sum();
            new >= 2 || (len > 0 && f64::from(new) / f64::from(len) >= MIN_NOVELTY)
        };
        let mut scores = self.index.scores(query);
        for (i, s) in self.prompt.sentences.iter().enumerate() {
            // Novelty only matters for a sentence that scored: most score nothing.
            if scores[i] != 0.0 && (!s.quotable || !novel(s)) {
                scores[i] = 0.0;
            }
        }
        let max = scores.iter().cloned().fold(0.0_f64, f64::max);
        if max <= 0.0 {
            return Vec::new();
        }
        let mut noisy: Vec<(usize, f64)> = Vec::new();
        for (i, s) in scores.iter().enumerate() {
            if *s > 0.0 && *s >= RELEVANCE_CUTOFF * max {
                let noise = self.temperature * 0.15 * max * self.gumbel();
                noisy.push((i, s + noise));
            }
        }
        noisy.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        noisy.into_iter().map(|(i, _)| i).collect()
    }

    fn dont_know(&self) -> String {
        if self.prompt.chinese {
            "我不知道。".into()
        } else {
            "I don't know.".into()
        }
    }

    /// The best-scoring sentences, in rank order, up to the token budget.
    fn free_text(&mut self, query: &str, budget: u64) -> String {
        let ranked = if self.lapse().is_some() {
            self.stray(2)
        } else {
            self.ranked(query)
        };
        let sep = if self.prompt.chinese { "" } else { " " };
        let mut out = String::new();
        let mut used = 0;
        for i in ranked {
            let s = &self.prompt.sentences[i].read.quote;
            let n = tokens::count(s);
            if used == 0 && n > budget {
                return tokens::truncate(s, budget);
            }
            if used + n > budget {
                continue;
            }
            if !out.is_empty() {
                out.push_str(sep);
            }
            out.push_str(s);
            used += n;
        }
        if out.is_empty() {
            self.dont_know()
        } else {
            out
        }
    }

    /// A two-section reply: a short THOUGHT (the context most relevant to the question), then the
    /// RESPONSE — free text for a string schema, else the schema filled as JSON. Chinese prompts get the
    /// full-width colon a Chinese writer would use.
    fn sections(&mut self, schema: &Value, budget: u64) -> String {
        let query = self.prompt.query.clone();
        let thought = self.free_text(&query, (budget / 3).clamp(1, 60));
        let rest = budget.saturating_sub(tokens::count(&thought)).max(1);
        let response = if schema.get("type").and_then(Value::as_str) == Some("string") {
            self.free_text(&query, rest)
        } else {
            let mut conditioning = String::new();
            let v = self.fill(schema, "", 0, &mut conditioning);
            serde_json::to_string(&v).unwrap_or_else(|_| "{}".to_string())
        };
        let colon = if self.prompt.chinese { "：" } else { ": " };
        format!("### THOUGHT{colon}{thought}\n### RESPONSE{colon}{response}")
    }

    /// How completely the best sentence (quotable or not) covers the query, in [0, 1].
    fn strength(&self, query: &str) -> f64 {
        self.index.max_coverage(query)
    }

    fn fill(&mut self, schema: &Value, field: &str, item: usize, cond: &mut String) -> Value {
        let schema = match schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(|v| v.as_array())
        {
            Some(alts) => alts
                .iter()
                .find(|a| a.get("type") != Some(&Value::from("null")))
                .unwrap_or(schema),
            None => schema,
        };
        if let Some(options) = schema.get("enum").and_then(|e| e.as_array()) {
            return self.choose(options, field, cond);
        }
        let ty = match schema.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(|t| t.as_str())
                .find(|t| *t != "null")
                .unwrap_or("string"),
            _ if schema.get("properties").is_some() => "object",
            _ => "string",
        };
        let desc = schema
            .get("description")
            .and_then(|d| d.as_str())
            .unwrap_or("");
        let query = format!(
            "{} {} {} {}",
            self.prompt.query,
            cond,
            field.replace('_', " "),
            desc
        );
        match ty {
            "object" => {
                let mut out = Map::new();
                if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
                    for (name, sub) in props {
                        let v = self.fill(sub, name, item, cond);
                        out.insert(name.clone(), v);
                    }
                }
                Value::Object(out)
            }
            "array" => {
                let min = schema.get("minItems").and_then(|v| v.as_u64()).unwrap_or(1) as usize;
                let max = schema.get("maxItems").and_then(|v| v.as_u64()).unwrap_or(3) as usize;
                let want = 3.clamp(min, max.max(min));
                let sub = schema.get("items").cloned().unwrap_or(Value::Null);
                // Items from a closed set (option letters) are distinct, as a model choosing several
                // options writes each once: each is chosen among the values not chosen yet.
                if let Some(values) = sub.get("enum").and_then(|e| e.as_array()) {
                    let mut left = values.clone();
                    let mut items = Vec::new();
                    while items.len() < want && !left.is_empty() {
                        let v = self.choose(&left, field, cond);
                        left.retain(|x| *x != v);
                        items.push(v);
                    }
                    return Value::Array(items);
                }
                let items = (0..want)
                    .map(|i| self.fill(&sub, field, i, cond))
                    .collect::<Vec<_>>();
                let mut seen = std::collections::HashSet::new();
                let mut items: Vec<Value> = items
                    .into_iter()
                    .filter(|v| seen.insert(v.to_string()))
                    .collect();
                while items.len() < min {
                    items.push(self.fill(&sub, field, items.len(), cond));
                }
                Value::Array(items)
            }
            "boolean" => match self.lapse() {
                Some(u) => Value::Bool(u < 0.5),
                None => {
                    let noise = self.temperature * 0.1 * (self.rng.gen::<f64>() - 0.5);
                    Value::Bool(self.strength(&self.prompt.query.clone()) + noise >= 0.5)
                }
            },
            "integer" | "number" => {
                let lo = schema
                    .get("minimum")
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0);
                let hi = schema
                    .get("maximum")
                    .and_then(|v| v.as_f64())
                    .unwrap_or(if ty == "integer" { 10.0 } else { 1.0 });
                let x = lo + (hi - lo) * self.lapse().unwrap_or_else(|| self.strength(&query));
                if ty == "integer" {
                    Value::from(x.round() as i64)
                } else {
                    Value::from((x * 1000.0).round() / 1000.0)
                }
            }
            _ => {
                let ranked = if self.lapse().is_some() {
                    self.stray(1)
                } else {
                    self.ranked(&query)
                };
                let text = match ranked.get(item).or(ranked.first()) {
                    Some(&i) => self.prompt.sentences[i].read.quote.clone(),
                    None => self.dont_know(),
                };
                match schema.get("maxLength").and_then(|v| v.as_u64()) {
                    Some(n) => Value::String(text.chars().take(n as usize).collect()),
                    None => Value::String(text),
                }
            }
        }
    }

    /// Picks the enum value that the query-relevant context mentions most; records log-probabilities.
    fn choose(&mut self, options: &[Value], field: &str, cond: &mut String) -> Value {
        if options.is_empty() {
            return Value::Null;
        }
        let query = format!("{} {} {}", self.prompt.query, cond, field.replace('_', " "));
        let rel = self.index.scores(&query);
        let max = rel.iter().cloned().fold(0.0_f64, f64::max).max(1e-9);
        let mut scores = Vec::with_capacity(options.len());
        for o in options {
            let label = o
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| o.to_string());
            let text = self
                .prompt
                .option_texts
                .iter()
                .rev()
                .find(|(l, _)| *l == label)
                .map(|(_, t)| t.clone())
                .unwrap_or_else(|| label.clone());
            let terms = text::terms(&text);
            let mut score = 0.0;
            if !terms.is_empty() {
                let matches = self.index.matches(&terms);
                for (i, m) in matches.iter().enumerate() {
                    let hit = f64::from(*m) / terms.len() as f64;
                    score += hit * (rel[i] / max + 0.05);
                }
            }
            scores.push((label, text, score));
        }
        // Softmax over scores: the temperature-scaled distribution the logprobs report and noise samples.
        let t = self.temperature.max(0.05);
        let top = scores.iter().map(|s| s.2).fold(f64::MIN, f64::max);
        let z: f64 = scores.iter().map(|s| ((s.2 - top) / t).exp()).sum();
        let lps: Vec<(String, f64)> = scores
            .iter()
            .map(|s| (s.0.clone(), (s.2 - top) / t - z.ln()))
            .collect();
        let mut best = 0;
        let mut best_v = f64::MIN;
        let n = scores.len();
        let lapse = self.lapse().map(|u| ((u * n as f64) as usize).min(n - 1));
        for (i, s) in scores.iter().enumerate().filter(|_| lapse.is_none()) {
            let v = s.2 + self.temperature * 0.3 * self.gumbel() + 1e-9 * self.rng.gen::<f64>();
            if v > best_v {
                best_v = v;
                best = i;
            }
        }
        let best = lapse.unwrap_or(best);
        let (label, text, _) = &scores[best];
        self.logprobs.push(TokenLogprob {
            token: label.clone(),
            logprob: lps[best].1,
            top: lps.clone(),
        });
        cond.push(' ');
        cond.push_str(text);
        options[best].clone()
    }
}

#[cfg(test)]
mod tests;
