//! The sweep file (TOML): which scripts, which arms, how many repeats, which models at which
//! endpoints with which limits and prices, how to evaluate, and the budget.
//!
//! An annotated example is `examples/sweeps/`; the format is in `docs/sweeps.md`. Everything is read
//! and checked here, before anything runs: an unknown key anywhere, a value of the wrong type, a
//! model no table lists or a setting out of range is an error naming the file and the key.
//! Relative paths (scripts, `out`, `prompts_dir`) are relative to the sweep file's directory, so a
//! sweep runs the same from any working directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::SweepError;
use sleuth_llm::{ModelPrice, StructuredMode, TokenLimit};

pub mod tournament;

/// The model every sweep can use without listing it: the in-process simulated model.
pub const DEFAULT_MODEL: &str = sleuth_llm::simulated::MODEL;

/// The settings of one arm: every key is optional and falls back to the arm's base ([`SweepFile::game`])
/// and then to `sleuth play`'s defaults. The same keys are valid in `[game]`, in each `[[arms]]` table
/// and as `[axes]` lists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// `thinkthrice`, `wellplay` or `mirage`; by default the protocol of the script's dataset.
    pub protocol: Option<String>,
    pub framework: Option<String>,
    pub murderer_framework: Option<String>,
    /// The civilians' model: a key of `[models]`.
    pub model: Option<String>,
    /// The murderers' model, when it differs.
    pub murderer_model: Option<String>,
    /// ThinkThrice modules, as `--modules` takes them (`mr,sr,sv=3`, `none`).
    pub modules: Option<String>,
    pub top_k: Option<usize>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_tokens: Option<u32>,
    /// WellPlay: rounds of questioning per act, and questions per player per round.
    pub rounds: Option<u32>,
    pub questions_per_round: Option<u32>,
    /// ThinkThrice: open rounds before and after the clue cards, and initial questioning.
    pub rounds_before_clues: Option<u32>,
    pub rounds_after_clues: Option<u32>,
    pub initial_questioning: Option<bool>,
    /// MIRAGE: iterations, forced exposure, summary and history budgets, stage pacing.
    pub iterations: Option<u32>,
    pub force_expose: Option<bool>,
    pub script_summary_tokens: Option<u32>,
    pub history_tokens: Option<u32>,
    pub stage_every: Option<u32>,
    /// Prompt language (`en`, `zh`); the script's own by default.
    pub language: Option<String>,
    /// Prompt templates replacing the built-in ones.
    pub prompts_dir: Option<String>,
    /// The judge's model (a key of `[models]`) for this arm, over `[evaluation] judge_model`: as an
    /// axis it has the same games judged by several models (MIRAGE Tables 4 and 5). Only the judge's
    /// calls differ between such arms, so their play is one set of cache keys and each game is
    /// played once, the other judges' copies replaying it from the cache. Left out of the JSON
    /// when unset, so arms without it keep their ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_model: Option<String>,
    /// Characters given to people (`docs/seat.md`, *In a sweep*): `CHARACTER=NAME`, several joined
    /// by `;`, `""` for none — as an axis, the same games with and without a person at the table.
    /// Left out of the JSON when unset, so arms without it keep their ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<String>,
}

/// Names of the settings, in the order an arm's label lists them.
pub const SETTING_KEYS: &[&str] = &[
    "protocol",
    "framework",
    "murderer_framework",
    "model",
    "murderer_model",
    "modules",
    "top_k",
    "temperature",
    "top_p",
    "max_tokens",
    "rounds",
    "questions_per_round",
    "rounds_before_clues",
    "rounds_after_clues",
    "initial_questioning",
    "iterations",
    "force_expose",
    "script_summary_tokens",
    "history_tokens",
    "stage_every",
    "language",
    "prompts_dir",
    "judge_model",
    "human",
];

impl Settings {
    /// `self` with every key `over` sets replaced.
    pub fn overlay(&self, over: &Settings) -> Settings {
        let mut a = serde_json::to_value(self).unwrap_or_default();
        let b = serde_json::to_value(over).unwrap_or_default();
        if let (Some(a), Some(b)) = (a.as_object_mut(), b.as_object()) {
            for (k, v) in b {
                if !v.is_null() {
                    a.insert(k.clone(), v.clone());
                }
            }
        }
        serde_json::from_value(a).unwrap_or_default()
    }

