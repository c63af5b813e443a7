//! Every text of a script folder with where it comes from, and the words the texts write in lower case:
//! what the victim, the non-player suspects and their descriptions are read from. The source matters
//! twice: a victim must be named by more than one text (one character's musings are not the case), and
//! a suspect's description may only come from texts every player may know.

use std::collections::HashSet;

use super::cast::Cast;
use super::clues::Owner;
use sleuth_base::text::is_cjk;

/// Where a text comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
    /// A field of a character's entry in `script.json` (index into the cast); `relationship` for the
    /// `Relationship` field.
    Character { index: usize, relationship: bool },
    /// A text of `script.json` shown to every player (the premise).
    Shared,
    /// A clue text, by owner.
    Clue(String),
    /// The true account.
    Truth,
}

impl Source {
    /// One key per character, clue owner, premise or account: the unit "texts naming someone" counts.
    pub(super) fn key(&self) -> String {
        match self {
            Source::Character { index, .. } => format!("character {index}"),
            Source::Shared => "premise".into(),
            Source::Clue(owner) => format!("clue {owner}"),
            Source::Truth => "truth".into(),
        }
    }
}

/// The texts and the lower-case vocabulary.
#[derive(Debug, Default)]
pub(super) struct Corpus {
    pub(super) texts: Vec<(Source, String)>,
    /// Alphabetic words that occur written in lower case somewhere: common nouns and function words,
    /// never a person's name.
    lower: HashSet<String>,
    /// Words (lower-cased) that occur capitalised inside a sentence: names and titles (`Captain`).
    titled: HashSet<String>,
}

impl Corpus {
    /// Gathers the texts of the cast (every field), the premise, the clue texts and the account.
    /// Markdown bold markers (`**Name**`) are dropped: they split names from the words around them.
    pub(super) fn new(cast: &Cast, shared: &[String], owners: &[Owner], narrative: &str) -> Corpus {
        let mut texts = Vec::new();
        for (index, d) in cast.0.iter().enumerate() {
            let other = Source::Character {
                index,
                relationship: false,
            };
            let rel = Source::Character {
                index,
                relationship: true,
            };
            for t in std::iter::once(&d.story)
                .chain(&d.acts)
                .chain(&d.performance)
                .chain(&d.goals)
                .chain(&d.abilities)
            {
                texts.push((other.clone(), t.clone()));
            }
            for t in &d.relationships {
                texts.push((rel.clone(), t.clone()));
            }
        }
        for t in shared {
            texts.push((Source::Shared, t.clone()));
        }
        for o in owners {
            for t in &o.texts {
                texts.push((Source::Clue(o.name.clone()), t.clone()));
            }
        }
        if !narrative.trim().is_empty() {
            texts.push((Source::Truth, narrative.to_string()));
        }
        for (_, t) in &mut texts {
            if t.contains("**") {
                *t = t.replace("**", "");
            }
        }
        texts.retain(|(_, t)| !t.trim().is_empty());
        let (mut lower, mut titled) = (HashSet::new(), HashSet::new());
        for (_, t) in &texts {
            for (w, inside) in words_placed(t) {
                if w.chars().next().is_some_and(char::is_lowercase) {
                    lower.insert(w.to_string());
                } else if inside {
                    titled.insert(w.to_lowercase());
                }
            }
        }
        Corpus {
            texts,
            lower,
            titled,
        }
    }

    /// Whether the word is written in lower case somewhere in the texts (compared lower-cased).
    pub(super) fn is_common(&self, word: &str) -> bool {
        self.lower.contains(&word.to_lowercase())
    }

    /// A word written in lower case and capitalised only where a sentence starts (`After`, `When`).
    pub(super) fn is_function_word(&self, word: &str) -> bool {
        self.is_common(word) && !self.titled.contains(&word.to_lowercase())
    }
}

/// The words of a text, each with whether it stands inside a sentence (after a word or a comma on the
/// same line, not after `.!?:` or a quote).
fn words_placed(text: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut prev: Option<char> = None;
    let mut start: Option<usize> = None;
    let mut inside = false;
    let is_word_char = |c: char| c.is_alphanumeric() && !is_cjk(c);
    for (i, c) in text.char_indices() {
        if is_word_char(c) || (c == '-' && start.is_some()) {
            if start.is_none() {
                start = Some(i);
                inside = prev.is_some_and(|p| is_word_char(p) || p == ',');
            }
            continue;
        }
        if let Some(s) = start.take() {
            out.push((text[s..i].trim_end_matches('-'), inside));
            prev = text[..i].chars().next_back();
        }
        if !c.is_whitespace() || c == '\n' {
            prev = Some(c);
        }
    }
    if let Some(s) = start {
        out.push((text[s..].trim_end_matches('-'), inside));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_words_are_those_written_in_lower_case() {
        let owners = vec![Owner {
            name: "Hall".into(),
            field: "Hall".into(),
            texts: vec!["The hotel guard saw **Ann Lee** leave.".into()],
            act: None,
        }];
        let c = Corpus::new(&Cast::default(), &[], &owners, "Hotel staff slept.");
        assert!(c.is_common("Hotel") && c.is_common("guard"));
        assert!(!c.is_common("Ann") && !c.is_common("Lee"));
        assert!(c.is_function_word("Hotel") && !c.is_function_word("Ann"));
        assert_eq!(c.texts[0].1, "The hotel guard saw Ann Lee leave.");
        assert_eq!(c.texts[1].0, Source::Truth);
    }
}
