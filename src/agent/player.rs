//! PLAYER* (WellPlay paper §2.3, Algorithm 1, Appendix C.5; PROTOCOLS.md §3): sensors, a suspicion
//! state per victim, questioning driven by a suspect list, and a pruner that refines that list.
//!
//! ## A round
//!
//! Nothing tells a character that a round has begun except the round number of the host's `Ask`
//! requests, so the first `ask` of a new round (WellPlay rounds and ThinkThrice open rounds count from
//! 1) runs the round's planning before it asks anything:
//!
//! 1. **Sensors.** For every other player, one structured call per sensor of
//!    `prompts/player/sensors.toml` (one per victim for sensors marked `per_victim`: a motive or an
//!    opportunity is about one crime), from the agent's script sentences about that player (BM25) and
//!    its recalled dialog about them (top-k memory). The options are lettered; the reading is the
//!    distribution over the letters read from the token log-probabilities when the provider reports
//!    them (the reference implementation's way), else the parsed answer as a certainty. Each reading is
//!    a private `sensor` event (target, sensor, value, method `logprobs`|`parsed`, probabilities).
//! 2. **Pruner.** Each victim's suspicion state and suspect list are updated from the readings (formula
//!    below) and published as a private `suspects` event (victim, before, after, reasons per player).
//!
//! Every `ask` then questions one player: the forced target during ThinkThrice's initial questioning
//! (round 0, before any sensing), else the best player on the suspect lists (a private `target` event
//! says why), with a question written from the script, the dialog and a summary of the sensor readings
//! about that player. Before the vote the agent senses and prunes once more, so the last round's answers
//! count; the vote is chosen from the suspicion state and the recalled dialog.
//!
//! ## The pruner
//!
//! For this agent, victim k and another player j:
//!
//! - a sensor reading is a distribution p over the sensor's options, each option scored c ∈ [0, 1] in
//!   `sensors.toml`; its value is the expectation E = Σₒ p(o)·c(o);
//! - evidence x_kj = Σₛ wₛ·Eₛ(j, k) / Σₛ wₛ over the suspicion sensors (emotion 0.2, motive 0.4,
//!   opportunity 0.4 — the weights are in `sensors.toml`);
//! - suspicion s_kj ← (1 − α)·s_kj + α·x_kj with α = 0.6, starting from s = 0.5. The readings already
//!   draw on all dialog so far, so smoothing only damps retrieval noise; one round of strong evidence
//!   still overturns a belief (0.2 → 0.68 on a full reading);
//! - P_informative(j) = v_j / (1 + q_j), where v_j is the information-value sensor's expectation and q_j
//!   the number of questions this agent has already asked j: the expected reward of asking the same
//!   player again falls in proportion to what was already asked (paper §2.3, "Action Space
//!   Refinement");
//! - priority π_kj = s_kj · (1 − β + β·P_informative(j)) with β = 0.5: suspicion leads, and a player
//!   with nothing more to give loses at most half of it;
//! - suspect list_k = { j : π_kj ≥ mean over j′ of π_kj′ }, ordered by priority: the players at or above
//!   the average priority. A relative cut, because what matters is who stands out, and models differ in
//!   how far their probabilities spread (the simulated model's stay close to uniform); a fixed threshold
//!   would keep everyone under one model and no one under another. The list shrinks to one when someone
//!   stands out, grows when the evidence evens out and changes hands as questions use up a player's
//!   information value (the paper puts no hard limit on refinement); it is never empty, and with no
//!   evidence at all it keeps everyone.
//!
//! When choosing whom to ask, π is recomputed with the questions asked so far in the round, so with m > 1
//! questions per round a second question goes to the same player only if they still lead.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::character::{schema, State, TurnBuilder};
use super::prompts::PromptError;
use super::AgentError;
use crate::llm::{Phase, ResponseSchema, TokenLogprob};
use crate::script::{option_letter, Language};
use crate::text::{self, Bm25};

/// Gameplay prompts of this framework (`prompts/player/<lang>/<purpose>.j2`).
pub const PURPOSES: &[&str] = &[
    "system",
    "introduce",
    "sensor",
    "question",
    "answer",
    "vote",
];

/// The sensor definitions, compiled in: the sensors are part of the framework, not of a prompt set, so
/// `--prompts-dir` replaces the templates but not these.
const SENSORS_TOML: &str = include_str!("../../prompts/player/sensors.toml");
const SENSORS_PATH: &str = "prompts/player/sensors.toml";

/// Weight of the newest evidence in the suspicion state (α).
const ALPHA: f64 = 0.6;
/// Suspicion of every player before any reading: no opinion either way.
const PRIOR: f64 = 0.5;
/// Share of the priority that depends on the information value (β).
const BETA: f64 = 0.5;
/// Slack when comparing a priority with the mean, so that equal priorities all stay despite rounding.
const TIE: f64 = 1e-9;
/// Information value assumed before the information sensor has read a player.
const INFO_PRIOR: f64 = 0.5;

/// Script sentences shown per sensor call and per question (the paper retrieves the script about the
/// player and the victim).
const SCRIPT_FACTS: usize = 6;
/// Script sentences shown when answering.
const ANSWER_FACTS: usize = 8;
/// A sensor answer is a letter and a sentence or two.
const SENSOR_TOKENS: u32 = 120;
const QUESTION_TOKENS: u32 = 150;
const VOTE_TOKENS: u32 = 150;

/// Per-character state of the framework.
#[derive(Debug, Default)]
pub struct PlayerState {
    /// One per victim (a single pseudo-victim when the script names none), in script order; empty until
    /// the agent first needs it.
    victims: Vec<VictimState>,
    /// Questions this agent has asked each player so far.
    asked: BTreeMap<String, u32>,
    /// The last questioning round whose sensing and pruning ran (0: none yet).
    last_round: u32,
    /// The latest reading per (sensor, player, victim); the victim is empty for sensors read once per
    /// player.
    readings: BTreeMap<(String, String, String), Reading>,
}

/// The agent's belief about one victim.
#[derive(Debug, Clone)]
struct VictimState {
    name: String,
    /// Suspicion s_kj of each other player, in [0, 1].
    suspicion: BTreeMap<String, f64>,
    /// Whom the agent is questioning about this victim, by priority.
    suspects: Vec<String>,
}

/// One sensor reading: a distribution over the sensor's options.
#[derive(Debug, Clone, PartialEq)]
struct Reading {
    /// The option taken (most probable under log-probabilities, else the one the model wrote).
    choice: usize,
    probs: Vec<f64>,
    method: Method,
}