    /// The keys this sets, as (key, value as written in a label).
    pub fn set_keys(&self) -> Vec<(String, String)> {
        let v = serde_json::to_value(self).unwrap_or_default();
        SETTING_KEYS
            .iter()
            .filter_map(|k| {
                let x = v.get(*k)?;
                (!x.is_null()).then(|| {
                    let shown = match x {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.to_string(), shown)
                })
            })
            .collect()
    }
}

/// One entry of the models table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// `simulated` or `openai` (any OpenAI-compatible endpoint).
    pub provider: String,
    /// The endpoint's base URL (openai); default `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    /// The model id the endpoint knows; by default the table key.
    pub model: Option<String>,
    /// Name of the environment variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Requests per minute, tokens per minute and calls at once this sweep may make.
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
    pub max_concurrency: Option<u32>,
    /// Whether the concurrency limit adapts to the endpoint below `max_concurrency` (halved on 429s
    /// and timeouts, grown back while latency holds); default true.
    pub adaptive_concurrency: Option<bool>,
    /// USD per million tokens; without them the built-in pricing table's price, else 0.
    pub input_usd_per_mtok: Option<f64>,
    pub cached_input_usd_per_mtok: Option<f64>,
    pub output_usd_per_mtok: Option<f64>,
    /// Added latency of the simulated provider, in milliseconds.
    pub latency_ms: Option<u64>,
    /// How structured replies are asked for (openai): `auto` (default), `json_schema`,
    /// `json_object` or `prompt` (`docs/sweeps.md`, *Models and their endpoints*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<StructuredMode>,
    /// Which field(s) carry the completion limit (openai): `both` (default), `max_tokens` or
    /// `max_completion_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_limit: Option<TokenLimit>,
    /// Tokens the model reads in one request, prompt and reply together. Without it the endpoint is
    /// asked (vLLM, llama.cpp say), then the built-in table of known models; with none of them nothing
    /// is shortened (`docs/real-models.md`, *Context windows*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// Evaluation calls of this model go through the provider's Batch API at its discount (openai
    /// provider, cache on; `docs/sweeps.md`, *Batch evaluation*). Play calls stay live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<bool>,
    /// USD per million tokens through the Batch API; default half the live prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_input_usd_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_output_usd_per_mtok: Option<f64>,
}

impl ModelEntry {
    /// The price the table gives, if it gives one.
    pub fn price(&self) -> Option<ModelPrice> {
        match (self.input_usd_per_mtok, self.output_usd_per_mtok) {
            (Some(input), Some(output)) => Some(ModelPrice {
                input,
                cached_input: self.cached_input_usd_per_mtok,
                output,
                batch_input: self.batch_input_usd_per_mtok,
                batch_output: self.batch_output_usd_per_mtok,
            }),
            _ => None,
        }
    }
}

/// How games are evaluated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluationSettings {
    /// The default judge's model (a key of `[models]`); the lexical judge when absent.
    pub judge_model: Option<String>,
    /// A judge model per metric (`factual`, `rationale`, `mirage`).
    #[serde(default)]
    pub judges: BTreeMap<String, String>,
    /// Pass mark of the lexical judge.
    pub judge_threshold: Option<f64>,
    /// Times each WellPlay multiple-choice question is asked.
    pub repeats: Option<u32>,
    /// Minimum rationale score (1-5) for informed accuracy.
    pub rationale_threshold: Option<u8>,
    /// `hashing`, or `MODEL` of `[models]` for remote embeddings.
    pub embedder: Option<String>,
}

/// The batching policy of models with `batch = true` (`[batch]`; `llm::batch::BatchSettings`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchFileSettings {
    /// Flush a model's queued evaluation calls into a batch when this many wait (default 5,000)…
    pub flush_calls: Option<usize>,
    /// …or when the oldest has waited this many seconds (default 60).
    pub flush_secs: Option<f64>,
    /// Seconds between polls of open batches (default 30).
    pub poll_secs: Option<f64>,
    /// Limits of one input file (OpenAI's: 50,000 requests, 200 MB).
    pub max_file_requests: Option<usize>,
    pub max_file_mb: Option<f64>,
    /// A line its batch did not answer: `live` (default) or `batch` (another batch, up to
    /// `max_attempts`, then live).
    pub on_failure: Option<sleuth_llm::batch::OnFailure>,
    pub max_attempts: Option<u32>,
}

