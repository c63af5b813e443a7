//! Grouping games into arms: the same script played the same way, repeated over seeds.
//!
//! A *condition* is everything that defines how a game was played except the script and the seed:
//! protocol, framework, the murderers' framework, modules, model and every protocol setting the game
//! recorded (rounds, questions per round, iterations, temperature, judge, …). An *arm* is a condition on
//! one version of one script; its games are the repeats (different seeds). The papers' tables are laid
//! out by condition (a row per method, pooled over scripts) or by arm (script × method).
//!
//! A script is known by its title *and* the content digest its game's spec recorded: a script whose
//! culprit, clues or questions were edited between two runs is another script that happens to share a
//! title, and its games are not repeats of the old one (their votes are scored against another truth).
//! Results written before games recorded a spec have no digest; they are pooled only with each other.
//!
//! Labels name a condition by what tells it apart from the others in the same report: the framework
//! (and ThinkThrice modules, written as the paper does) always, the protocol, model or a setting only
//! when they vary, so a report of one sweep reads "PLAYER* · n=3 · m=1" rather than a dump of settings.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::load::GameRecord;
use sleuth_game::game::GameResult;

/// How a game was played, script and seed aside.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Condition {
    pub protocol: String,
    pub framework: String,
    pub murderer_framework: Option<String>,
    pub modules: String,
    pub model: String,
    /// The murderers' model when it is not `model` (a tournament's games), from the game's spec.
    pub murderer_model: Option<String>,
    /// Every recorded protocol setting, by name, as canonical JSON (object keys sorted), so two
    /// results that list the same settings in another order fall in the same arm.
    pub settings: Vec<(String, String)>,
}

/// Whether the judge of `metric` can grade anything in a game of `r`'s protocol: MIRAGE's judge only
/// in MIRAGE games. A property of the protocol, not of the game's script, so that one condition's
/// games on two scripts (one with factual questions, one without) stay one condition.
fn graded(r: &GameResult, metric: &str) -> bool {
    metric != "mirage" || r.protocol == sleuth_game::game::Protocol::Mirage.as_str()
}

impl Condition {
    /// The condition a game was played under.
    pub fn of(r: &GameResult) -> Condition {
        let settings = match &r.settings {
            Value::Object(map) => {
                let mut v: Vec<(String, String)> = map
                    .iter()
                    .map(|(k, v)| (k.clone(), canonical_json(v)))
                    .collect();
                v.sort();
                v
            }
            Value::Null => Vec::new(),
            other => vec![(String::new(), canonical_json(other))],
        };
        // Games graded by different judges are different conditions, not repeats; a judge that
        // cannot grade anything in the game's protocol (MIRAGE's in a WellPlay game) tells nothing
        // apart.
        let mut settings = settings;
        for (metric, judge) in r.judges.iter().filter(|(m, _)| graded(r, m)) {
            settings.push((
                format!("judge_{metric}"),
                canonical_json(&Value::from(judge.as_str())),
            ));
        }
        settings.sort();
        Condition {
            protocol: r.protocol.clone(),
            framework: r.framework.clone(),
            murderer_framework: r.murderer_framework.clone(),
            modules: r.modules.clone(),
            model: r.model.clone(),
            murderer_model: r
                .spec
                .as_ref()
                .and_then(|s| s.murderer_model.clone())
                .filter(|m| *m != r.model),
            settings,
        }
    }

    /// A setting's canonical JSON text.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A numeric setting (e.g. `rounds`).
    pub fn setting_f64(&self, key: &str) -> Option<f64> {
        self.setting(key).and_then(|v| v.parse::<f64>().ok())
    }

    /// Whether the framework plays no game (PLAYER*'s Personal and Omniscient Perspective references).
    pub fn is_reference(&self) -> bool {
        matches!(self.framework.as_str(), "pp" | "op")
    }
}

/// One part of a condition's label; `setting` names the setting it shows, if any, so a figure can
/// leave out the settings it plots along an axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelPart {
    pub setting: Option<String>,
    /// The part naming the protocol (shown only when the report holds several), which a section
    /// built from one protocol's games leaves out: its title already names the protocol.
    pub protocol: bool,
    /// The part naming the model (shown only when the report holds several), which a figure that
    /// groups conditions by model (ThinkThrice Figure 5) shows once per group instead.
    pub model: bool,
    pub text: String,
}

/// A condition with its place in the report.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionInfo {
    pub key: Condition,
    pub parts: Vec<LabelPart>,
    /// Indices into [`Grouping::games`], in path order.
    pub games: Vec<usize>,
    /// Indices into [`Grouping::arms`].
    pub arms: Vec<usize>,
}

