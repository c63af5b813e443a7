//! Asking the model: one prompt per batch and character, with the reply schema and a sample index of
//! its own, until enough questions pass the screen or the model stops adding any.

use std::path::PathBuf;

use minijinja::context;
use serde_json::{json, Value};

use super::screen::{Proposal, Screen, Verdict};
use super::{GenerateError, CALL_PURPOSE, FRAMEWORK, PURPOSE};
use crate::agent::Prompts;
use sleuth_llm::{
    simulated, CallTags, ChatRequest, Gateway, Message, Phase, ResponseSchema, SampleCounter, Usage,
};
use sleuth_script::{Character, FactualQuestion, Script};

/// How to generate.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// Questions wanted per character (the paper: 40).
    pub per_character: usize,
    pub model: String,
    /// Questions asked for per call.
    pub batch: usize,
    pub temperature: f32,
    /// Seeds the sample indices of the calls.
    pub seed: u64,
    /// Replaces the built-in templates (`DIR/generate/<lang>/factual.j2`).
    pub prompts_dir: Option<PathBuf>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            per_character: 40,
            model: simulated::MODEL.to_string(),
            batch: 10,
            temperature: 0.8,
            seed: 0,
            prompts_dir: None,
        }
    }
}

/// What happened for one character. `proposed = kept + dropped_* + surplus`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CharacterReport {
    pub character: String,
    pub requested: usize,
    /// Question objects the model returned, over all calls.
    pub proposed: usize,
    pub kept: usize,
    /// The source is not a sentence (or a large enough part of one) of the character's script.
    pub dropped_unsourced: usize,
    /// Same question as an existing or kept one, or the same source and answer.
    pub dropped_duplicates: usize,
    /// Question, answer or source empty.
    pub dropped_empty: usize,
    /// Acceptable proposals beyond `requested`, left out because the target was already reached.
    pub surplus: usize,
    /// Calls made for this character.
    pub calls: usize,
}

/// The outcome of [`generate`].
#[derive(Debug, Clone, Default)]
pub struct GenerateReport {
    /// Kept questions, grouped by character in script order.
    pub questions: Vec<FactualQuestion>,
    pub per_character: Vec<CharacterReport>,
    pub usage: Usage,
}

/// Generates up to `opts.per_character` new factual questions for every character of `script`.
///
/// Per character, asks for batches of `opts.batch` until enough are kept, two batches in a row add
/// nothing, or `2 * ceil(per_character / batch) + 2` calls were made. Characters run concurrently.
pub async fn generate(
    script: &Script,
    gateway: &Gateway,
    opts: &GenerateOptions,
) -> Result<GenerateReport, GenerateError> {
    let prompts = Prompts::load(
        FRAMEWORK,
        script.language,
        opts.prompts_dir.as_deref(),
        &[PURPOSE],
    )?;
    let runs = script
        .characters
        .iter()
        .map(|c| generate_for(script, c, gateway, &prompts, opts));
    let results = futures::future::try_join_all(runs).await?;
    let mut report = GenerateReport::default();
    for (questions, r, usage) in results {
        report.questions.extend(questions);
        report.per_character.push(r);
        report.usage += usage;
    }
    Ok(report)
}

async fn generate_for(
    script: &Script,
    character: &Character,
    gateway: &Gateway,
    prompts: &Prompts,
    opts: &GenerateOptions,
) -> Result<(Vec<FactualQuestion>, CharacterReport, Usage), GenerateError> {
    let batch = opts.batch.max(1);
    let target = opts.per_character;
    let existing: Vec<FactualQuestion> = script
        .factual
        .iter()
        .filter(|q| q.character == character.name)
        .cloned()
        .collect();
    let mut screen = Screen::new(character, &existing);
    let mut report = CharacterReport {
        character: character.name.clone(),
        requested: target,
        ..Default::default()
    };
    let mut usage = Usage::default();
    if target == 0 || screen.script_text().trim().is_empty() {
        return Ok((Vec::new(), report, usage));
    }
    let cap = 2 * target.div_ceil(batch) + 2;
    let mut barren = 0;
    // The generator's own identity per character: the shared scheme of `llm::SampleCounter`.
    let mut samples = SampleCounter::new(opts.seed, format!("{CALL_PURPOSE}/{}", character.name));
    while screen.kept().len() < target && report.calls < cap && barren < 2 {
        let known = screen.known_questions();
        let user = prompts.render(
            PURPOSE,
            context! {
                name => character.name,
                script => screen.script_text(),
                existing => known,
                count => batch,
            },
        )?;
        let req = ChatRequest {
            model: opts.model.clone(),
            messages: vec![Message::user(user)],
            temperature: opts.temperature,
            top_p: 1.0,
            max_tokens: (200 * batch + 200).min(u32::MAX as usize) as u32,
            schema: Some(ResponseSchema::json(
                "factual_questions",
                batch_schema(batch),
            )),
            logprobs: false,
            sample: samples.next_index(),
            cache_key: None,
        };
        let tags = CallTags {
            game: "questions".into(),
            agent: character.name.clone(),
            framework: FRAMEWORK.into(),
            phase: Phase::Generation,
            purpose: CALL_PURPOSE.into(),
        };
        report.calls += 1;
        let out = gateway.chat(req, tags).await?;
        usage += out.usage;
        let before = screen.kept().len();
        for p in proposals(out.json.as_ref()) {
            report.proposed += 1;
            if screen.kept().len() >= target {
                // Only judge it, so the report says whether it would have been usable.
                match screen.judge(&p) {
                    Verdict::Keep(_) => report.surplus += 1,
                    v => count_drop(&mut report, &v),
                }
                continue;
            }
            let v = screen.offer(&p);
            count_drop(&mut report, &v);
        }
        let added = screen.kept().len() - before;
        barren = if added == 0 { barren + 1 } else { 0 };
        tracing::debug!(character = %character.name, call = report.calls, added, kept = screen.kept().len(), "factual batch");
    }
    report.kept = screen.kept().len();
    tracing::info!(
        character = %character.name,
        kept = report.kept,
        requested = target,
        proposed = report.proposed,
        unsourced = report.dropped_unsourced,
        duplicates = report.dropped_duplicates,
        empty = report.dropped_empty,
        calls = report.calls,
        "factual questions generated"
    );
    Ok((screen.into_kept(), report, usage))
}

fn count_drop(report: &mut CharacterReport, v: &Verdict) {
    match v {
        Verdict::Keep(_) => {}
        Verdict::Empty => report.dropped_empty += 1,
        Verdict::Unsourced => report.dropped_unsourced += 1,
        Verdict::Duplicate => report.dropped_duplicates += 1,
    }
}

/// The reply schema: exactly `n` question objects.
fn batch_schema(n: usize) -> Value {
    json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "minItems": n,
                "maxItems": n,
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string"},
                        "answer": {"type": "string"},
                        "source": {"type": "string"}
                    },
                    "required": ["question", "answer", "source"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["questions"],
        "additionalProperties": false
    })
}

/// The proposals in a reply (missing fields read as empty).
fn proposals(json: Option<&Value>) -> Vec<Proposal> {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    json.and_then(|j| j.get("questions"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|v| Proposal {
                    question: field(v, "question"),
                    answer: field(v, "answer"),
                    source: field(v, "source"),
                })
                .collect()
        })
        .unwrap_or_default()
}
