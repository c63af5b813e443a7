//! Script validation: every problem at once, each with its field path and what was expected.
//!
//! Errors make a script unplayable or its evaluation wrong; warnings are worth a look but do not stop a
//! game (a script without factual questions can be played, just not scored on them).

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;

use super::model::{letter_index, ChoiceRule, Script};

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One rule a script breaks, with the field path where it breaks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub severity: Severity,
    /// Dotted path with indices, e.g. `characters[2].role`.
    pub field: String,
    /// What was expected there.
    pub expected: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}`: expected {}", self.field, self.expected)
    }
}

/// Collects problems in the order they are found.
#[derive(Default)]
struct Findings(Vec<Problem>);

impl Findings {
    fn error(&mut self, field: impl Into<String>, expected: impl Into<String>) {
        self.0.push(Problem {
            severity: Severity::Error,
            field: field.into(),
            expected: expected.into(),
        });
    }
    fn warn(&mut self, field: impl Into<String>, expected: impl Into<String>) {
        self.0.push(Problem {
            severity: Severity::Warning,
            field: field.into(),
            expected: expected.into(),
        });
    }
}

/// Factual questions per character below which evaluation is thin (ThinkThrice uses ~40).
const MIN_FACTUAL_PER_CHARACTER: usize = 10;

impl Script {
    /// Every problem of the script, errors and warnings, in file order.
    pub fn problems(&self) -> Vec<Problem> {
        let mut f = Findings::default();
        self.check_top(&mut f);
        self.check_characters(&mut f);
        self.check_suspects(&mut f);
        self.check_truth(&mut f);
        self.check_clues(&mut f);
        self.check_questions(&mut f);
        f.0
    }

    /// Only the errors.
    pub fn errors(&self) -> Vec<Problem> {
        self.problems()
            .into_iter()
            .filter(|p| p.severity == Severity::Error)
            .collect()
    }

    fn check_top(&self, f: &mut Findings) {
        if self.format != 1 {
            f.error("format", "1 (the only format version this sleuth reads)");
        }
        if self.title.trim().is_empty() {
            f.error("title", "a non-empty title");
        }
        if self.acts == 0 {
            f.error("acts", "at least 1 act");
        }
        if self.victims.is_empty() {
            f.error("victims", "at least one victim");
        }
        for (i, v) in self.victims.iter().enumerate() {
            if v.name.trim().is_empty() {
                f.error(format!("victims[{i}].name"), "a non-empty name");
            }
        }
        if self.premise.trim().is_empty() {
            f.warn("premise", "a premise the host can read out (none given)");
        }
        if self.host.is_none() {
            f.warn("host", "the host's lines (generic ones will be used)");
        }
    }

    fn check_characters(&self, f: &mut Findings) {
        if !(2..=12).contains(&self.characters.len()) {
            f.error(
                "characters",
                format!(
                    "between 2 and 12 characters (found {})",
                    self.characters.len()
                ),
            );
        }
        let mut names = HashSet::new();
        for (i, c) in self.characters.iter().enumerate() {
            if c.name.trim().is_empty() {
                f.error(format!("characters[{i}].name"), "a non-empty name");
            } else if !names.insert(c.name.as_str()) {
                f.error(
                    format!("characters[{i}].name"),
                    format!("a unique name (\"{}\" appears twice)", c.name),
                );
            }
            if self.victims.iter().any(|v| v.name == c.name) {
                f.error(
                    format!("characters[{i}].name"),
                    format!("a player who is not also a victim (\"{}\")", c.name),
                );
            }
            if c.script_text().trim().is_empty() {
                f.error(
                    format!("characters[{i}]"),
                    "a non-empty script text (story, timeline or acts)",
                );
            }
            if c.acts.len() > self.acts as usize {
                f.error(
                    format!("characters[{i}].acts"),
                    format!(
                        "at most {} acts (the script's `acts`), found {}",
                        self.acts,
                        c.acts.len()
                    ),
                );
            }
            for (j, a) in c.acts.iter().enumerate() {
                if a.trim().is_empty() {
                    f.warn(
                        format!("characters[{i}].acts[{j}]"),
                        "a non-empty script text for this act",
                    );
                }
            }
            for (j, v) in c.killed.iter().enumerate() {
                if !self.victims.iter().any(|x| x.name == *v) {
                    f.error(
                        format!("characters[{i}].killed[{j}]"),
                        format!("the name of a victim (\"{v}\" is not one)"),
                    );
                }
            }
            if !c.killed.is_empty() && !c.is_murderer() {
                f.error(
                    format!("characters[{i}].role"),
                    format!(
                        "\"murderer\", since {} killed {}",
                        c.name,
                        c.killed.join(", ")
                    ),
                );
            }
        }
        if self.culprits().is_empty() {
            f.error(
                "characters[].role",
                "at least one culprit: a character with role \"murderer\" or a non-player suspect \
                 with `culprit = true`",
            );
        }
    }

    fn check_suspects(&self, f: &mut Findings) {
        if self.suspects.is_empty() {
            return;
        }
        let mut names = HashSet::new();
        for (i, s) in self.suspects.iter().enumerate() {
            let field = format!("suspects[{i}]");
            if s.name.trim().is_empty() {
                f.error(format!("{field}.name"), "a non-empty name");
            } else if !names.insert(s.name.as_str()) {
                f.error(
                    format!("{field}.name"),
                    format!("a unique name (\"{}\" appears twice)", s.name),
                );
            }
            if self.victims.iter().any(|v| v.name == s.name) {
                f.error(
                    format!("{field}.name"),
                    format!("a suspect who is not also a victim (\"{}\")", s.name),
                );
            }
            if self.character(&s.name).is_some() && s.culprit {
                f.error(
                    format!("{field}.culprit"),
                    format!(
                        "no `culprit` on a player (\"{}\"): a player's role says whether they did it",
                        s.name
                    ),
                );
            }
        }
        if self.suspects.len() < 2 {
            f.error("suspects", "at least two suspects to vote among");
        }
        for m in self.murderers() {
            if !names.contains(m) {
                f.error(
                    "suspects",
                    format!("every culprit among the suspects (\"{m}\", a murderer, is not)"),
                );
            }
        }
    }

    fn check_truth(&self, f: &mut Findings) {
        if let Some(m) = &self.truth.murderer {
            let npc = self.non_player_suspects().find(|s| s.name == *m);
            match (self.character(m), npc) {
                (None, None) => f.error(
                    "truth.murderer",
                    format!("the name of a character or suspect (\"{m}\" is not one)"),
                ),
                (Some(c), _) if !c.is_murderer() => f.error(
                    "truth.murderer",
                    format!("a character whose role is \"murderer\" (\"{m}\" is a civilian)"),
                ),
                (None, Some(s)) if !s.culprit => f.error(
                    "truth.murderer",
                    format!("a suspect with `culprit = true` (\"{m}\" is not marked)"),
                ),
                _ => {}
            }
            if self.culprits().len() > 1 {
                f.error(
                    "truth.murderer",
                    "`truth.culprits` instead: the script has several murderers",
                );
            }
        }
        for (i, c) in self.truth.culprits.iter().enumerate() {
            if !self.victims.iter().any(|v| v.name == c.victim) {
                f.error(
                    format!("truth.culprits[{i}].victim"),
                    format!("the name of a victim (\"{}\" is not one)", c.victim),
                );
            }
            if c.by.is_empty() {
                // A death nobody in the cast caused (an accident, a killer outside the story) is still
                // part of the case; the vote is about the culprits of the others.
                f.warn(
                    format!("truth.culprits[{i}].by"),
                    format!(
                        "a culprit of {} among the cast (none given: no vote can name one)",
                        c.victim
                    ),
                );
            }
            for (j, who) in c.by.iter().enumerate() {
                if !self.is_culprit(who) {
                    f.error(
                        format!("truth.culprits[{i}].by[{j}]"),
                        format!(
                            "a character whose role is \"murderer\" or a culprit suspect \
                             (\"{who}\" is neither)"
                        ),
                    );
                }
            }
        }
        if self.truth.narrative.trim().is_empty() {
            f.warn(
                "truth.narrative",
                "the true account of the case (none given)",
            );
        }
    }

    fn check_clues(&self, f: &mut Findings) {
        let mut ids = HashSet::new();
        for (i, c) in self.clues.iter().enumerate() {
            if !ids.insert(c.id.as_str()) {
                f.error(
                    format!("clues[{i}].id"),
                    format!("a unique id (\"{}\" appears twice)", c.id),
                );
            }
            if c.text.trim().is_empty() {
                f.error(format!("clues[{i}].text"), "a non-empty clue text");
            }
            match (&c.about, &c.location) {
                (None, None) => f.error(
                    format!("clues[{i}]"),
                    "an owner: `about` (a character) or `location`",
                ),
                (Some(a), _) if self.character(a).is_none() => f.error(
                    format!("clues[{i}].about"),
                    format!("the name of a character (\"{a}\" is not one)"),
                ),
                _ => {}
            }
            if let Some(act) = c.act {
                if act == 0 || act > self.acts {
                    f.error(
                        format!("clues[{i}].act"),
                        format!("an act between 1 and {}", self.acts),
                    );
                }
            }
        }
    }

    fn check_questions(&self, f: &mut Findings) {
        for (i, q) in self.factual.iter().enumerate() {
            match self.character(&q.character) {
                None => f.error(
                    format!("factual[{i}].character"),
                    format!("the name of a character (\"{}\" is not one)", q.character),
                ),
                Some(c)
                    if q.source.trim().is_empty() || !c.script_text().contains(q.source.trim()) =>
                {
                    f.error(
                        format!("factual[{i}].source"),
                        format!("a sentence that occurs verbatim in {}'s script", c.name),
                    )
                }
                _ => {}
            }
            if q.question.trim().is_empty() {
                f.error(format!("factual[{i}].question"), "a non-empty question");
            }
            if q.answer.trim().is_empty() {
                f.error(
                    format!("factual[{i}].answer"),
                    "a non-empty reference answer",
                );
            }
        }
        if !self.factual.is_empty() {
            for (i, c) in self.characters.iter().enumerate() {
                let n = self
                    .factual
                    .iter()
                    .filter(|q| q.character == c.name)
                    .count();
                if n < MIN_FACTUAL_PER_CHARACTER {
                    f.warn(format!("characters[{i}]"), format!("at least {MIN_FACTUAL_PER_CHARACTER} factual questions about {} (found {n})", c.name));
                }
            }
        }
        for (i, q) in self.inferential.iter().enumerate() {
            if !(2..=26).contains(&q.options.len()) {
                f.error(
                    format!("inferential[{i}].options"),
                    "between 2 and 26 options",
                );
            }
            if q.answer_index().is_none() {
                f.error(
                    format!("inferential[{i}].answer"),
                    format!(
                        "a letter naming one of the {} options (got \"{}\")",
                        q.options.len(),
                        q.answer
                    ),
                );
            }
        }
        for (i, q) in self.choice.iter().enumerate() {
            if let Some(c) = &q.character {
                if self.character(c).is_none() {
                    f.error(
                        format!("choice[{i}].character"),
                        format!("the name of a character (\"{c}\" is not one)"),
                    );
                }
            }
            if q.question.trim().is_empty() && !q.unscored {
                f.error(format!("choice[{i}].question"), "a non-empty question");
            }
            if !(2..=26).contains(&q.options.len()) {
                f.error(
                    format!("choice[{i}].options"),
                    format!("between 2 and 26 options (found {})", q.options.len()),
                );
            }
            for (j, o) in q.options.iter().enumerate() {
                if o.trim().is_empty() {
                    f.error(
                        format!("choice[{i}].options[{j}]"),
                        "a non-empty option text (drop empty options)",
                    );
                }
            }
            if q.truth.is_empty() {
                f.error(format!("choice[{i}].truth"), "at least one correct letter");
            }
            for (j, t) in q.truth.iter().enumerate() {
                if letter_index(t).is_none_or(|k| k >= q.options.len()) {
                    f.error(
                        format!("choice[{i}].truth[{j}]"),
                        format!(
                            "a letter naming one of the {} options (got \"{t}\")",
                            q.options.len()
                        ),
                    );
                }
            }
            if !q.multiple && q.truth.len() > 1 && q.rule != ChoiceRule::AnyOf {
                f.error(
                    format!("choice[{i}].multiple"),
                    format!(
                        "true, or rule = \"any_of\" (either letter is right), since the question has {} correct letters",
                        q.truth.len()
                    ),
                );
            }
            // Each rule belongs to one kind of question, and a count of picks to multiple choice only,
            // where it must leave a right answer possible.
            let rule_fits = match q.rule {
                ChoiceRule::Exact => true,
                ChoiceRule::AnyOf => !q.multiple,
                ChoiceRule::Includes => q.multiple,
            };
            if !rule_fits {
                f.error(
                    format!("choice[{i}].rule"),
                    if q.multiple {
                        "\"exact\" or \"includes\" for a multiple-choice question"
                    } else {
                        "\"exact\" or \"any_of\" for a single-choice question"
                    },
                );
            }
            if let Some(n) = q.picks.map(|n| n as usize) {
                let (k, options) = (q.truth.len(), q.options.len());
                let expected = match (q.multiple, q.rule) {
                    (false, _) => Some(
                        "no count of picks for a single-choice question (or multiple = true)"
                            .to_string(),
                    ),
                    (true, ChoiceRule::Includes) if !(k.max(1)..=options).contains(&n) => {
                        Some(format!(
                            "between {} (the correct letters) and {options} (the options)",
                            k.max(1)
                        ))
                    }
                    (true, ChoiceRule::Exact) if n != k => Some(format!(
                        "{k}, the number of correct letters, which must all be chosen"
                    )),
                    _ => None,
                };
                if let Some(expected) = expected {
                    f.error(format!("choice[{i}].picks"), expected);
                }
            }
        }
    }
}