impl ConditionInfo {
    /// The condition's full name, protocol included when the report holds several (notes, and any
    /// place that mixes protocols).
    pub fn label(&self) -> String {
        join_parts(self.parts.iter())
    }

    /// The condition's name inside a section built from one protocol's games (every paper's table
    /// and figure, and tables with a protocol column): the label without the protocol.
    pub fn method(&self) -> String {
        self.label_without(&[])
    }

    /// The method without the model: the name of a condition inside its model's group.
    pub fn method_without_model(&self) -> String {
        join_parts(self.parts.iter().filter(|p| !p.protocol && !p.model))
    }

    /// The label without the protocol and the given settings (e.g. without rounds and questions per
    /// round, for a figure that plots against them).
    pub fn label_without(&self, settings: &[&str]) -> String {
        join_parts(
            self.parts.iter().filter(|p| {
                !p.protocol && p.setting.as_deref().is_none_or(|s| !settings.contains(&s))
            }),
        )
    }
}

fn join_parts<'a>(parts: impl Iterator<Item = &'a LabelPart>) -> String {
    parts
        .map(|p| p.text.as_str())
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A condition played on one version of one script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arm {
    /// The script's title, as `result.json` names it.
    pub script: String,
    /// The script's content digest (sha256, hex) from the games' spec; `None` for results written
    /// before games recorded their spec, which are pooled only with each other.
    pub digest: Option<String>,
    /// How tables name the script: the title, and a short digest ("Riverside Inn @ab12cd", or
    /// "@unknown" without one) only when the report holds several versions of that title.
    pub script_label: String,
    /// Index into [`Grouping::conditions`].
    pub condition: usize,
    /// Indices into [`Grouping::games`]: the repeats, in path order.
    pub games: Vec<usize>,
}

/// Games grouped into conditions and arms.
#[derive(Debug, Clone, PartialEq)]
pub struct Grouping {
    pub games: Vec<GameRecord>,
    /// In display order: by protocol, then the papers' method order, then modules and settings.
    pub conditions: Vec<ConditionInfo>,
    /// By script, then condition order.
    pub arms: Vec<Arm>,
}

impl Grouping {
    /// Groups games; labels are chosen from what varies among them.
    pub fn new(games: Vec<GameRecord>) -> Grouping {
        let mut by_condition: BTreeMap<Condition, Vec<usize>> = BTreeMap::new();
        for (i, g) in games.iter().enumerate() {
            by_condition
                .entry(Condition::of(&g.result))
                .or_default()
                .push(i);
        }
        let mut keys: Vec<(Condition, Vec<usize>)> = by_condition.into_iter().collect();
        keys.sort_by(|a, b| display_order(&a.0, &b.0));
        let all: Vec<&Condition> = keys.iter().map(|(k, _)| k).collect();
        let parts: Vec<Vec<LabelPart>> = all.iter().map(|k| label_parts(k, &all)).collect();
        let mut conditions: Vec<ConditionInfo> = keys
            .into_iter()
            .zip(parts)
            .map(|((key, games), parts)| ConditionInfo {
                key,
                parts,
                games,
                arms: Vec::new(),
            })
            .collect();
        // Arms: (script, version, condition index) in that order.
        let mut by_arm: BTreeMap<(String, Option<String>, usize), Vec<usize>> = BTreeMap::new();
        for (ci, c) in conditions.iter().enumerate() {
            for &gi in &c.games {
                let r = &games[gi].result;
                by_arm
                    .entry((
                        r.script.clone(),
                        script_digest(&games[gi]).map(str::to_string),
                        ci,
                    ))
                    .or_default()
                    .push(gi);
            }
        }
        let labels = script_labels(by_arm.keys().map(|(s, d, _)| (s.as_str(), d.as_deref())));
        let arms: Vec<Arm> = by_arm
            .into_iter()
            .map(|((script, digest, condition), games)| Arm {
                script_label: labels
                    .get(&(script.clone(), digest.clone()))
                    .cloned()
                    .unwrap_or_else(|| script.clone()),
                script,
                digest,
                condition,
                games,
            })
            .collect();
        for (ai, a) in arms.iter().enumerate() {
            conditions[a.condition].arms.push(ai);
        }
        Grouping {
            games,
            conditions,
            arms,
        }
    }

    /// The results of some games.
    pub fn results<'a>(&'a self, games: &'a [usize]) -> impl Iterator<Item = &'a GameResult> + 'a {
        games.iter().map(move |&i| &self.games[i].result)
    }

    /// Scripts in report order, by their label: two versions of one title count as two scripts.
    pub fn scripts(&self) -> Vec<String> {
        let set: BTreeSet<&str> = self.arms.iter().map(|a| a.script_label.as_str()).collect();
        set.into_iter().map(str::to_string).collect()
    }
}