/// Where a sensor reading came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    /// The token log-probabilities of the option letters.
    Logprobs,
    /// The answer as parsed, taken as certain: the provider reported no log-probabilities.
    Parsed,
    /// Neither: every option equally likely (only if a reply carried no usable choice at all).
    Uniform,
}

impl Method {
    fn as_str(self) -> &'static str {
        match self {
            Method::Logprobs => "logprobs",
            Method::Parsed => "parsed",
            Method::Uniform => "uniform",
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// The sensor file

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SensorFile {
    sensors: Vec<Sensor>,
}

/// What a sensor's readings are used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SensorRole {
    /// Part of the suspicion score.
    Suspicion,
    /// The pruner's information value.
    Information,
}

/// One sensor of `sensors.toml` (the file's header documents the fields).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sensor {
    name: String,
    role: SensorRole,
    #[serde(default)]
    weight: f64,
    per_victim: bool,
    questioning: bool,
    title: Localized,
    question: Localized,
    choices: Vec<SensorChoice>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SensorChoice {
    score: f64,
    label: Localized,
    hint: Localized,
}

/// A text in every prompt language.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Localized {
    en: String,
    zh: String,
}

impl Localized {
    fn get(&self, lang: Language) -> &str {
        match lang {
            Language::En => &self.en,
            Language::Zh => &self.zh,
        }
    }
}

impl Sensor {
    /// The expected score of a reading: how strongly it points at guilt (or at more to learn).
    fn expectation(&self, r: &Reading) -> f64 {
        self.choices
            .iter()
            .zip(&r.probs)
            .map(|(c, p)| c.score * p)
            .sum()
    }

    /// The victim part of a reading's key.
    fn victim_key<'a>(&self, victim: &'a str) -> &'a str {
        if self.per_victim {
            victim
        } else {
            ""
        }
    }
}

/// Why `sensors.toml` was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {}", SENSORS_PATH, .0)]
struct SensorFileError(String);

fn parse_sensors(text: &str) -> Result<Vec<Sensor>, SensorFileError> {
    let file: SensorFile =
        toml::from_str(text).map_err(|e| SensorFileError(e.to_string().trim().to_string()))?;
    validate_sensors(&file.sensors).map_err(SensorFileError)?;
    Ok(file.sensors)
}

/// Checks what the code relies on: lettered options with scores in [0, 1], texts in every language,
/// known placeholders, positive weights, and exactly one information sensor for the pruner.
fn validate_sensors(sensors: &[Sensor]) -> Result<(), String> {
    if sensors.is_empty() {
        return Err("no [[sensors]]".into());
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, s) in sensors.iter().enumerate() {
        let at = format!("sensors[{i}]");
        if s.name.trim().is_empty() {
            return Err(format!("{at}.name is empty"));
        }
        if !names.insert(s.name.as_str()) {
            return Err(format!("{at}.name `{}` is used twice", s.name));
        }
        let at = format!("{at} ({})", s.name);
        for (field, t) in [("title", &s.title), ("question", &s.question)] {
            check_localized(t, &format!("{at}.{field}"))?;
        }
        for (lang, q) in [("en", &s.question.en), ("zh", &s.question.zh)] {
            for p in placeholders(q) {
                if p != "target" && p != "victim" {
                    return Err(format!(
                        "{at}.question.{lang} has the placeholder {{{p}}} (expected {{target}} or {{victim}})"
                    ));
                }
            }
        }
        match s.role {
            SensorRole::Suspicion if !(s.weight.is_finite() && s.weight > 0.0) => {
                return Err(format!(
                    "{at}.weight is {}, expected a number above 0 for a suspicion sensor",
                    s.weight
                ))
            }
            SensorRole::Information if s.per_victim => {
                return Err(format!(
                "{at}.per_victim is true, but the information value is about a player, not a crime"
            ))
            }
            SensorRole::Information if s.weight != 0.0 => {
                return Err(format!(
                    "{at}.weight is set, but only suspicion sensors have a weight"
                ))
            }
            _ => {}
        }
        if !(2..=26).contains(&s.choices.len()) {
            return Err(format!(
                "{at}.choices has {} options, expected 2 to 26",
                s.choices.len()
            ));
        }
        for (j, c) in s.choices.iter().enumerate() {
            let at = format!("{at}.choices[{j}]");
            if !(c.score.is_finite() && (0.0..=1.0).contains(&c.score)) {
                return Err(format!("{at}.score is {}, expected 0 to 1", c.score));
            }
            check_localized(&c.label, &format!("{at}.label"))?;
            check_localized(&c.hint, &format!("{at}.hint"))?;
            for lang in [Language::En, Language::Zh] {
                let label = c.label.get(lang);
                if s.choices[..j].iter().any(|o| o.label.get(lang) == label) {
                    return Err(format!(
                        "{at}.label.{} `{label}` is used twice",
                        lang.code()
                    ));
                }
            }
        }
    }
    let info = sensors
        .iter()
        .filter(|s| s.role == SensorRole::Information)
        .count();
    if info != 1 {
        return Err(format!(
            "{info} sensors have role = \"information\", expected exactly one (the pruner's information value)"
        ));
    }
    if !sensors.iter().any(|s| s.role == SensorRole::Suspicion) {
        return Err("no sensor has role = \"suspicion\"".into());
    }
    Ok(())
}

fn check_localized(t: &Localized, at: &str) -> Result<(), String> {
    for lang in [Language::En, Language::Zh] {
        if t.get(lang).trim().is_empty() {
            return Err(format!("{at}.{} is empty", lang.code()));
        }
    }
    Ok(())
}

/// The `{name}` placeholders of a text.
fn placeholders(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                out.push(&after[..close]);
                rest = &after[close + 1..];
            }
            None => {
                out.push(after);
                break;
            }
        }
    }
    out
}

/// The sensors, parsed and validated once per process.
fn sensors() -> Result<&'static [Sensor], PromptError> {
    static SENSORS: OnceLock<Result<Vec<Sensor>, SensorFileError>> = OnceLock::new();
    match SENSORS.get_or_init(|| parse_sensors(SENSORS_TOML)) {
        Ok(s) => Ok(s),
        Err(e) => Err(PromptError::Template {
            name: SENSORS_PATH.into(),
            message: e.0.clone(),
        }),
    }
}

// ---------------------------------------------------------------------------------------------------
// Reading an option from log-probabilities

/// An option chosen from a structured reply.
#[derive(Debug, Clone, PartialEq)]
struct Pick {
    index: usize,
    probs: Vec<f64>,
    method: Method,
}

