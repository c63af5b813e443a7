//! Factual-question generation (ThinkThrice §5.1).
//!
//! An LLM reads each character's script and writes question/answer pairs, each with the sentence of the
//! script that answers it. A proposal is kept only if its source sentence really occurs in that script
//! (the exact script sentence is stored, so the validator's `source ⊂ script_text()` rule holds) and it
//! is not a near-duplicate of a question the script already has or one kept earlier. The paper had
//! human annotators review GPT-4's questions; [`append_to_file`] adds the kept ones to a script file
//! (layout and comments untouched) for the same review.
//!
//! Calls are tagged `Phase::Generation` / `generate_factual`, and their sample indices derive from
//! (seed, character, call number), so a run with the same seed asks the same requests.

use std::path::{Path, PathBuf};

use minijinja::context;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::agent::{PromptError, Prompts};
use crate::llm::{
    simulated, CallTags, ChatRequest, Gateway, LlmError, Message, Phase, ResponseSchema, Usage,
};
use crate::script::{Character, FactualQuestion, Script, ScriptError};
use crate::text;

/// The prompt framework and purpose: `prompts/generate/<lang>/factual.j2`.
pub const FRAMEWORK: &str = "generate";
/// The template's purpose name.
pub const PURPOSE: &str = "factual";
/// The call purpose in tags and metrics.
pub const CALL_PURPOSE: &str = "generate_factual";

/// Two questions whose token F1 reaches this are the same question in other words.
const NEAR_DUPLICATE_F1: f64 = 0.8;
/// A source quoting part of a sentence must be at least this wide (see [`width`]) or cover half the
/// sentence: "the ledger" is a phrase, not a source.
const MIN_FRAGMENT_WIDTH: usize = 24;

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

/// Why generation or appending failed.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// Boxed: an LLM error carries its usage and the provider's last error, and would make every
    /// `Result` of this module large.
    #[error(transparent)]
    Llm(Box<LlmError>),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("{path}: cannot read script")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot write script")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// The file with the questions appended would not be a valid script; it was left unchanged.
    #[error("the script with the new questions would be invalid, file left unchanged: {0}")]
    Invalid(#[source] Box<ScriptError>),
}