/// The script content digest a game's spec recorded; `None` for results without a spec (older
/// games) or with an empty digest.
pub fn script_digest(g: &GameRecord) -> Option<&str> {
    g.script_digest.as_deref().filter(|d| !d.is_empty())
}

/// Hex digits of a digest shown in a script label, at least: enough to tell versions apart at a
/// glance, short enough to keep a table narrow.
const SHORT_DIGEST: usize = 6;

/// The label of every (title, digest) version: the title alone when the report holds one version of
/// it; otherwise the title and the shortest digest prefix (at least [`SHORT_DIGEST`] characters) that
/// tells that title's versions apart, or "@unknown" for games that recorded no digest.
fn script_labels<'a>(
    versions: impl Iterator<Item = (&'a str, Option<&'a str>)>,
) -> BTreeMap<(String, Option<String>), String> {
    let mut by_title: BTreeMap<&str, BTreeSet<Option<&str>>> = BTreeMap::new();
    for (title, digest) in versions {
        by_title.entry(title).or_default().insert(digest);
    }
    let mut labels = BTreeMap::new();
    for (title, digests) in by_title {
        let key = |d: Option<&str>| (title.to_string(), d.map(str::to_string));
        if digests.len() == 1 {
            for d in digests {
                labels.insert(key(d), title.to_string());
            }
            continue;
        }
        let known: Vec<&str> = digests.iter().flatten().copied().collect();
        let longest = known.iter().map(|d| d.chars().count()).max().unwrap_or(0);
        let width = (SHORT_DIGEST..longest)
            .find(|&n| {
                let prefixes: BTreeSet<&str> = known.iter().map(|d| prefix(d, n)).collect();
                prefixes.len() == known.len()
            })
            .unwrap_or(longest);
        for d in digests {
            let short = d.map_or("unknown", |d| prefix(d, width));
            labels.insert(key(d), format!("{title} @{short}"));
        }
    }
    labels
}

