//! The sensors of `prompts/player/sensors.toml`: what each one asks, its lettered options and their
//! scores, checked once per process.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::agent::prompts::PromptError;
use sleuth_script::Language;

/// One sensor reading: a distribution over the sensor's options.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Reading {
    /// The option taken (most probable under log-probabilities, else the one the model wrote).
    pub(super) choice: usize,
    pub(super) probs: Vec<f64>,
    pub(super) method: Method,
}

/// Where a sensor reading came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    /// The token log-probabilities of the option letters.
    Logprobs,
    /// The answer as parsed, taken as certain: the provider reported no log-probabilities.
    Parsed,
    /// Neither: every option equally likely (only if a reply carried no usable choice at all).
    Uniform,
}

impl Method {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Method::Logprobs => "logprobs",
            Method::Parsed => "parsed",
            Method::Uniform => "uniform",
        }
    }
}

/// The sensor definitions, compiled in: the sensors are part of the framework, not of a prompt set, so
/// `--prompts-dir` replaces the templates but not these.
pub(super) const SENSORS_TOML: &str = include_str!("../../../../../prompts/player/sensors.toml");
const SENSORS_PATH: &str = "prompts/player/sensors.toml";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SensorFile {
    sensors: Vec<Sensor>,
}

/// What a sensor's readings are used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum SensorRole {
    /// Part of the suspicion score.
    Suspicion,
    /// The pruner's information value.
    Information,
}

/// One sensor of `sensors.toml` (the file's header documents the fields).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Sensor {
    pub(super) name: String,
    pub(super) role: SensorRole,
    #[serde(default)]
    pub(super) weight: f64,
    pub(super) per_victim: bool,
    pub(super) questioning: bool,
    pub(super) title: Localized,
    pub(super) question: Localized,
    pub(super) choices: Vec<SensorChoice>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SensorChoice {
    pub(super) score: f64,
    pub(super) label: Localized,
    pub(super) hint: Localized,
}

/// A text in every prompt language.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Localized {
    en: String,
    zh: String,
}

impl Localized {
    pub(super) fn get(&self, lang: Language) -> &str {
        match lang {
            Language::En => &self.en,
            Language::Zh => &self.zh,
        }
    }
}

impl Sensor {
    /// The expected score of a reading: how strongly it points at guilt (or at more to learn).
    pub(super) fn expectation(&self, r: &Reading) -> f64 {
        self.choices
            .iter()
            .zip(&r.probs)
            .map(|(c, p)| c.score * p)
            .sum()
    }

    /// The victim part of a reading's key.
    pub(super) fn victim_key<'a>(&self, victim: &'a str) -> &'a str {
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
pub(super) struct SensorFileError(String);

pub(super) fn parse_sensors(text: &str) -> Result<Vec<Sensor>, SensorFileError> {
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
pub(super) fn sensors() -> Result<&'static [Sensor], PromptError> {
    static SENSORS: OnceLock<Result<Vec<Sensor>, SensorFileError>> = OnceLock::new();
    match SENSORS.get_or_init(|| parse_sensors(SENSORS_TOML)) {
        Ok(s) => Ok(s),
        Err(e) => Err(PromptError::Template {
            name: SENSORS_PATH.into(),
            message: e.0.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
