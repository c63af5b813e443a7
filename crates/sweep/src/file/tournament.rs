//! Tournaments: models played against each other, the culprit's side by one and the civilians by
//! another.
//!
//! A `[tournament]` section lists models; the plan crosses the sweep's arms with every ordered pair of
//! them (culprit model, civilians model), so each pair plays every script on the same seeds and each
//! model plays the culprit and the civilians equally often. `self_play = true` adds each model
//! against itself. `sleuth report` turns the games into a win matrix and Bradley–Terry ratings
//! (`report::tournament`). The format is in `docs/sweeps.md`, *Tournaments*.

use serde::{Deserialize, Serialize};

use super::{Settings, SweepFile, DEFAULT_MODEL};

/// The `[tournament]` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TournamentSettings {
    /// The models (keys of `[models]`, or the always-present simulated model), at least two, each
    /// once.
    pub models: Vec<String>,
    /// Also play each model against itself; default false.
    #[serde(default)]
    pub self_play: bool,
}

impl TournamentSettings {
    /// Checks the section against the rest of the file: on failure the key to name and what was
    /// expected.
    pub fn check(&self, file: &SweepFile) -> Result<(), (String, String)> {
        if self.models.len() < 2 {
            return Err((
                "tournament.models".into(),
                format!(
                    "lists {} model{}; a tournament needs at least two",
                    self.models.len(),
                    if self.models.len() == 1 { "" } else { "s" }
                ),
            ));
        }
        for (i, m) in self.models.iter().enumerate() {
            let key = format!("tournament.models[{i}]");
            if self.models[..i].contains(m) {
                return Err((key, format!("repeats `{m}`; list each model once")));
            }
            if m != DEFAULT_MODEL && !file.models.contains_key(m) {
                let mut known: Vec<&str> = file.models.keys().map(String::as_str).collect();
                if !known.contains(&DEFAULT_MODEL) {
                    known.push(DEFAULT_MODEL);
                }
                return Err((
                    key,
                    format!(
                        "`{m}` is not in the models table (expected one of: {})",
                        known.join(", ")
                    ),
                ));
            }
        }
        // The tournament sets both models of every game: a second place setting them would be
        // silently overridden.
        let set_by_tournament = |s: &Settings| -> Option<&'static str> {
            if s.model.is_some() {
                Some("model")
            } else if s.murderer_model.is_some() {
                Some("murderer_model")
            } else {
                None
            }
        };
        let mut places: Vec<(String, &Settings)> = vec![("game".into(), &file.game)];
        places.extend(
            file.arms
                .iter()
                .enumerate()
                .map(|(i, a)| (format!("arms[{i}]"), a)),
        );
        for (place, settings) in places {
            if let Some(k) = set_by_tournament(settings) {
                return Err(overridden(format!("{place}.{k}")));
            }
        }
        for k in ["model", "murderer_model"] {
            if file.axes.contains_key(k) {
                return Err(overridden(format!("axes.{k}")));
            }
        }
        Ok(())
    }

    /// The pairings in plan order, as (culprit model, civilians model): for each model as culprit,
    /// every other model as civilians (itself too with `self_play`), in the order listed.
    pub fn pairings(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for culprit in &self.models {
            for civilians in &self.models {
                if culprit != civilians || self.self_play {
                    out.push((culprit.clone(), civilians.clone()));
                }
            }
        }
        out
    }

    /// `arms` crossed with the pairings: each arm's settings with `model` (the civilians') and
    /// `murderer_model` set, pairing by pairing.
    pub fn cross(&self, arms: &[Settings]) -> Vec<Settings> {
        let pairings = self.pairings();
        arms.iter()
            .flat_map(|a| {
                pairings.iter().map(move |(culprit, civilians)| {
                    a.overlay(&Settings {
                        model: Some(civilians.clone()),
                        murderer_model: Some(culprit.clone()),
                        ..Settings::default()
                    })
                })
            })
            .collect()
    }
}