/// The first `n` characters of `s` (all of it when shorter).
fn prefix(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// The papers' method order (PLAYER* Table A3: PP, OP, Werewolf, O-CoT, ThinkThrice, PLAYER*), then
/// MIRAGE, then anything else by name.
fn framework_rank(f: &str) -> usize {
    match f {
        "pp" => 0,
        "op" => 1,
        "werewolf" => 2,
        "ocot" => 3,
        "thinkthrice" => 4,
        "player" => 5,
        "mirage" => 6,
        _ => 7,
    }
}

/// ThinkThrice Table 4's row order: no module first, then by what is switched on.
fn modules_rank(m: &str) -> (bool, &str) {
    (!(m.is_empty() || m == "none"), m)
}

/// Display order of conditions; settings compare as numbers when both are numbers, so n=10 follows n=9.
fn display_order(a: &Condition, b: &Condition) -> Ordering {
    a.protocol
        .cmp(&b.protocol)
        .then(framework_rank(&a.framework).cmp(&framework_rank(&b.framework)))
        .then(a.framework.cmp(&b.framework))
        .then(a.murderer_framework.cmp(&b.murderer_framework))
        .then(modules_rank(&a.modules).cmp(&modules_rank(&b.modules)))
        .then(a.model.cmp(&b.model))
        .then(a.murderer_model.cmp(&b.murderer_model))
        .then_with(|| cmp_settings(&a.settings, &b.settings))
}

fn cmp_settings(a: &[(String, String)], b: &[(String, String)]) -> Ordering {
    for ((ka, va), (kb, vb)) in a.iter().zip(b) {
        let o = ka.cmp(kb).then_with(|| cmp_values(va, vb));
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

fn cmp_values(a: &str, b: &str) -> Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    }
}

/// The paper's name of a framework.
pub fn framework_name(f: &str) -> String {
    match f {
        "pp" => "PP".into(),
        "op" => "OP".into(),
        "werewolf" => "Werewolf".into(),
        "ocot" => "O-CoT".into(),
        "thinkthrice" => "ThinkThrice".into(),
        "player" => "PLAYER*".into(),
        "mirage" => "MIRAGE".into(),
        other => other.into(),
    }
}

/// ThinkThrice module toggles as Table 4 writes them: `mr,sr,sv=3` → `MR+SR+SV(N=3)`, `none` → `No MR`.
pub fn modules_name(m: &str) -> String {
    let m = m.trim();
    if m.is_empty() {
        return String::new();
    }
    if m == "none" {
        return "No MR".into();
    }
    m.split(',')
        .map(|part| {
            let part = part.trim();
            match part.split_once('=') {
                Some((name, n)) => format!("{}(N={n})", name.to_uppercase()),
                None if part.eq_ignore_ascii_case("sv") => "SV(N=1)".into(),
                None => part.to_uppercase(),
            }
        })
        .collect::<Vec<_>>()
        .join("+")
}

/// Short names of the settings the papers vary.
fn setting_name(key: &str) -> &str {
    match key {
        "rounds" => "n",
        "questions_per_round" => "m",
        other => other,
    }
}

/// Label order of settings: the papers' knobs first, as they write them (n before m).
fn setting_rank(key: &str) -> usize {
    match key {
        "rounds" => 0,
        "questions_per_round" => 1,
        "iterations" => 2,
        _ => 3,
    }
}

/// A setting's value for a label: strings unquoted, floats without float noise (0.800000011920929 →
/// 0.8).
fn setting_text(v: &str) -> String {
    match serde_json::from_str::<Value>(v) {
        Ok(Value::String(s)) => s,
        Ok(Value::Number(n)) if n.is_f64() => n
            .as_f64()
            .map(|f| {
                let s = format!("{f:.4}");
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            })
            .unwrap_or_else(|| v.to_string()),
        _ => v.to_string(),
    }
}

/// The label of `c` among `all`: framework and modules always; protocol, model and each setting only
/// when they differ between conditions (settings compared within the same protocol, since each
/// protocol records its own).
fn label_parts(c: &Condition, all: &[&Condition]) -> Vec<LabelPart> {
    let mut parts = Vec::new();
    let plain = |text: String| LabelPart {
        setting: None,
        protocol: false,
        model: false,
        text,
    };
    let protocols: BTreeSet<&str> = all.iter().map(|k| k.protocol.as_str()).collect();
    if protocols.len() > 1 {
        parts.push(LabelPart {
            setting: None,
            protocol: true,
            model: false,
            text: c.protocol.clone(),
        });
    }
    let mut method = framework_name(&c.framework);
    let modules = modules_name(&c.modules);
    if !modules.is_empty() {
        method = format!("{method} {modules}");
    }
    parts.push(plain(method));
    if let Some(m) = &c.murderer_framework {
        parts.push(plain(format!("murderers: {}", framework_name(m))));
    }
    let models: BTreeSet<&str> = all.iter().map(|k| k.model.as_str()).collect();
    if models.len() > 1 {
        parts.push(LabelPart {
            model: true,
            ..plain(c.model.clone())
        });
    }
    let murderer_models: BTreeSet<_> = all.iter().map(|k| &k.murderer_model).collect();
    if let Some(m) = c
        .murderer_model
        .as_ref()
        .filter(|_| murderer_models.len() > 1)
    {
        parts.push(LabelPart {
            model: true,
            ..plain(format!("murderers' model: {m}"))
        });
    }
    let peers: Vec<&&Condition> = all.iter().filter(|k| k.protocol == c.protocol).collect();
    let mut settings: Vec<&(String, String)> = c.settings.iter().collect();
    settings.sort_by_key(|(k, _)| (setting_rank(k), k.clone()));
    for (key, value) in settings {
        let varies = peers.iter().any(|k| k.setting(key) != Some(value.as_str()));
        if varies {
            parts.push(LabelPart {
                setting: Some(key.clone()),
                protocol: false,
                model: false,
                text: format!("{}={}", setting_name(key), setting_text(value)),
            });
        }
    }
    parts
}

/// JSON text with object keys sorted at every level.
fn canonical_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_written_as_in_thinkthrice_table_4() {
        assert_eq!(modules_name("none"), "No MR");
        assert_eq!(modules_name("mr"), "MR");
        assert_eq!(modules_name("mr,sr"), "MR+SR");
        assert_eq!(modules_name("mr,sr,sv"), "MR+SR+SV(N=1)");
        assert_eq!(modules_name("mr,sr,sv=3"), "MR+SR+SV(N=3)");
        assert_eq!(modules_name(""), "");
    }

    #[test]
    fn canonical_json_ignores_key_order() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": 2, "x": 3}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a": {"x": 3, "y": 2}, "b": 1}"#).unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(setting_text("0.800000011920929"), "0.8");
        assert_eq!(setting_text("3"), "3");
        assert_eq!(setting_text("\"lexical\""), "lexical");
    }
}