impl BatchFileSettings {
    /// The policy, defaults filled in.
    pub fn settings(&self) -> sleuth_llm::batch::BatchSettings {
        let d = sleuth_llm::batch::BatchSettings::default();
        let secs = |s: Option<f64>, d: std::time::Duration| {
            s.map_or(d, std::time::Duration::from_secs_f64)
        };
        sleuth_llm::batch::BatchSettings {
            flush_calls: self.flush_calls.unwrap_or(d.flush_calls),
            flush_after: secs(self.flush_secs, d.flush_after),
            poll_every: secs(self.poll_secs, d.poll_every),
            max_file_requests: self.max_file_requests.unwrap_or(d.max_file_requests),
            max_file_bytes: self
                .max_file_mb
                .map_or(d.max_file_bytes, |mb| (mb * 1e6) as usize),
            on_failure: self.on_failure.unwrap_or(d.on_failure),
            max_attempts: self.max_attempts.unwrap_or(d.max_attempts),
        }
    }

    /// The first setting out of its range, as (key, expectation).
    fn invalid(&self) -> Option<(&'static str, &'static str)> {
        let positive = |x: Option<f64>| x.is_some_and(|v| !(v > 0.0 && v.is_finite()));
        if self.flush_calls == Some(0) {
            return Some(("batch.flush_calls", "must be at least 1"));
        }
        if positive(self.flush_secs) {
            return Some(("batch.flush_secs", "must be a number of seconds > 0"));
        }
        if positive(self.poll_secs) {
            return Some(("batch.poll_secs", "must be a number of seconds > 0"));
        }
        if self.max_file_requests == Some(0) {
            return Some(("batch.max_file_requests", "must be at least 1"));
        }
        if positive(self.max_file_mb) {
            return Some(("batch.max_file_mb", "must be a size in MB > 0"));
        }
        if self.max_attempts == Some(0) {
            return Some(("batch.max_attempts", "must be at least 1"));
        }
        None
    }
}

/// A budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSettings {
    pub max_usd: Option<f64>,
    pub max_tokens: Option<u64>,
}

/// The gateway's retry policy and the cache switch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewaySettings {
    #[serde(default = "default_true")]
    pub cache: bool,
    pub max_retries: Option<u32>,
    pub retry_base_ms: Option<u64>,
    pub timeout_secs: Option<u64>,
    /// Model calls one game may have in flight at once.
    pub game_concurrency: Option<usize>,
    /// Whether each live call's request is kept for the viewer and the export (default true).
    #[serde(default = "default_true")]
    pub keep_requests: bool,
}

fn default_true() -> bool {
    true
}

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            cache: true,
            max_retries: None,
            retry_base_ms: None,
            timeout_secs: None,
            game_concurrency: None,
            keep_requests: true,
        }
    }
}

/// A sweep file, as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    /// The sweep's name: its id in the run directory's store.
    pub name: String,
    /// The run directory; `runs/<name>` beside the sweep file by default.
    pub out: Option<String>,
    /// Script files, or directories whose `*.toml` files are all scripts.
    pub scripts: Vec<String>,
    /// Games per arm and script, seeded `seed`, `seed + 1`, …
    pub repeats: Option<u32>,
    pub seed: Option<u64>,
    /// Explicit seeds instead (one game per seed).
    pub seeds: Option<Vec<u64>>,
    /// Games in flight at once (`sweep run --concurrency` overrides).
    pub concurrency: Option<usize>,
    /// Settings every arm starts from.
    #[serde(default)]
    pub game: Settings,
    /// Each key a list of values: the grid is their cross product (crossed with `arms`).
    #[serde(default)]
    pub axes: BTreeMap<String, toml::Value>,
    /// Explicit arms, for combinations a grid cannot express (crossed with `axes`).
    #[serde(default)]
    pub arms: Vec<Settings>,
    /// Model name → endpoint, limits, prices.
    #[serde(default)]
    pub models: BTreeMap<String, ModelEntry>,
    #[serde(default)]
    pub evaluation: EvaluationSettings,
    #[serde(default)]
    pub budget: BudgetSettings,
    #[serde(default)]
    pub gateway: GatewaySettings,
    /// How evaluation calls of `batch = true` models are batched.
    #[serde(default)]
    pub batch: BatchFileSettings,
    /// Models against each other: every ordered pair on the culprit's and the civilians' side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tournament: Option<tournament::TournamentSettings>,
}