/// Chooses one of the option `letters`: by log-probability when `logprobs` has the choice token, else
/// the `parsed` letter, else uniformly (index 0).
fn choose_option(
    letters: &[String],
    parsed: Option<&str>,
    logprobs: Option<&[TokenLogprob]>,
) -> Pick {
    if let Some(probs) = logprobs.and_then(|lps| option_distribution(letters, lps)) {
        let index = argmax(&probs);
        return Pick {
            index,
            probs,
            method: Method::Logprobs,
        };
    }
    if let Some(index) = parsed.and_then(|p| letters.iter().position(|l| l == p.trim())) {
        let probs = (0..letters.len())
            .map(|i| if i == index { 1.0 } else { 0.0 })
            .collect();
        return Pick {
            index,
            probs,
            method: Method::Parsed,
        };
    }
    let n = letters.len().max(1) as f64;
    Pick {
        index: 0,
        probs: vec![1.0 / n; letters.len()],
        method: Method::Uniform,
    }
}

/// The distribution over the option letters at the first output token that is one of them. The schema
/// puts the choice first, so that token is the answer (a letter in the reason comes later). The simulated
/// model reports one entry per enum with every option in `top`; an HTTP model reports every token with
/// its five best alternatives, possibly with quotes or spaces attached (`"A`, ` B`), which are merged.
/// Options absent from the alternatives get probability 0.
fn option_distribution(letters: &[String], lps: &[TokenLogprob]) -> Option<Vec<f64>> {
    let norm = |t: &str| {
        t.trim_matches(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .to_string()
    };
    let position = |t: &str| {
        let t = norm(t);
        letters.iter().position(|l| *l == t)
    };
    let at = lps.iter().find(|t| position(&t.token).is_some())?;
    let mut lp: Vec<Option<f64>> = vec![None; letters.len()];
    let add = |lp: &mut Vec<Option<f64>>, token: &str, x: f64| {
        if x.is_nan() || x == f64::INFINITY {
            return;
        }
        if let Some(i) = position(token) {
            lp[i] = Some(match lp[i] {
                Some(y) => log_sum_exp(y, x),
                None => x,
            });
        }
    };
    for (t, x) in &at.top {
        add(&mut lp, t, *x);
    }
    // The chosen token itself, if the alternatives left it out.
    if let Some(i) = position(&at.token) {
        if lp[i].is_none() {
            add(&mut lp, &at.token, at.logprob);
        }
    }
    let max = lp
        .iter()
        .flatten()
        .cloned()
        .fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return None;
    }
    let weights: Vec<f64> = lp
        .iter()
        .map(|x| x.map_or(0.0, |x| (x - max).exp()))
        .collect();
    let z: f64 = weights.iter().sum();
    (z > 0.0).then(|| weights.iter().map(|w| w / z).collect())
}

fn log_sum_exp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// Index of the largest value; the first on ties.
fn argmax(xs: &[f64]) -> usize {
    let mut best = 0;
    for (i, x) in xs.iter().enumerate() {
        if x.total_cmp(&xs[best]).is_gt() {
            best = i;
        }
    }
    best
}

// ---------------------------------------------------------------------------------------------------
// The pruner's formula (see the module documentation)

/// The probability that questioning a player again is informative: their information value,
/// discounted in proportion to the questions already asked of them.
fn informative(value: f64, asked: u32) -> f64 {
    value.clamp(0.0, 1.0) / (1.0 + f64::from(asked))
}

/// The suspicion state after a round's evidence.
fn update_suspicion(prev: f64, evidence: f64) -> f64 {
    ((1.0 - ALPHA) * prev + ALPHA * evidence).clamp(0.0, 1.0)
}

/// How much a player is worth questioning about a victim.
fn priority(suspicion: f64, p_informative: f64) -> f64 {
    suspicion * (1.0 - BETA + BETA * p_informative)
}

/// The weighted mean of (weight, value) pairs; `None` without any weight.
fn weighted_mean(parts: &[(f64, f64)]) -> Option<f64> {
    let w: f64 = parts.iter().map(|p| p.0).sum();
    (w > 0.0).then(|| parts.iter().map(|(w, x)| w * x).sum::<f64>() / w)
}

/// The suspect list: players at or above the mean priority, best first (cast order on ties). Never
/// empty when there is anyone to suspect.
fn suspect_list(priorities: &[(String, f64)]) -> Vec<String> {
    if priorities.is_empty() {
        return Vec::new();
    }
    let mean = priorities.iter().map(|p| p.1).sum::<f64>() / priorities.len() as f64;
    let mut kept: Vec<(usize, &(String, f64))> = priorities
        .iter()
        .enumerate()
        .filter(|(_, p)| p.1 + TIE >= mean)
        .collect();
    kept.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1).then(a.0.cmp(&b.0)));
    kept.into_iter().map(|(_, p)| p.0.clone()).collect()
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn percent(x: f64) -> u32 {
    (x.clamp(0.0, 1.0) * 100.0).round() as u32
}

// ---------------------------------------------------------------------------------------------------
// Prompt variables: one struct per template, so the unit tests render with exactly what the calls pass.

#[derive(Debug, Serialize)]
struct IntroducePrompt<'a> {
    host_line: &'a str,
    murderer: bool,
}

#[derive(Debug, Serialize)]
struct OptionLine<'a> {
    letter: String,
    label: &'a str,
    hint: &'a str,
}

#[derive(Debug, Serialize)]
struct SensorPrompt<'a> {
    target: &'a str,
    victim: &'a str,
    murderer: bool,
    /// This agent killed `victim`.
    killed: bool,
    script: &'a [String],
    dialog: &'a [String],
    options: Vec<OptionLine<'a>>,
    question: String,
}

#[derive(Debug, Serialize)]
struct ReadingLine<'a> {
    title: &'a str,
    victim: Option<&'a str>,
    value: &'a str,
    percent: u32,
}

#[derive(Debug, Serialize)]
struct QuestionPrompt<'a> {
    target: &'a str,
    victim: &'a str,
    killed: bool,
    script: &'a [String],
    dialog: &'a [String],
    readings: Vec<ReadingLine<'a>>,
    /// Overall suspicion of `target` for `victim`, in percent.
    suspicion: u32,
    asked: u32,
}

#[derive(Debug, Serialize)]
struct AnswerPrompt<'a> {
    asker: &'a str,
    question: &'a str,
    murderer: bool,
    script: &'a [String],
    dialog: &'a [String],
}

#[derive(Debug, Serialize)]
struct SuspectLine {
    name: String,
    percent: u32,
    suspect: bool,
    /// The readings that point at guilt, as "title: value".
    reasons: Vec<String>,
}