fn overridden(key: String) -> (String, String) {
    (
        key,
        "cannot be set in a tournament: each game's `model` (the civilians') and `murderer_model` \
         (the culprit's) come from `tournament.models`"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LoadedSweep, SweepError};
    use std::path::Path;

    fn parse(text: &str) -> Result<LoadedSweep, SweepError> {
        LoadedSweep::parse(Path::new("/x/sweep.toml"), text.to_string())
    }

    const HEAD: &str = "name = \"x\"\nscripts = [\"a\"]\n[models.strong]\nprovider = \"simulated\"\n[models.weak]\nprovider = \"simulated\"\nmodel = \"sim-1:0.3\"\n";

    #[test]
    fn pairings_are_every_ordered_pair() {
        let t = TournamentSettings {
            models: vec!["a".into(), "b".into(), "c".into()],
            self_play: false,
        };
        let p = t.pairings();
        assert_eq!(p.len(), 6);
        for m in ["a", "b", "c"] {
            assert_eq!(
                p.iter().filter(|(c, _)| c == m).count(),
                2,
                "{m} as culprit"
            );
            assert_eq!(
                p.iter().filter(|(_, v)| v == m).count(),
                2,
                "{m} as civilians"
            );
        }
        let with_self = TournamentSettings {
            self_play: true,
            ..t
        };
        assert_eq!(with_self.pairings().len(), 9);
        let arms = with_self.cross(&[Settings::default(), Settings::default()]);
        assert_eq!(arms.len(), 18);
        assert_eq!(arms[1].model.as_deref(), Some("b"));
        assert_eq!(arms[1].murderer_model.as_deref(), Some("a"));
    }

    #[test]
    fn a_good_section_reads() {
        let s = parse(&format!(
            "{HEAD}[tournament]\nmodels = [\"strong\", \"weak\", \"sim-1\"]\nself_play = true\n"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let t = s.file.tournament.expect("the section");
        assert_eq!(t.models.len(), 3);
        assert!(t.self_play);
    }

    #[test]
    fn bad_sections_name_the_file_the_field_and_what_was_expected() {
        let cases = [
            ("[tournament]\nmodels = [\"strong\"]\n", "`tournament.models`", "at least two"),
            ("[tournament]\nmodels = []\n", "`tournament.models`", "at least two"),
            (
                "[tournament]\nmodels = [\"strong\", \"strong\"]\n",
                "`tournament.models[1]`",
                "repeats",
            ),
            (
                "[tournament]\nmodels = [\"strong\", \"gpt\"]\n",
                "`tournament.models[1]`",
                "expected one of: strong, weak, sim-1",
            ),
            (
                "[tournament]\nmodels = [\"strong\", \"weak\"]\nrounds = 3\n",
                "rounds",
                "unknown field `rounds`, expected `models` or `self_play`",
            ),
            (
                "[tournament]\nmodels = \"strong\"\n",
                "models = \"strong\"",
                "expected a sequence",
            ),
            (
                "[game]\nmodel = \"strong\"\n[tournament]\nmodels = [\"strong\", \"weak\"]\n",
                "`game.model`",
                "come from `tournament.models`",
            ),
            (
                "[[arms]]\nmurderer_model = \"weak\"\n[tournament]\nmodels = [\"strong\", \"weak\"]\n",
                "`arms[0].murderer_model`",
                "cannot be set in a tournament",
            ),
            (
                "[axes]\nmodel = [\"strong\", \"weak\"]\n[tournament]\nmodels = [\"strong\", \"weak\"]\n",
                "`axes.model`",
                "cannot be set in a tournament",
            ),
        ];
        for (section, key, expected) in cases {
            let text = format!("{HEAD}{section}");
            let msg = parse(&text)
                .err()
                .unwrap_or_else(|| panic!("accepted: {text}"))
                .to_string();
            assert!(msg.contains("/x/sweep.toml"), "{msg}");
            assert!(msg.contains(key), "`{key}` not named in: {msg}");
            assert!(msg.contains(expected), "`{expected}` not in: {msg}");
        }
    }
}