/// A sweep file read from disk, with where it was.
#[derive(Debug, Clone)]
pub struct LoadedSweep {
    pub path: PathBuf,
    pub text: String,
    pub file: SweepFile,
    /// Each axis: its key and its values as settings (one key set in each).
    pub axes: Vec<(String, Vec<Settings>)>,
}

impl LoadedSweep {
    /// Reads and checks the file's shape: keys, types, axes. Cross-checks (models, scripts,
    /// combinations) come with the plan (`crate::plan`).
    pub fn load(path: &Path) -> Result<LoadedSweep, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|e| SweepError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        LoadedSweep::parse(path, text)
    }

    /// Parses the text of the file at `path`.
    pub fn parse(path: &Path, text: String) -> Result<LoadedSweep, SweepError> {
        let file: SweepFile = toml::from_str(&text).map_err(|e| SweepError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let bad = |(key, message): (String, String)| SweepError::Key {
            path: path.to_path_buf(),
            key,
            message,
        };
        check_run(&file).map_err(bad)?;
        let axes = read_axes(&file).map_err(bad)?;
        check_models(&file).map_err(bad)?;
        if let Some(usd) = file.budget.max_usd {
            if usd.is_nan() || usd < 0.0 {
                return Err(bad((
                    "budget.max_usd".into(),
                    "expected an amount ≥ 0".into(),
                )));
            }
        }
        if let Some(t) = &file.tournament {
            t.check(&file).map_err(bad)?;
        }
        Ok(LoadedSweep {
            path: path.to_path_buf(),
            text,
            file,
            axes,
        })
    }

    /// A path of the file resolved against the file's directory.
    pub fn resolve(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.path.parent().unwrap_or_else(|| Path::new(".")).join(p)
        }
    }

    /// The run directory.
    pub fn out_dir(&self) -> PathBuf {
        match &self.file.out {
            Some(o) => self.resolve(o),
            None => self.resolve(&format!("runs/{}", self.file.name)),
        }
    }

    /// The seeds of one arm's games on one script, by repeat.
    pub fn seeds(&self) -> Vec<u64> {
        match &self.file.seeds {
            Some(s) => s.clone(),
            None => {
                let base = self.file.seed.unwrap_or(1);
                (0..self.file.repeats.unwrap_or(1))
                    .map(|r| base.wrapping_add(u64::from(r)))
                    .collect()
            }
        }
    }
}

/// A check's failure: the key to name and what was expected.
type KeyError = (String, String);

/// The run's own settings: name, scripts, seeds, concurrency, batch evaluation.
fn check_run(file: &SweepFile) -> Result<(), KeyError> {
    if file.name.trim().is_empty() {
        return Err(("name".into(), "must not be empty".into()));
    }
    if file.scripts.is_empty() {
        return Err(("scripts".into(), "lists no script".into()));
    }
    match (&file.seeds, file.repeats, file.seed) {
        (Some(s), _, _) if s.is_empty() => {
            return Err(("seeds".into(), "is empty".into()));
        }
        (Some(s), Some(r), _) if r as usize != s.len() => {
            return Err((
                "repeats".into(),
                format!(
                    "is {r} but `seeds` lists {} seeds; give one of them",
                    s.len()
                ),
            ));
        }
        (Some(_), _, Some(_)) => {
            return Err((
                "seed".into(),
                "cannot be given with `seeds` (each seed is listed there)".into(),
            ));
        }
        (None, Some(0), _) => return Err(("repeats".into(), "must be at least 1".into())),
        _ => {}
    }
    if file.concurrency == Some(0) {
        return Err(("concurrency".into(), "must be at least 1".into()));
    }
    if let Some((key, message)) = file.batch.invalid() {
        return Err((key.into(), message.into()));
    }
    for (name, m) in &file.models {
        if m.batch != Some(true) {
            continue;
        }
        if !file.gateway.cache {
            return Err((
                format!("models.{name}.batch"),
                "needs the cache (`gateway.cache = true`): batch answers land in it".into(),
            ));
        }
        if m.provider != "openai" {
            return Err((
                format!("models.{name}.batch"),
                format!(
                    "needs provider `openai` (an endpoint with OpenAI's Batch API), not `{}`",
                    m.provider
                ),
            ));
        }
    }
    if file.gateway.game_concurrency == Some(0) {
        return Err((
            "gateway.game_concurrency".into(),
            "must be at least 1".into(),
        ));
    }
    Ok(())
}