#[derive(Debug, Serialize)]
struct VictimNotes {
    victim: String,
    players: Vec<SuspectLine>,
}

#[derive(Debug, Serialize)]
struct VotePrompt<'a> {
    vote_call: &'a str,
    victims: &'a str,
    candidates: &'a [String],
    murderer: bool,
    dialog: &'a [String],
    suspicion: Vec<VictimNotes>,
}

// ---------------------------------------------------------------------------------------------------
// Helpers over the character's state

/// The language of the agent's prompts (the script's, or `--lang`).
fn lang(st: &State) -> Language {
    st.args
        .prompts
        .lang()
        .parse()
        .unwrap_or(st.args.script.language)
}

/// The other players, in cast order.
fn others(st: &State) -> Vec<String> {
    st.args
        .script
        .characters
        .iter()
        .filter(|c| c.name != st.name())
        .map(|c| c.name.clone())
        .collect()
}

/// Sets up the suspicion state on first use: every other player suspected of every victim at the
/// prior, as the paper's roster starts with everyone but oneself.
fn ensure_state(st: &mut State) {
    if !st.player.victims.is_empty() {
        return;
    }
    let others = others(st);
    let mut names: Vec<String> = st
        .args
        .script
        .victims
        .iter()
        .map(|v| v.name.clone())
        .collect();
    if names.is_empty() {
        names.push(
            match lang(st) {
                Language::En => "the victim",
                Language::Zh => "死者",
            }
            .to_string(),
        );
    }
    st.player.victims = names
        .into_iter()
        .map(|name| VictimState {
            name,
            suspicion: others.iter().map(|o| (o.clone(), PRIOR)).collect(),
            suspects: others.clone(),
        })
        .collect();
}

fn victim_names(st: &State) -> Vec<String> {
    st.player.victims.iter().map(|v| v.name.clone()).collect()
}

fn joined(st: &State, names: &[String]) -> String {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    st.lines().join(&refs)
}

/// Whether this agent killed `victim` (a murderer whose script lists no victims killed them all).
fn killed(st: &State, victim: &str) -> bool {
    if !st.murderer {
        return false;
    }
    match st.args.script.character(st.name()) {
        Some(c) if !c.killed.is_empty() => c.killed.iter().any(|k| k == victim),
        _ => true,
    }
}

/// The sentences of the agent's script handed out so far. `State::facts` holds every act; under the
/// WellPlay protocol later acts arrive during the game and must not be drawn on before then. A
/// murderer's secrets are left out, as in `State::facts`.
fn released_facts(st: &State) -> Vec<String> {
    let Some(c) = st.args.script.character(st.name()) else {
        return st.facts.clone();
    };
    let mut out = text::sentences(&c.story);
    out.extend(text::sentences(&c.timeline));
    out.extend(
        c.acts
            .iter()
            .take(st.acts_released.max(1) as usize)
            .flat_map(|a| text::sentences(a)),
    );
    out.extend(c.relationships.iter().flat_map(|r| text::sentences(r)));
    if !st.murderer {
        out.extend(c.secrets.iter().flat_map(|s| text::sentences(s)));
    }
    out
}

/// The `n` script sentences most relevant to `query` (BM25), best first.
fn script_about(st: &State, query: &str, n: usize) -> Vec<String> {
    let facts = released_facts(st);
    let scores = Bm25::new(&facts).scores(query);
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order
        .into_iter()
        .take(n)
        .map(|i| facts[i].clone())
        .collect()
}

/// The latest reading of `sensor` about `target` (and `victim`, for a sensor read per victim).
fn reading<'a>(st: &'a State, sensor: &Sensor, target: &str, victim: &str) -> Option<&'a Reading> {
    st.player.readings.get(&(
        sensor.name.clone(),
        target.to_string(),
        sensor.victim_key(victim).to_string(),
    ))
}

/// The information value v_j of a player (the prior before any reading).
fn information_value(st: &State, sensors: &[Sensor], target: &str) -> f64 {
    sensors
        .iter()
        .find(|s| s.role == SensorRole::Information)
        .and_then(|s| reading(st, s, target, "").map(|r| s.expectation(r)))
        .unwrap_or(INFO_PRIOR)
}

/// Evidence x_kj from the latest suspicion readings; `None` before any.
fn evidence(st: &State, sensors: &[Sensor], target: &str, victim: &str) -> Option<f64> {
    let parts: Vec<(f64, f64)> = sensors
        .iter()
        .filter(|s| s.role == SensorRole::Suspicion)
        .filter_map(|s| reading(st, s, target, victim).map(|r| (s.weight, s.expectation(r))))
        .collect();
    weighted_mean(&parts)
}

/// The priority π of questioning `target` about victim `k` now, with the questions asked so far.
fn priority_now(st: &State, sensors: &[Sensor], k: usize, target: &str) -> f64 {
    let s = st.player.victims[k]
        .suspicion
        .get(target)
        .copied()
        .unwrap_or(PRIOR);
    let q = st.player.asked.get(target).copied().unwrap_or(0);
    priority(s, informative(information_value(st, sensors, target), q))
}

