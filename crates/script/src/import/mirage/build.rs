//! The canonical script from what the readers gathered: each character's role and acts (trailing empty
//! acts dropped), the victim, the suspects and the truth naming the culprits.

use super::cast::Cast;
use super::clues::Owner;
use super::stages::Layout;
use super::truth::Accused;
use crate::import::detect_language;
use crate::model::Suspect;
use crate::{Character, Clue, Culprits, Language, Role, Script, Truth, Victim};

/// Everything the script is built from.
pub(super) struct Parts {
    pub(super) title: String,
    pub(super) layout: Layout,
    pub(super) accused: Accused,
    /// The people who do not play whom `accused.outsiders` index.
    pub(super) outsiders: Cast,
    pub(super) clues: Vec<Clue>,
    pub(super) narrative: String,
    pub(super) language: Language,
    /// The victim's name, or `None` for the language's placeholder.
    pub(super) victim: Option<String>,
    /// Whom the vote is among; empty when it is simply the players.
    pub(super) suspects: Vec<Suspect>,
}

/// The language of the texts: Chinese when most letters are CJK (story, acts and relationship texts,
/// clue texts, the account).
pub(super) fn language(cast: &Cast, owners: &[Owner], narrative: &str) -> Language {
    let narrative = narrative.to_string();
    detect_language(
        cast.0
            .iter()
            .flat_map(|d| {
                std::iter::once(&d.story)
                    .chain(&d.acts)
                    .chain(&d.relationships)
            })
            .chain(owners.iter().flat_map(|o| &o.texts))
            .chain(std::iter::once(&narrative)),
    )
}

/// The placeholder victim of a language: "the victim", 死者.
pub(super) fn placeholder(language: Language) -> &'static str {
    match language {
        Language::En => "the victim",
        Language::Zh => "死者",
    }
}

/// Builds the script. Character culprits are murderers who killed the victim; a culprit who does not
/// play is marked in the suspects list; the truth names them all.
pub(super) fn script(p: Parts) -> Script {
    let victim = p
        .victim
        .unwrap_or_else(|| placeholder(p.language).to_string());
    let mut cast = p.layout.cast;
    let culprits = &p.accused.characters;
    let mut culprit_names: Vec<String> = culprits.iter().map(|&i| cast.0[i].name.clone()).collect();
    culprit_names.extend(
        p.accused
            .outsiders
            .iter()
            .map(|&i| p.outsiders.0[i].name.clone()),
    );
    drop_trailing_empty_acts(&mut cast);
    let characters = cast
        .0
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let murderer = culprits.contains(&i);
            Character {
                name: d.name,
                role: if murderer {
                    Role::Murderer
                } else {
                    Role::Civilian
                },
                public: String::new(),
                story: d.story,
                timeline: String::new(),
                acts: d.acts,
                secrets: Vec::new(),
                goals: d.goals,
                relationships: d.relationships,
                performance: d.performance,
                abilities: d.abilities,
                killed: if murderer {
                    vec![victim.clone()]
                } else {
                    Vec::new()
                },
            }
        })
        .collect();

    Script {
        format: 1,
        title: p.title,
        language: p.language,
        source: Some("mirage".into()),
        premise: p.layout.shared.join("\n\n"),
        acts: p.layout.stages.len().max(1) as u32,
        victims: vec![Victim {
            name: victim.clone(),
            description: String::new(),
        }],
        suspects: p.suspects,
        host: None,
        characters,
        clues: p.clues,
        truth: Truth {
            murderer: None,
            culprits: vec![Culprits {
                victim,
                by: culprit_names,
            }],
            narrative: p.narrative,
        },
        factual: Vec::new(),
        inferential: Vec::new(),
        choice: Vec::new(),
    }
}

/// A character absent from the last stages has empty acts there: they are not acts it plays.
fn drop_trailing_empty_acts(cast: &mut Cast) {
    for d in &mut cast.0 {
        while d.acts.last().is_some_and(|a| a.is_empty()) {
            d.acts.pop();
        }
    }
}