/// The `[axes]` table: each setting's values, checked one by one as an arm's settings would be.
fn read_axes(file: &SweepFile) -> Result<Vec<(String, Vec<Settings>)>, KeyError> {
    let mut axes = Vec::new();
    for (key, value) in &file.axes {
        if !SETTING_KEYS.contains(&key.as_str()) {
            return Err((
                format!("axes.{key}"),
                format!(
                    "unknown setting (expected one of {})",
                    SETTING_KEYS.join(", ")
                ),
            ));
        }
        let Some(list) = value.as_array() else {
            return Err((format!("axes.{key}"), "expected a list of values".into()));
        };
        if list.is_empty() {
            return Err((format!("axes.{key}"), "lists no value".into()));
        }
        let mut values = Vec::new();
        for (i, v) in list.iter().enumerate() {
            let mut one = toml::Table::new();
            one.insert(key.clone(), v.clone());
            let s: Settings =
                toml::Value::Table(one)
                    .try_into()
                    .map_err(|e: toml::de::Error| {
                        (format!("axes.{key}[{i}]"), e.message().to_string())
                    })?;
            if values.contains(&s) {
                return Err((
                    format!("axes.{key}[{i}]"),
                    "repeats an earlier value".into(),
                ));
            }
            values.push(s);
        }
        for (i, arm) in file.arms.iter().enumerate() {
            if arm.set_keys().iter().any(|(k, _)| k == key) {
                return Err((
                    format!("arms[{i}].{key}"),
                    format!("is also an axis (`axes.{key}`); set it in one place"),
                ));
            }
        }
        axes.push((key.clone(), values));
    }
    Ok(axes)
}