impl From<LlmError> for GenerateError {
    fn from(e: LlmError) -> Self {
        GenerateError::Llm(Box::new(e))
    }
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
    if target == 0 || screen.script_text.trim().is_empty() {
        return Ok((Vec::new(), report, usage));
    }
    let cap = 2 * target.div_ceil(batch) + 2;
    let mut barren = 0;
    while screen.kept.len() < target && report.calls < cap && barren < 2 {
        let known: Vec<&str> = screen.known.iter().map(|k| k.question.as_str()).collect();
        let user = prompts.render(
            PURPOSE,
            context! {
                name => character.name,
                script => screen.script_text,
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
            sample: sample_index(opts.seed, &character.name, report.calls as u64),
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
        let before = screen.kept.len();
        for p in proposals(out.json.as_ref()) {
            report.proposed += 1;
            if screen.kept.len() >= target {
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
        let added = screen.kept.len() - before;
        barren = if added == 0 { barren + 1 } else { 0 };
        tracing::debug!(character = %character.name, call = report.calls, added, kept = screen.kept.len(), "factual batch");
    }
    report.kept = screen.kept.len();
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
    Ok((screen.kept, report, usage))
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

/// The sample index of call `call` for `character`: reproducible per seed, distinct per call.
fn sample_index(seed: u64, character: &str, call: u64) -> u64 {
    let mut h = Sha256::new();
    h.update(CALL_PURPOSE.as_bytes());
    h.update(seed.to_le_bytes());
    h.update(character.as_bytes());
    h.update([0]);
    h.update(call.to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// One question the model proposed, as it wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proposal {
    pub question: String,
    pub answer: String,
    pub source: String,
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

/// What became of a proposal.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Kept, with `source` replaced by the exact script sentence.
    Keep(FactualQuestion),
    Empty,
    Unsourced,
    Duplicate,
}

/// A question already asked about the character, in the forms the duplicate test compares.
#[derive(Debug, Clone)]
struct Known {
    question: String,
    question_key: String,
    answer_key: String,
    source_key: String,
}

impl Known {
    fn of(q: &FactualQuestion) -> Known {
        Known {
            question: q.question.trim().to_string(),
            question_key: key(&q.question),
            answer_key: key(&q.answer),
            source_key: normalise(&q.source),
        }
    }
}

/// Screens one character's proposals: grounded in the script, non-empty, new.
#[derive(Debug, Clone)]
pub struct Screen {
    character: String,
    script_text: String,
    /// The script's sentences: (exact text, normalised text).
    sentences: Vec<(String, String)>,
    /// Existing questions and those kept so far.
    known: Vec<Known>,
    kept: Vec<FactualQuestion>,
}

impl Screen {
    /// A screen for `character`, with the questions the script already has about it.
    pub fn new(character: &Character, existing: &[FactualQuestion]) -> Screen {
        let script_text = character.script_text();
        let sentences = text::sentences(&script_text)
            .into_iter()
            // `sentences` cuts contiguous trimmed pieces, so this always holds; checked because the
            // validator requires it of every stored source.
            .filter(|s| script_text.contains(s.as_str()))
            .map(|s| {
                let n = normalise(&s);
                (s, n)
            })
            .collect();
        Screen {
            character: character.name.clone(),
            script_text,
            sentences,
            known: existing.iter().map(Known::of).collect(),
            kept: Vec::new(),
        }
    }

    /// Judges a proposal against the script and everything known so far, and keeps it if it passes.
    pub fn offer(&mut self, p: &Proposal) -> Verdict {
        let v = self.judge(p);
        if let Verdict::Keep(q) = &v {
            self.known.push(Known::of(q));
            self.kept.push(q.clone());
        }
        v
    }

    /// Judges a proposal without keeping it.
    pub fn judge(&self, p: &Proposal) -> Verdict {
        let (question, answer) = (p.question.trim(), p.answer.trim());
        if question.is_empty() || answer.is_empty() || p.source.trim().is_empty() {
            return Verdict::Empty;
        }
        let Some(source) = self.find_source(&p.source) else {
            return Verdict::Unsourced;
        };
        let (qk, ak, sk) = (key(question), key(answer), normalise(source));
        let duplicate = self.known.iter().any(|k| {
            (!qk.is_empty() && k.question_key == qk)
                || text::token_f1(question, &k.question) >= NEAR_DUPLICATE_F1
                || (k.source_key == sk && k.answer_key == ak)
        });
        if duplicate {
            return Verdict::Duplicate;
        }
        Verdict::Keep(FactualQuestion {
            character: self.character.clone(),
            question: question.to_string(),
            answer: answer.to_string(),
            source: source.to_string(),
        })
    }

    /// Questions kept so far.
    pub fn kept(&self) -> &[FactualQuestion] {
        &self.kept
    }

    /// The script sentence a model's source quotes: the sentence itself (whitespace, typographic quotes,
    /// surrounding quote marks and a missing or different final punctuation tolerated), or a large
    /// enough part of one sentence.
    fn find_source(&self, source: &str) -> Option<&str> {
        let n = normalise(source);
        let mut forms = vec![n.clone()];
        let unquoted = unquote(&n);
        forms.push(unquoted.to_string());
        for f in [n.as_str(), unquoted] {
            forms.push(trim_final_punctuation(f).to_string());
        }
        forms.retain(|f| !f.is_empty());
        forms.dedup();
        // A whole sentence first: a short sentence may also occur inside a longer one.
        for f in &forms {
            if let Some((s, _)) = self
                .sentences
                .iter()
                .find(|(_, ns)| ns == f || trim_final_punctuation(ns) == f)
            {
                return Some(s);
            }
        }
        for f in &forms {
            if let Some((s, _)) = self.sentences.iter().find(|(_, ns)| {
                ns.contains(f.as_str())
                    && (width(f) >= MIN_FRAGMENT_WIDTH || 2 * width(f) >= width(ns))
            }) {
                return Some(s);
            }
        }
        None
    }
}

/// Whitespace collapsed to single spaces, typographic quotes and apostrophes made plain, trimmed.
fn normalise(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(w.chars().map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{2032}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{2033}' => '"',
            c => c,
        }));
    }
    out
}

/// The comparison key of a question or answer: lower-cased letters and digits, one space between words.
fn key(s: &str) -> String {
    let lowered: String = s
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    lowered.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Drops quote marks wrapped around the whole text.
fn unquote(s: &str) -> &str {
    for (open, close) in [('"', '"'), ('\'', '\''), ('「', '」'), ('『', '』')] {
        if let Some(inner) = s.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
            return inner.trim();
        }
    }
    s
}

fn trim_final_punctuation(s: &str) -> &str {
    s.trim_end_matches(|c: char| ".,;:!?。，；：！？、…".contains(c))
        .trim_end()
}

/// A rough size in Latin letters: a CJK character carries about as much as three.
fn width(s: &str) -> usize {
    s.chars().map(|c| if text::is_cjk(c) { 3 } else { 1 }).sum()
}

/// Appends `[[factual]]` tables to a script file, keeping the rest of the file (comments, layout)
/// byte for byte. New tables follow the file's last `[[factual]]` (or end the file if it has none),
/// each character's group under a `# generated factual questions: <name>` comment.
///
/// The result is checked with [`Script::parse`] before anything is written; it is then written to a
/// temporary file in the same directory and renamed over the original, so a failure never leaves a
/// broken file.
pub fn append_to_file(path: &Path, questions: &[FactualQuestion]) -> Result<(), GenerateError> {
    let original = std::fs::read_to_string(path).map_err(|source| GenerateError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if questions.is_empty() {
        return Ok(());
    }
    let updated = append_to_text(&original, questions).map_err(|message| GenerateError::Parse {
        path: path.to_path_buf(),
        message,
    })?;
    Script::parse(&updated, path).map_err(|e| GenerateError::Invalid(Box::new(e)))?;
    write_atomically(path, &updated)
}

/// The file text with the questions appended (see [`append_to_file`]).
pub fn append_to_text(original: &str, questions: &[FactualQuestion]) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = original
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string().trim().replace('\n', " "))?;
    let root = doc.as_table_mut();
    if !root.contains_key("factual") {
        root.insert(
            "factual",
            toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()),
        );
    }
    let item = root.get_mut("factual").expect("just inserted");
    let mut previous: Option<&str> = None;
    match item {
        toml_edit::Item::ArrayOfTables(tables) => {
            for q in questions {
                let mut t = toml_edit::Table::new();
                t.insert("character", toml_edit::value(q.character.as_str()));
                t.insert("question", toml_edit::value(q.question.as_str()));
                t.insert("answer", toml_edit::value(q.answer.as_str()));
                t.insert("source", toml_edit::value(q.source.as_str()));
                if previous != Some(q.character.as_str()) {
                    let comment = q.character.replace(['\n', '\r'], " ");
                    t.decor_mut()
                        .set_prefix(format!("\n# generated factual questions: {comment}\n\n"));
                }
                previous = Some(q.character.as_str());
                tables.push(t);
            }
        }
        toml_edit::Item::Value(toml_edit::Value::Array(array)) => {
            for q in questions {
                let mut t = toml_edit::InlineTable::new();
                t.insert("character", q.character.as_str().into());
                t.insert("question", q.question.as_str().into());
                t.insert("answer", q.answer.as_str().into());
                t.insert("source", q.source.as_str().into());
                array.push(t);
            }
        }
        _ => return Err("`factual` is not an array of tables".into()),
    }
    Ok(doc.to_string())
}

/// Writes `text` to a temporary file beside `path` and renames it over `path`, keeping its permissions.
fn write_atomically(path: &Path, text: &str) -> Result<(), GenerateError> {
    let write_err = |source| GenerateError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "script.toml".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(write_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ada() -> Character {
        toml::from_str(
            r#"
name = "Ada Finch"
role = "civilian"
story = """
Ada Finch has kept the lighthouse on Gull Rock for twelve years.
She met Ben Hollis in 1950 at the harbour fair in Kesterby, and they were engaged the following spring.
"""
timeline = "At 9:40 pm Ada saw a lantern moving in the orchid house.\nAt 10 pm she locked the door."
"#,
        )
        .expect("character parses")
    }

    fn kind(v: Verdict) -> &'static str {
        match v {
            Verdict::Keep(_) => "keep",
            Verdict::Empty => "empty",
            Verdict::Unsourced => "unsourced",
            Verdict::Duplicate => "duplicate",
        }
    }

    fn p(q: &str, a: &str, s: &str) -> Proposal {
        Proposal {
            question: q.into(),
            answer: a.into(),
            source: s.into(),
        }
    }

    fn existing() -> Vec<FactualQuestion> {
        vec![FactualQuestion {
            character: "Ada Finch".into(),
            question: "How long has Ada Finch kept the lighthouse on Gull Rock?".into(),
            answer: "twelve years".into(),
            source: "Ada Finch has kept the lighthouse on Gull Rock for twelve years.".into(),
        }]
    }

    #[test]
    fn keeps_grounded_new_questions_with_the_exact_sentence() {
        let mut s = Screen::new(&ada(), &existing());
        let v = s.offer(&p(
            "What did Ada see in the orchid house at 9:40 pm?",
            "a lantern",
            "  At 9:40 pm Ada saw a   lantern moving in the orchid house  ",
        ));
        let Verdict::Keep(q) = v else {
            panic!("kept: {v:?}")
        };
        assert_eq!(
            q.source,
            "At 9:40 pm Ada saw a lantern moving in the orchid house."
        );
        assert!(ada().script_text().contains(&q.source));
        // Typographic quotes and a different final punctuation are tolerated.
        let v = s.offer(&p(
            "When did Ada lock the door?",
            "10 pm",
            "“At 10 pm she locked the door!”",
        ));
        assert!(
            matches!(&v, Verdict::Keep(q) if q.source == "At 10 pm she locked the door."),
            "{v:?}"
        );
        assert_eq!(s.kept().len(), 2);
    }

    #[test]
    fn a_quoted_part_of_a_sentence_stores_the_whole_sentence() {
        let mut s = Screen::new(&ada(), &[]);
        let v = s.offer(&p(
            "Where did Ada Finch meet Ben Hollis?",
            "at the harbour fair in Kesterby",
            "She met Ben Hollis in 1950 at the harbour fair in Kesterby",
        ));
        let Verdict::Keep(q) = v else {
            panic!("kept: {v:?}")
        };
        assert_eq!(q.source, "She met Ben Hollis in 1950 at the harbour fair in Kesterby, and they were engaged the following spring.");
        // A scrap of a sentence is not a source.
        assert_eq!(
            kind(s.offer(&p("Who did Ada meet?", "Ben Hollis", "Ben Hollis"))),
            "unsourced"
        );
    }

    #[test]
    fn drops_unsourced_empty_and_duplicate_proposals() {
        let mut s = Screen::new(&ada(), &existing());
        assert_eq!(
            kind(s.offer(&p(
                "What colour is Ada's boat?",
                "blue",
                "Ada's boat is painted blue."
            ))),
            "unsourced"
        );
        assert_eq!(
            kind(s.offer(&p("", "a lantern", "At 10 pm she locked the door."))),
            "empty"
        );
        assert_eq!(
            kind(s.offer(&p(
                "When did Ada lock the door?",
                "  ",
                "At 10 pm she locked the door."
            ))),
            "empty"
        );
        assert_eq!(
            kind(s.offer(&p("When did Ada lock the door?", "10 pm", ""))),
            "empty"
        );
        // Same as the script's existing question, in other case and punctuation.
        assert_eq!(
            kind(s.offer(&p(
                "how long has Ada Finch kept the lighthouse on Gull Rock",
                "12 years",
                "Ada Finch has kept the lighthouse on Gull Rock for twelve years."
            ))),
            "duplicate"
        );
        // Near-duplicate wording (token F1 ≥ 0.8).
        assert_eq!(
            kind(s.offer(&p(
                "For how long has Ada Finch kept the lighthouse on Gull Rock?",
                "twelve years",
                "Ada Finch has kept the lighthouse on Gull Rock for twelve years."
            ))),
            "duplicate"
        );
        // A different question with the same source and answer.
        assert_eq!(
            kind(s.offer(&p(
                "What is the length of Ada's service at the light?",
                "Twelve years.",
                "Ada Finch has kept the lighthouse on Gull Rock for twelve years."
            ))),
            "duplicate"
        );
        // Duplicates of questions kept in this run count too.
        assert!(matches!(
            s.offer(&p(
                "When did Ada lock the door?",
                "10 pm",
                "At 10 pm she locked the door."
            )),
            Verdict::Keep(_)
        ));
        assert_eq!(
            kind(s.offer(&p(
                "When did Ada lock the door",
                "at 10 pm",
                "At 10 pm she locked the door."
            ))),
            "duplicate"
        );
        assert_eq!(s.kept().len(), 1);
    }

    #[test]
    fn chinese_sources_are_found_by_sentence() {
        let c: Character = toml::from_str(
            "name = \"林医生\"\nrole = \"civilian\"\ntimeline = \"18:20，你去见杨老板，快到的时候遇见了张大副。之后你回到了船舱\"\n",
        )
        .expect("parses");
        let mut s = Screen::new(&c, &[]);
        let v = s.offer(&p(
            "林医生几点遇见张大副？",
            "18:20",
            "18:20，你去见杨老板，快到的时候遇见了张大副",
        ));
        assert!(
            matches!(&v, Verdict::Keep(q) if q.source == "18:20，你去见杨老板，快到的时候遇见了张大副。"),
            "{v:?}"
        );
        let v = s.offer(&p("林医生之后去了哪里？", "船舱", "之后你回到了船舱。"));
        assert!(
            matches!(&v, Verdict::Keep(q) if q.source == "之后你回到了船舱"),
            "{v:?}"
        );
    }

    #[test]
    fn appends_tables_after_the_last_factual_and_keeps_the_rest() {
        let original = "# a comment\ntitle = \"x\" # trailing\n\n[[factual]]\ncharacter = \"A\"\nquestion = \"q\"\nanswer = \"a\"\nsource = \"s\"\n\n# inferential next\n[[inferential]]\nquestion = \"i\"\n";
        let q = FactualQuestion {
            character: "B".into(),
            question: "Who said \"hi\"?".into(),
            answer: "Ben".into(),
            source: "Ben said \"hi\".".into(),
        };
        let out = append_to_text(original, &[q.clone(), q]).expect("appends");
        let cut = original.find("\n# inferential").expect("marker");
        assert!(out.starts_with(&original[..cut]), "{out}");
        assert!(out.ends_with(&original[cut..]), "{out}");
        assert_eq!(out.matches("[[factual]]").count(), 3, "{out}");
        assert_eq!(out.matches("# generated factual questions: B").count(), 1);
        let v: toml::Value = toml::from_str(&out).expect("valid TOML");
        assert_eq!(
            v["factual"][1]["question"].as_str(),
            Some("Who said \"hi\"?")
        );
        // A file without factual questions gets them at the end.
        let out = append_to_text(
            "title = \"x\"\n",
            &[FactualQuestion {
                character: "B".into(),
                question: "q".into(),
                answer: "a".into(),
                source: "s".into(),
            }],
        )
        .expect("appends");
        assert!(out.starts_with("title = \"x\"\n"), "{out}");
        assert_eq!(
            toml::from_str::<toml::Value>(&out).expect("toml")["factual"][0]["answer"].as_str(),
            Some("a")
        );
    }

    #[test]
    fn sample_indices_are_reproducible_and_distinct() {
        assert_eq!(sample_index(7, "Ada", 0), sample_index(7, "Ada", 0));
        assert_ne!(sample_index(7, "Ada", 0), sample_index(7, "Ada", 1));
        assert_ne!(sample_index(7, "Ada", 0), sample_index(7, "Ben", 0));
        assert_ne!(sample_index(7, "Ada", 0), sample_index(8, "Ada", 0));
    }
}
