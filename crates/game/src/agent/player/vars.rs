//! Prompt variables: one struct per template, so the unit tests render with exactly what the calls
//! pass.

use serde::Serialize;

use super::sensors::Sensor;
use crate::agent::view::SuspectCard;
use sleuth_script::Language;

#[derive(Debug, Serialize)]
pub(super) struct IntroducePrompt<'a> {
    pub(super) host_line: &'a str,
    pub(super) murderer: bool,
}

#[derive(Debug, Serialize)]
pub(super) struct OptionLine<'a> {
    pub(super) letter: String,
    pub(super) label: &'a str,
    pub(super) hint: &'a str,
}

impl<'a> OptionLine<'a> {
    /// A sensor's choices as its prompt lists them: each under its letter (`letters`, in order), in
    /// `lang`.
    pub(super) fn list(
        sensor: &'a Sensor,
        letters: &[String],
        lang: Language,
    ) -> Vec<OptionLine<'a>> {
        sensor
            .choices
            .iter()
            .zip(letters)
            .map(|(c, l)| OptionLine {
                letter: l.clone(),
                label: c.label.get(lang),
                hint: c.hint.get(lang),
            })
            .collect()
    }
}

#[derive(Debug, Serialize)]
pub(super) struct SensorPrompt<'a> {
    pub(super) target: &'a str,
    pub(super) victim: &'a str,
    pub(super) murderer: bool,
    /// This agent killed `victim`.
    pub(super) killed: bool,
    pub(super) script: &'a [String],
    pub(super) dialog: &'a [String],
    pub(super) options: Vec<OptionLine<'a>>,
    pub(super) question: String,
}

#[derive(Debug, Serialize)]
pub(super) struct ReadingLine<'a> {
    pub(super) title: &'a str,
    pub(super) victim: Option<&'a str>,
    pub(super) value: &'a str,
    pub(super) percent: u32,
}

#[derive(Debug, Serialize)]
pub(super) struct QuestionPrompt<'a> {
    pub(super) target: &'a str,
    pub(super) victim: &'a str,
    pub(super) killed: bool,
    pub(super) script: &'a [String],
    pub(super) dialog: &'a [String],
    pub(super) readings: Vec<ReadingLine<'a>>,
    /// Overall suspicion of `target` for `victim`, in percent.
    pub(super) suspicion: u32,
    pub(super) asked: u32,
}

#[derive(Debug, Serialize)]
pub(super) struct AnswerPrompt<'a> {
    pub(super) asker: &'a str,
    pub(super) question: &'a str,
    pub(super) murderer: bool,
    pub(super) script: &'a [String],
    pub(super) dialog: &'a [String],
}

#[derive(Debug, Serialize)]
pub(super) struct SuspectLine {
    pub(super) name: String,
    pub(super) percent: u32,
    pub(super) suspect: bool,
    /// The readings that point at guilt, as "title: value".
    pub(super) reasons: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(super) struct VictimNotes {
    pub(super) victim: String,
    pub(super) players: Vec<SuspectLine>,
}

#[derive(Debug, Serialize)]
pub(super) struct VotePrompt<'a> {
    pub(super) vote_call: &'a str,
    pub(super) victims: &'a str,
    pub(super) candidates: &'a [String],
    pub(super) murderer: bool,
    pub(super) dialog: &'a [String],
    pub(super) suspicion: Vec<VictimNotes>,
    /// The suspects who do not play: the template says "suspect" rather than "player" when there are any.
    pub(super) suspects: &'a [SuspectCard],
}

#[cfg(test)]
mod tests {
    use super::super::sensors::{parse_sensors, SENSORS_TOML};
    use super::super::PURPOSES;
    use super::*;
    use crate::agent::prompts::{PromptError, Prompts};
    use sleuth_script::option_letter;

    fn letters(n: usize) -> Vec<String> {
        (0..n).map(option_letter).collect()
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
                        options: OptionLine::list(sensor, &letters, lang),
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
                        suspects: &[SuspectCard {
                            name: "Dr Grey".into(),
                            description: "The physician.".into(),
                        }],
                    },
                ),
            );
            assert!(s.contains("71"), "{s}");
            // With suspects who do not play, the ballot asks for a suspect, not a player.
            let word = match lang {
                Language::En => "a suspect's name",
                Language::Zh => "嫌疑人的名字",
            };
            assert!(s.contains(word), "{s}");
            let rendered = prompts.rendered();
            for p in PURPOSES.iter().filter(|p| **p != "system") {
                assert!(rendered.contains(*p), "{p} not rendered ({})", lang.code());
            }
        }
    }
}