/// The models table: providers, prices, limits and context windows.
fn check_models(file: &SweepFile) -> Result<(), KeyError> {
    for (name, m) in &file.models {
        let at = |field: &str| format!("models.{name}.{field}");
        match m.provider.as_str() {
            "simulated" | "openai" => {}
            other => {
                return Err((
                    at("provider"),
                    format!("unknown provider `{other}` (expected `simulated` or `openai`)"),
                ))
            }
        }
        for (field, v) in [
            ("input_usd_per_mtok", m.input_usd_per_mtok),
            ("cached_input_usd_per_mtok", m.cached_input_usd_per_mtok),
            ("output_usd_per_mtok", m.output_usd_per_mtok),
        ] {
            if v.is_some_and(|x| x.is_nan() || x < 0.0) {
                return Err((at(field), "expected a price ≥ 0".into()));
            }
        }
        if m.input_usd_per_mtok.is_some() != m.output_usd_per_mtok.is_some() {
            return Err((
                at("output_usd_per_mtok"),
                "give both input_usd_per_mtok and output_usd_per_mtok, or neither".into(),
            ));
        }
        for (field, v) in [
            ("rpm", m.rpm),
            ("tpm", m.tpm),
            ("max_concurrency", m.max_concurrency),
        ] {
            if v == Some(0) {
                return Err((
                    at(field),
                    "must be at least 1 (leave it out for no limit)".into(),
                ));
            }
        }
        if m.context_window.is_some_and(|w| w < 256) {
            return Err((
                at("context_window"),
                "expected at least 256 tokens (leave it out to ask the endpoint)".into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LoadedSweep, SweepError> {
        LoadedSweep::parse(Path::new("/x/sweep.toml"), text.to_string())
    }

    #[test]
    fn a_small_sweep_reads() {
        let s = parse(
            r#"
name = "rounds"
scripts = ["a.toml"]
repeats = 2
seed = 10
[game]
protocol = "wellplay"
[axes]
rounds = [1, 3]
framework = ["player", "ocot"]
"#,
        )
        .expect("reads");
        assert_eq!(s.seeds(), vec![10, 11]);
        assert_eq!(s.axes.len(), 2);
        assert_eq!(s.out_dir(), PathBuf::from("/x/runs/rounds"));
        assert_eq!(s.resolve("a.toml"), PathBuf::from("/x/a.toml"));
    }

    #[test]
    fn errors_name_the_file_and_key() {
        let cases = [
            ("name = \"x\"\nscripts = [\"a\"]\nfoo = 1\n", "foo"),
            ("name = \"x\"\nscripts = [\"a\"]\n[game]\nrounds = \"three\"\n", "rounds"),
            ("name = \"x\"\nscripts = [\"a\"]\n[axes]\nroundz = [1]\n", "axes.roundz"),
            ("name = \"x\"\nscripts = [\"a\"]\n[axes]\nrounds = 3\n", "axes.rounds"),
            ("name = \"x\"\nscripts = [\"a\"]\n[axes]\nrounds = [1, \"x\"]\n", "axes.rounds[1]"),
            ("name = \"x\"\nscripts = [\"a\"]\n[axes]\nrounds = [1, 1]\n", "axes.rounds[1]"),
            (
                "name = \"x\"\nscripts = [\"a\"]\n[axes]\nrounds = [1]\n[[arms]]\nrounds = 2\n",
                "arms[0].rounds",
            ),
            ("name = \"x\"\nscripts = [\"a\"]\n[models.m]\nprovider = \"acme\"\n", "models.m.provider"),
            ("name = \"x\"\nscripts = [\"a\"]\n[models.m]\nprovider = \"openai\"\nrpm = 0\n", "models.m.rpm"),
            ("name = \"x\"\nscripts = [\"a\"]\n[models.m]\nprovider = \"openai\"\nkey = \"sk\"\n", "key"),
            ("name = \"x\"\nscripts = [\"a\"]\n[models.m]\nprovider = \"openai\"\nstructured = \"json\"\n", "json_object"),
            ("name = \"x\"\nscripts = [\"a\"]\n[models.m]\nprovider = \"openai\"\ntoken_limit = \"max\"\n", "max_completion_tokens"),
            ("name = \"x\"\nscripts = []\n", "scripts"),
            ("name = \"x\"\nscripts = [\"a\"]\nseeds = [1, 2]\nrepeats = 3\n", "repeats"),
            ("name = \"x\"\nscripts = [\"a\"]\n[budget]\nmax_usd = -1\n", "budget.max_usd"),
            ("name = \"x\"\nscripts = [\"a\"]\n[budget]\nmax_dollars = 1\n", "max_dollars"),
        ];
        for (text, key) in cases {
            let err = parse(text)
                .err()
                .unwrap_or_else(|| panic!("accepted: {text}"));
            let msg = err.to_string();
            assert!(msg.contains("/x/sweep.toml"), "{msg}");
            assert!(msg.contains(key), "`{key}` not named in: {msg}");
        }
    }

    #[test]
    fn a_models_endpoint_settings_read() {
        let text = "name = \"x\"\nscripts = [\"a\"]\n[models.m]\nprovider = \"openai\"\nstructured = \"json_object\"\ntoken_limit = \"max_tokens\"\n[models.n]\nprovider = \"openai\"\n";
        let s = parse(text).unwrap_or_else(|e| panic!("{e}"));
        let m = &s.file.models["m"];
        assert_eq!(m.structured, Some(StructuredMode::JsonObject));
        assert_eq!(m.token_limit, Some(TokenLimit::MaxTokens));
        let n = &s.file.models["n"];
        assert_eq!((n.structured, n.token_limit), (None, None));
    }

    #[test]
    fn overlay_and_labels() {
        let base = Settings {
            protocol: Some("wellplay".into()),
            rounds: Some(3),
            ..Settings::default()
        };
        let arm = Settings {
            rounds: Some(5),
            framework: Some("player".into()),
            ..Settings::default()
        };
        let merged = base.overlay(&arm);
        assert_eq!(merged.rounds, Some(5));
        assert_eq!(merged.protocol.as_deref(), Some("wellplay"));
        assert_eq!(
            arm.set_keys(),
            vec![
                ("framework".to_string(), "player".to_string()),
                ("rounds".to_string(), "5".to_string())
            ]
        );
    }
}
