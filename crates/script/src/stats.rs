//! Dataset statistics: the figures the papers' dataset tables give per script (PLAYER\* Table 1, MIRAGE
//! Table 1), computed from sleuth's scripts so a researcher can check an imported set against them.
//!
//! Token counts take the counter as a parameter: the script layer does not depend on the model layer,
//! and the caller chooses the tokenizer (the CLI uses cl100k; the papers do not say which they used).

use super::model::{Category, Character, Language, Script};
use sleuth_base::text::is_cjk;

/// One script's row of the dataset table.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptStats {
    pub title: String,
    /// `wellplay`, `mirage`, or `sleuth` for a script written in sleuth's own format.
    pub source: String,
    pub players: usize,
    pub victims: usize,
    /// Acts (WellPlay) or stages (MIRAGE).
    pub acts: u32,
    pub clues: usize,
    /// Suspects who are not players.
    pub outside_suspects: usize,
    /// Tokens of every player's private script, summed (the paper's "overall").
    pub tokens: u64,
    /// Words of every player's private script and the shared premise: whitespace-separated words, or
    /// CJK characters in a Chinese script (MIRAGE Table 1's "#Words").
    pub words: u64,
    /// Words of the clue cards, apart (MIRAGE's count may or may not include them).
    pub clue_words: u64,
    /// The characters' multiple-choice questions by category: objective, reasoning, relations.
    pub questions: [usize; 3],
    /// Questions only the full-script-access evaluation asks.
    pub full_access_only: usize,
}

impl ScriptStats {
    /// The statistics of `script`, counting tokens with `count_tokens`.
    pub fn of(script: &Script, count_tokens: impl Fn(&str) -> u64) -> ScriptStats {
        let texts: Vec<String> = script.characters.iter().map(private_text).collect();
        let words = texts
            .iter()
            .chain(std::iter::once(&script.premise))
            .map(|t| word_count(t, script.language))
            .sum();
        let clue_words = script
            .clues
            .iter()
            .map(|c| word_count(&c.text, script.language))
            .sum();
        let by = |cat: Category| {
            script
                .choice
                .iter()
                .filter(|q| q.character.is_some() && q.category == cat)
                .count()
        };
        ScriptStats {
            title: script.title.clone(),
            source: script.source.clone().unwrap_or_else(|| "sleuth".into()),
            players: script.characters.len(),
            victims: script.victims.len(),
            acts: script.acts,
            clues: script.clues.len(),
            outside_suspects: script.non_player_suspects().count(),
            tokens: texts.iter().map(|t| count_tokens(t)).sum(),
            words,
            clue_words,
            questions: [
                by(Category::Objective),
                by(Category::Reasoning),
                by(Category::Relations),
            ],
            full_access_only: script
                .choice
                .iter()
                .filter(|q| q.character.is_none())
                .count(),
        }
    }

    /// Tokens per player: the paper's "avg".
    pub fn tokens_per_player(&self) -> f64 {
        if self.players == 0 {
            0.0
        } else {
            self.tokens as f64 / self.players as f64
        }
    }

    /// The characters' questions in all.
    pub fn question_total(&self) -> usize {
        self.questions.iter().sum()
    }
}

/// Everything a player reads of their own character: the fields the importers fill from the source's
/// per-character files.
fn private_text(c: &Character) -> String {
    let mut parts: Vec<&str> = vec![&c.story, &c.timeline];
    for list in [
        &c.acts,
        &c.secrets,
        &c.goals,
        &c.relationships,
        &c.performance,
        &c.abilities,
    ] {
        parts.extend(list.iter().map(String::as_str));
    }
    parts.retain(|p| !p.trim().is_empty());
    parts.join("\n")
}

/// Whitespace-separated words, or for Chinese the CJK characters plus any Latin words among them.
fn word_count(text: &str, lang: Language) -> u64 {
    match lang {
        Language::En => text.split_whitespace().count() as u64,
        Language::Zh => {
            let cjk = text.chars().filter(|&c| is_cjk(c)).count();
            let latin = text
                .split(|c: char| c.is_whitespace() || is_cjk(c))
                .filter(|w| w.chars().any(char::is_alphanumeric))
                .count();
            (cjk + latin) as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::tiny;

    #[test]
    fn counts_players_words_and_questions() {
        let s = tiny();
        // One "token" per word, to check which texts are counted.
        let st = ScriptStats::of(&s, |t| t.split_whitespace().count() as u64);
        assert_eq!((st.players, st.victims, st.clues), (3, 1, 1));
        let private: u64 = [
            "Ada owed Lord Ash money.",
            "At 9 pm Ada read in the garden.",
            "At 10 pm Ada poisoned the brandy.",
            "Ben served Lord Ash for twenty years.",
            "At 10 pm Ben saw Ada near the brandy decanter.",
            "Cy cooked the supper.",
            "At 8 pm Cy served fish soup to Lord Ash.",
        ]
        .iter()
        .map(|t| t.split_whitespace().count() as u64)
        .sum();
        assert_eq!(st.tokens, private);
        // The premise "Lord Ash was found dead in the library." adds 8 words.
        assert_eq!(st.words, private + 8);
        assert_eq!(st.clue_words, 5);
        assert_eq!(st.question_total(), 0);
        assert!((st.tokens_per_player() - private as f64 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn chinese_words_are_characters_plus_latin_words() {
        assert_eq!(word_count("他在9点见到了 Ada。", Language::Zh), 6 + 2);
        assert_eq!(word_count("two words", Language::En), 2);
    }
}