/// The readings that point at guilt (choice score above one half), as "title: value".
fn guilty_signs(
    st: &State,
    sensors: &[Sensor],
    lang: Language,
    target: &str,
    victim: &str,
) -> Vec<String> {
    sensors
        .iter()
        .filter(|s| s.role == SensorRole::Suspicion)
        .filter_map(|s| {
            let r = reading(st, s, target, victim)?;
            let c = s.choices.get(r.choice)?;
            (c.score > 0.5).then(|| format!("{}: {}", s.title.get(lang), c.label.get(lang)))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------------
// Sensing and pruning

/// Runs every sensor on every other player, then the pruner. `round` is `None` for the update before the
/// vote.
async fn sense_and_prune(
    st: &mut State,
    turn: &mut TurnBuilder,
    round: Option<u32>,
) -> Result<(), AgentError> {
    let sensors = sensors()?;
    ensure_state(st);
    let victims = victim_names(st);
    let all_victims = joined(st, &victims);
    for target in others(st) {
        let query = st.lines().query_about(&target, &all_victims);
        let dialog = st.recall_texts(turn, &query, Phase::Gameplay).await?;
        for sensor in sensors {
            let about: Vec<&str> = if sensor.per_victim {
                victims.iter().map(String::as_str).collect()
            } else {
                vec![all_victims.as_str()]
            };
            for victim in about {
                read_sensor(st, turn, sensor, &target, victim, &dialog, round).await?;
            }
        }
    }
    prune(st, turn, sensors, round);
    Ok(())
}

/// A sensor answer: the option letter first (its token's log-probabilities are the reading), then why.
fn sensor_schema(letters: &[String]) -> ResponseSchema {
    schema(
        "sensor",
        json!({"type": "object", "properties": {
            "choice": {"type": "string", "enum": letters},
            "reason": {"type": "string"}
        }, "required": ["choice", "reason"], "additionalProperties": false}),
    )
}

/// One sensor call about `target` (and `victim`), recorded as a `sensor` event and kept as the latest
/// reading.
async fn read_sensor(
    st: &mut State,
    turn: &mut TurnBuilder,
    sensor: &Sensor,
    target: &str,
    victim: &str,
    dialog: &[String],
    round: Option<u32>,
) -> Result<(), AgentError> {
    let lang = lang(st);
    let script = script_about(st, &format!("{target} {victim}"), SCRIPT_FACTS);
    let letters: Vec<String> = (0..sensor.choices.len()).map(option_letter).collect();
    let prompt = SensorPrompt {
        target,
        victim,
        murderer: st.murderer,
        killed: if sensor.per_victim {
            killed(st, victim)
        } else {
            st.murderer
        },
        script: &script,
        dialog,
        options: sensor
            .choices
            .iter()
            .zip(&letters)
            .map(|(c, l)| OptionLine {
                letter: l.clone(),
                label: c.label.get(lang),
                hint: c.hint.get(lang),
            })
            .collect(),
        question: sensor
            .question
            .get(lang)
            .replace("{target}", target)
            .replace("{victim}", victim),
    };
    let user = st.args.prompts.render("sensor", &prompt)?;
    let (_, parsed, logprobs) = st
        .call_full(
            turn,
            "sensor",
            user,
            SENSOR_TOKENS,
            Some(sensor_schema(&letters)),
            Phase::Gameplay,
            true,
        )
        .await?;
    let parsed_letter = parsed
        .as_ref()
        .and_then(|v| v["choice"].as_str())
        .map(str::to_string);
    let reason = parsed
        .as_ref()
        .and_then(|v| v["reason"].as_str())
        .unwrap_or_default()
        .to_string();
    let pick = choose_option(&letters, parsed_letter.as_deref(), logprobs.as_deref());
    let label = sensor
        .choices
        .get(pick.index)
        .map(|c| c.label.get(lang).to_string())
        .unwrap_or_default();
    let probabilities: Map<String, Value> = sensor
        .choices
        .iter()
        .zip(&pick.probs)
        .map(|(c, p)| (c.label.get(lang).to_string(), json!(round3(*p))))
        .collect();
    let about = if sensor.per_victim {
        format!(" · {victim}")
    } else {
        String::new()
    };
    let name = st.name().to_string();
    turn.step(
        "sensor",
        &name,
        format!(
            "{} · {target}{about}: {label} [{}]",
            sensor.title.get(lang),
            pick.method.as_str()
        ),
        Some(json!({
            "round": round,
            "target": target,
            "sensor": sensor.name,
            "victim": sensor.per_victim.then_some(victim),
            "value": label,
            "method": pick.method.as_str(),
            "parsed": parsed_letter,
            "probabilities": probabilities,
            "reason": reason,
        })),
    );
    st.player.readings.insert(
        (
            sensor.name.clone(),
            target.to_string(),
            sensor.victim_key(victim).to_string(),
        ),
        Reading {
            choice: pick.index,
            probs: pick.probs,
            method: pick.method,
        },
    );
    Ok(())
}

/// Updates every victim's suspicion state and suspect list from the latest readings and publishes a
/// `suspects` event per victim.
fn prune(st: &mut State, turn: &mut TurnBuilder, sensors: &[Sensor], round: Option<u32>) {
    let lang = lang(st);
    let others = others(st);
    let name = st.name().to_string();
    for k in 0..st.player.victims.len() {
        let victim = st.player.victims[k].name.clone();
        let before = st.player.victims[k].suspects.clone();
        let mut rows: Vec<(String, f64)> = Vec::new();
        let mut reasons = Map::new();
        for j in &others {
            let prev = st.player.victims[k]
                .suspicion
                .get(j)
                .copied()
                .unwrap_or(PRIOR);
            let x = evidence(st, sensors, j, &victim);
            let s = x.map_or(prev, |x| update_suspicion(prev, x));
            st.player.victims[k].suspicion.insert(j.clone(), s);
            let v = information_value(st, sensors, j);
            let q = st.player.asked.get(j).copied().unwrap_or(0);
            let p_inf = informative(v, q);
            let pi = priority(s, p_inf);
            let readings: Map<String, Value> = sensors
                .iter()
                .filter_map(|sn| {
                    let r = reading(st, sn, j, &victim)?;
                    let c = sn.choices.get(r.choice)?;
                    Some((
                        sn.name.clone(),
                        json!({"value": c.label.get(lang), "method": r.method.as_str()}),
                    ))
                })
                .collect();
            reasons.insert(
                j.clone(),
                json!({
                    "suspicion": round3(s),
                    "previous": round3(prev),
                    "evidence": x.map(round3),
                    "information": round3(v),
                    "asked": q,
                    "p_informative": round3(p_inf),
                    "priority": round3(pi),
                    "sensors": readings,
                }),
            );
            rows.push((j.clone(), pi));
        }
        let after = suspect_list(&rows);
        for (j, r) in reasons.iter_mut() {
            r["kept"] = json!(after.contains(j));
        }
        st.player.victims[k].suspects = after.clone();
        let when = match round {
            Some(r) => format!("round {r}"),
            None => "vote".to_string(),
        };
        turn.step(
            "suspects",
            &name,
            format!(
                "{victim} ({when}): {} (was: {})",
                after.join(", "),
                before.join(", ")
            ),
            Some(json!({
                "round": round,
                "victim": victim,
                "before": before,
                "after": after,
                "reasons": reasons,
            })),
        );
    }
}

/// Whom to question and about which victim: among the candidates on a suspect list (every candidate if
/// none is), the highest priority with the questions asked so far, then the fewest questions, then cast
/// order. Returns the player, the victim index and each considered player's priority.
fn choose_target(
    st: &State,
    sensors: &[Sensor],
    candidates: &[String],
) -> Option<(String, usize, Map<String, Value>)> {
    let listed: Vec<&String> = candidates
        .iter()
        .filter(|c| st.player.victims.iter().any(|v| v.suspects.contains(c)))
        .collect();
    let pool: Vec<&String> = if listed.is_empty() {
        candidates.iter().collect()
    } else {
        listed
    };
    let mut scores = Map::new();
    let mut best: Option<(String, usize, f64, u32)> = None;
    for c in pool {
        let on_any = st.player.victims.iter().any(|v| v.suspects.contains(c));
        let mut top: Option<(usize, f64)> = None;
        for (k, v) in st.player.victims.iter().enumerate() {
            if on_any && !v.suspects.contains(c) {
                continue;
            }
            let p = priority_now(st, sensors, k, c);
            if top.is_none_or(|(_, b)| p > b) {
                top = Some((k, p));
            }
        }
        let Some((k, p)) = top else { continue };
        scores.insert(c.clone(), json!(round3(p)));
        let q = st.player.asked.get(c).copied().unwrap_or(0);
        let better = match &best {
            None => true,
            Some((_, _, bp, bq)) => p > *bp || (p == *bp && q < *bq),
        };
        if better {
            best = Some((c.clone(), k, p, q));
        }
    }
    best.map(|(c, k, _, _)| (c, k, scores))
}

/// The victim `target` is most suspected of (the first on ties).
fn likeliest_victim(st: &State, target: &str) -> usize {
    let s: Vec<f64> = st
        .player
        .victims
        .iter()
        .map(|v| v.suspicion.get(target).copied().unwrap_or(PRIOR))
        .collect();
    argmax(&s)
}

/// A question of last resort, for a reply whose question came back empty.
fn fallback_question(lang: Language, target: &str, victim: &str) -> String {
    match lang {
        Language::En => {
            format!("{target}, where were you when {victim} died, and who can confirm it?")
        }
        Language::Zh => format!("{target}，{victim}遇害的时候你在哪里？有谁能证明？"),
    }
}

// ---------------------------------------------------------------------------------------------------
// The framework's actions

/// Self-introduction from the script (in the system prompt): civilians share what helps, murderers may
/// lie. Also loads the sensors, so that a broken sensor file fails the game before any questioning.
pub(super) async fn introduce(
    st: &mut State,
    turn: &mut TurnBuilder,
    host_line: &str,
) -> Result<String, AgentError> {
    sensors()?;
    let user = st.args.prompts.render(
        "introduce",
        &IntroducePrompt {
            host_line,
            murderer: st.murderer,
        },
    )?;
    let budget = st.args.config.max_tokens;
    let (text, _) = st
        .call(turn, "introduce", user, budget, None, Phase::Gameplay)
        .await?;
    Ok(text)
}

/// One question for the chosen player.
fn question_schema() -> ResponseSchema {
    schema(
        "question",
        json!({"type": "object", "properties": {
            "question": {"type": "string"}
        }, "required": ["question"], "additionalProperties": false}),
    )
}

/// One question per call. A new `round` first runs the sensors and the pruner; then the target is the
/// forced one or the best on the suspect lists.
pub(super) async fn ask(
    st: &mut State,
    turn: &mut TurnBuilder,
    target: Option<String>,
    candidates: &[String],
    round: u32,
) -> Result<(String, String), AgentError> {
    let sensors = sensors()?;
    ensure_state(st);
    if round > st.player.last_round {
        sense_and_prune(st, turn, Some(round)).await?;
        st.player.last_round = round;
    }
    let lang = lang(st);
    let (target, k, forced, scores) = match target {
        Some(t) => {
            let k = likeliest_victim(st, &t);
            (t, k, true, Map::new())
        }
        None => match choose_target(st, sensors, candidates) {
            Some((t, k, scores)) => (t, k, false, scores),
            None => {
                return Err(AgentError::Unsupported {
                    framework: "player",
                    request: "ask a question when there is nobody to ask",
                })
            }
        },
    };
    let victim = st.player.victims[k].name.clone();
    let name = st.name().to_string();
    turn.step(
        "target",
        &name,
        format!("{target} · {victim}"),
        Some(json!({
            "round": round,
            "target": target,
            "victim": victim,
            "forced": forced,
            "priorities": scores,
        })),
    );
    let query = st.lines().query_about(&target, &victim);
    let dialog = st.recall_texts(turn, &query, Phase::Gameplay).await?;
    let script = script_about(st, &format!("{target} {victim}"), SCRIPT_FACTS);
    let readings: Vec<ReadingLine> = sensors
        .iter()
        .filter(|s| s.questioning)
        .filter_map(|s| {
            let r = reading(st, s, &target, &victim)?;
            let c = s.choices.get(r.choice)?;
            Some(ReadingLine {
                title: s.title.get(lang),
                victim: s.per_victim.then_some(victim.as_str()),
                value: c.label.get(lang),
                percent: percent(r.probs.get(r.choice).copied().unwrap_or(0.0)),
            })
        })
        .collect();
    let prompt = QuestionPrompt {
        target: &target,
        victim: &victim,
        killed: killed(st, &victim),
        script: &script,
        dialog: &dialog,
        readings,
        suspicion: percent(
            st.player.victims[k]
                .suspicion
                .get(&target)
                .copied()
                .unwrap_or(PRIOR),
        ),
        asked: st.player.asked.get(&target).copied().unwrap_or(0),
    };
    let user = st.args.prompts.render("question", &prompt)?;
    let (_, v) = st
        .call(
            turn,
            "question",
            user,
            QUESTION_TOKENS,
            Some(question_schema()),
            Phase::Gameplay,
        )
        .await?;
    let question = v
        .as_ref()
        .and_then(|v| v["question"].as_str())
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| fallback_question(lang, &target, &victim));
    *st.player.asked.entry(target.clone()).or_default() += 1;
    Ok((target, question))
}

/// An answer in character from the script sentences and dialog relevant to the question.
pub(super) async fn answer(
    st: &mut State,
    turn: &mut TurnBuilder,
    asker: &str,
    question: &str,
) -> Result<String, AgentError> {
    let dialog = st.recall_texts(turn, question, Phase::Gameplay).await?;
    let script = script_about(st, question, ANSWER_FACTS);
    let user = st.args.prompts.render(
        "answer",
        &AnswerPrompt {
            asker,
            question,
            murderer: st.murderer,
            script: &script,
            dialog: &dialog,
        },
    )?;
    let budget = st.args.config.max_tokens;
    let (text, _) = st
        .call(turn, "answer", user, budget, None, Phase::Gameplay)
        .await?;
    Ok(text)
}

/// The vote: one last sensing and pruning so the final round counts, then a choice among `candidates`
/// from the suspicion notes and the recalled dialog.
pub(super) async fn vote(
    st: &mut State,
    turn: &mut TurnBuilder,
    vote_call: &str,
    candidates: &[String],
) -> Result<(String, String), AgentError> {
    let sensors = sensors()?;
    sense_and_prune(st, turn, None).await?;
    let lang = lang(st);
    let victims = victim_names(st);
    let all_victims = joined(st, &victims);
    let dialog = st
        .recall_texts(turn, &st.lines().query_vote(&all_victims), Phase::Gameplay)
        .await?;
    let suspicion: Vec<VictimNotes> = st
        .player
        .victims
        .iter()
        .map(|v| {
            let mut players: Vec<SuspectLine> = candidates
                .iter()
                .map(|c| SuspectLine {
                    name: c.clone(),
                    percent: percent(v.suspicion.get(c).copied().unwrap_or(PRIOR)),
                    suspect: v.suspects.contains(c),
                    reasons: guilty_signs(st, sensors, lang, c, &v.name),
                })
                .collect();
            players.sort_by_key(|p| std::cmp::Reverse(p.percent));
            VictimNotes {
                victim: v.name.clone(),
                players,
            }
        })
        .collect();
    let user = st.args.prompts.render(
        "vote",
        &VotePrompt {
            vote_call,
            victims: &all_victims,
            candidates,
            murderer: st.murderer,
            dialog: &dialog,
            suspicion,
        },
    )?;
    st.pick(
        turn,
        "vote",
        user,
        ("vote", candidates),
        "reason",
        VOTE_TOKENS,
        Phase::Gameplay,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Prompts;

    fn letters(n: usize) -> Vec<String> {
        (0..n).map(option_letter).collect()
    }

    fn lp(token: &str, logprob: f64, top: &[(&str, f64)]) -> TokenLogprob {
        TokenLogprob {
            token: token.into(),
            logprob,
            top: top.iter().map(|(t, x)| (t.to_string(), *x)).collect(),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn pruner_discounts_questioned_players_and_keeps_the_leaders() {
        // Information value falls in proportion to the questions already asked.
        assert!(close(informative(0.8, 0), 0.8));
        assert!(close(informative(0.8, 1), 0.4));
        assert!(close(informative(0.8, 3), 0.2));
        assert!(close(informative(0.0, 0), 0.0));
        // Suspicion moves most of the way to the new evidence, and can be overturned in a round.
        assert!(close(update_suspicion(PRIOR, 1.0), 0.8));
        assert!(close(update_suspicion(0.8, 0.0), 0.32));
        assert!(close(update_suspicion(0.2, 1.0), 0.68));
        // A player with nothing more to give keeps half of their suspicion as priority.
        assert!(close(priority(0.8, 1.0), 0.8));
        assert!(close(priority(0.8, 0.0), 0.4));
        assert!(close(
            weighted_mean(&[(0.2, 1.0), (0.4, 1.0), (0.4, 0.0)]).unwrap_or(-1.0),
            0.6
        ));
        assert_eq!(weighted_mean(&[]), None);

        // Ada leads; Ben is close enough to stay; Cy drops out.
        let rows = |a: f64, b: f64, c: f64| {
            vec![
                ("Ada".to_string(), a),
                ("Ben".to_string(), b),
                ("Cy".to_string(), c),
            ]
        };
        let (s_ada, s_ben, s_cy) = (0.8, 0.7, 0.3);
        let first = rows(
            priority(s_ada, informative(1.0, 0)),
            priority(s_ben, informative(1.0, 0)),
            priority(s_cy, informative(1.0, 0)),
        );
        assert_eq!(suspect_list(&first), vec!["Ada", "Ben"]);
        // New evidence against Cy, and four questions already put to Ada: Ada has little left to give
        // and drops out, suspicion notwithstanding, and Cy comes first.
        let s_cy = update_suspicion(s_cy, 1.0);
        let later = rows(
            priority(s_ada, informative(1.0, 4)),
            priority(s_ben, informative(1.0, 0)),
            priority(s_cy, informative(1.0, 0)),
        );
        assert_eq!(suspect_list(&later), vec!["Cy", "Ben"]);
        // One clear suspect shrinks the list to one; evidence that evens out grows it again; no
        // evidence at all keeps everyone.
        assert_eq!(suspect_list(&rows(0.9, 0.2, 0.1)), vec!["Ada"]);
        assert_eq!(suspect_list(&rows(0.6, 0.55, 0.2)), vec!["Ada", "Ben"]);
        assert_eq!(suspect_list(&rows(0.4, 0.4, 0.4)), vec!["Ada", "Ben", "Cy"]);
        assert_eq!(suspect_list(&rows(0.0, 0.0, 0.0)), vec!["Ada", "Ben", "Cy"]);
        assert!(suspect_list(&[]).is_empty());
    }

    #[test]
    fn options_are_read_from_logprobs_with_a_fallback_to_the_parsed_answer() {
        let abc = letters(3);
        // The simulated model's form: one entry per enum, every option among the alternatives. The
        // most probable option wins even when the sampled one differs.
        let sim = [lp("A", -1.5, &[("A", -1.5), ("B", -0.4), ("C", -2.0)])];
        let p = choose_option(&abc, Some("A"), Some(&sim));
        assert_eq!(p.method, Method::Logprobs);
        assert_eq!(p.index, 1);
        assert!(close(p.probs.iter().sum::<f64>(), 1.0));
        assert!(p.probs[1] > p.probs[0] && p.probs[0] > p.probs[2]);

        // An HTTP model's form: every token, quotes and spaces attached, a duplicate alternative merged,
        // a letter inside the reason ignored, an option missing from the alternatives at 0.
        let http = [
            lp("{\"", -0.01, &[]),
            lp("choice", -0.01, &[]),
            lp("\":\"", -0.01, &[]),
            lp(
                "C",
                -0.3,
                &[("C", -0.3), (" A", -2.0), ("A", -2.0), ("The", -4.0)],
            ),
            lp("\",\"", -0.01, &[]),
            lp(" B", -0.1, &[(" B", -0.1)]),
        ];
        let p = choose_option(&abc, Some("C"), Some(&http));
        assert_eq!(p.method, Method::Logprobs);
        assert_eq!(p.index, 2);
        assert_eq!(p.probs[1], 0.0);
        let (pa, pc) = ((-2.0f64).exp() * 2.0, (-0.3f64).exp());
        assert!(close(p.probs[0], pa / (pa + pc)), "{:?}", p.probs);

        // No log-probabilities, or none on an option letter: the parsed answer, as a certainty.
        for lps in [None, Some(&http[..3])] {
            let p = choose_option(&abc, Some("B"), lps);
            assert_eq!(
                p,
                Pick {
                    index: 1,
                    probs: vec![0.0, 1.0, 0.0],
                    method: Method::Parsed
                }
            );
        }
        // Nothing usable at all: uniform.
        let p = choose_option(&abc, Some("Z"), None);
        assert_eq!(p.method, Method::Uniform);
        assert!(p.probs.iter().all(|x| close(*x, 1.0 / 3.0)));
    }

    #[test]
    fn the_sensor_file_holds_the_papers_sensors_and_choices() {
        let sensors = parse_sensors(SENSORS_TOML).unwrap_or_else(|e| panic!("{e}"));
        let labels = |name: &str| -> Vec<String> {
            sensors
                .iter()
                .find(|s| s.name == name)
                .map(|s| s.choices.iter().map(|c| c.label.en.clone()).collect())
                .unwrap_or_default()
        };
        assert_eq!(labels("emotion"), ["Positive", "Neutral", "Negative"]);
        assert_eq!(labels("motivation"), ["Yes", "No"]);
        assert_eq!(labels("opportunity"), ["Yes", "No"]);
        assert_eq!(labels("information"), ["High", "Medium", "Low"]);
        let info: Vec<&str> = sensors
            .iter()
            .filter(|s| s.role == SensorRole::Information)
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(info, ["information"]);
        // Motive and opportunity are about one crime; emotion and information value about a person.
        let per_victim: Vec<&str> = sensors
            .iter()
            .filter(|s| s.per_victim)
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(per_victim, ["motivation", "opportunity"]);
        assert!(super::sensors().is_ok());
    }

    #[test]
    fn a_broken_sensor_file_is_refused_with_the_field_that_is_wrong() {
        let good = SENSORS_TOML;
        let cases = [
            (
                good.replacen("score = 0.5", "score = 1.5", 1),
                "sensors[0] (emotion).choices[1].score is 1.5",
            ),
            (
                good.replace(
                    "role = \"information\"",
                    "role = \"suspicion\"\nweight = 0.1",
                ),
                "0 sensors have role = \"information\"",
            ),
            (
                good.replacen(
                    "How do you feel about {target}",
                    "How do you feel about {suspect}",
                    1,
                ),
                "sensors[0] (emotion).question.en has the placeholder {suspect}",
            ),
            (
                good.replacen(
                    "label = { en = \"Neutral\"",
                    "label = { en = \"Positive\"",
                    1,
                ),
                "sensors[0] (emotion).choices[1].label.en `Positive` is used twice",
            ),
            (
                good.replacen(
                    "hint = { en = \"I trust them",
                    "hint = { en = \" \", x = \"",
                    1,
                ),
                "unknown field `x`",
            ),
            (
                good.replacen("weight = 0.2", "weight = 0.0", 1),
                "weight is 0",
            ),
            (
                good.replace(
                    "role = \"information\"\nper_victim = false",
                    "role = \"information\"\nper_victim = true",
                ),
                "sensors[3] (information).per_victim is true",
            ),
            ("sensors = 3".to_string(), "invalid type"),
        ];
        for (text, expected) in cases {
            let err = parse_sensors(&text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.starts_with(SENSORS_PATH), "{err}");
            assert!(err.contains(expected), "expected `{expected}` in: {err}");
        }
    }

    #[test]
    fn every_gameplay_prompt_renders_in_both_languages() {
        let sensors = parse_sensors(SENSORS_TOML).unwrap_or_else(|e| panic!("{e}"));
        let script = vec!["At nine I saw Ada on the deck.".to_string()];
        let dialog = vec!["[Ada answered Ben] I was in the saloon.".to_string()];
        for lang in [Language::En, Language::Zh] {
            let prompts =
                Prompts::load("player", lang, None, PURPOSES).unwrap_or_else(|e| panic!("{e}"));
            let sensor = &sensors[1];
            let letters = letters(sensor.choices.len());
            let out = |purpose: &str, r: Result<String, PromptError>| {
                let s = r.unwrap_or_else(|e| panic!("{purpose} ({}): {e}", lang.code()));
                assert!(
                    s.contains("Ada") || purpose == "introduce",
                    "{purpose}: {s}"
                );
                s
            };
            out(
                "introduce",
                prompts.render(
                    "introduce",
                    &IntroducePrompt {
                        host_line: "Please introduce yourself.",
                        murderer: true,
                    },
                ),
            );
            let s = out(
                "sensor",
                prompts.render(
                    "sensor",
                    &SensorPrompt {
                        target: "Ada",
                        victim: "Gideon",
                        murderer: false,
                        killed: false,
                        script: &script,
                        dialog: &dialog,
                        options: sensor
                            .choices
                            .iter()
                            .zip(&letters)
                            .map(|(c, l)| OptionLine {
                                letter: l.clone(),
                                label: c.label.get(lang),
                                hint: c.hint.get(lang),
                            })
                            .collect(),
                        question: sensor.question.get(lang).replace("{target}", "Ada"),
                    },
                ),
            );
            assert!(s.contains("A. ") && s.contains("B. "), "{s}");
            for readings in [
                vec![],
                vec![ReadingLine {
                    title: "Motive",
                    victim: Some("Gideon"),
                    value: "Yes",
                    percent: 71,
                }],
            ] {
                out(
                    "question",
                    prompts.render(
                        "question",
                        &QuestionPrompt {
                            target: "Ada",
                            victim: "Gideon",
                            killed: true,
                            script: &script,
                            dialog: &[],
                            readings,
                            suspicion: 64,
                            asked: 2,
                        },
                    ),
                );
            }
            out(
                "answer",
                prompts.render(
                    "answer",
                    &AnswerPrompt {
                        asker: "Ada",
                        question: "Where were you?",
                        murderer: false,
                        script: &[],
                        dialog: &dialog,
                    },
                ),
            );
            let s = out(
                "vote",
                prompts.render(
                    "vote",
                    &VotePrompt {
                        vote_call: "Time to vote.",
                        victims: "Gideon",
                        candidates: &["Ada".to_string(), "Ben".to_string()],
                        murderer: false,
                        dialog: &dialog,
                        suspicion: vec![VictimNotes {
                            victim: "Gideon".into(),
                            players: vec![SuspectLine {
                                name: "Ada".into(),
                                percent: 71,
                                suspect: true,
                                reasons: vec!["Motive: Yes".into()],
                            }],
                        }],
                    },
                ),
            );
            assert!(s.contains("71"), "{s}");
            let rendered = prompts.rendered();
            for p in PURPOSES.iter().filter(|p| **p != "system") {
                assert!(rendered.contains(*p), "{p} not rendered ({})", lang.code());
            }
        }
    }
}
