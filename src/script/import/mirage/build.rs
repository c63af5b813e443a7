//! The canonical script from what the readers gathered: the language, the victim, each character's
//! role and acts (trailing empty acts dropped), and the truth naming the culprits.

use super::cast::Cast;
use super::stages::Layout;
use super::truth::Accused;
use super::victim::detect_victim;
use crate::script::import::detect_language;
use crate::script::{Character, Clue, Culprits, Language, Role, Script, Truth, Victim};

/// Builds the script titled `title` from the read `layout`, the `accused` culprits, the `clues` and the
/// true account `narrative`.
pub(super) fn script(
    title: String,
    layout: Layout,
    accused: &Accused,
    clues: Vec<Clue>,
    narrative: &str,
) -> Script {
    let narrative = narrative.to_string();
    let acts = layout.stages.len().max(1) as u32;
    let mut cast = layout.cast;
    let culprits = &accused.characters;

    // Language, then the victim.
    let language = detect_language(
        cast.0
            .iter()
            .flat_map(|d| {
                std::iter::once(&d.story)
                    .chain(&d.acts)
                    .chain(&d.relationships)
            })
            .chain(clues.iter().map(|c| &c.text))
            .chain(std::iter::once(&narrative)),
    );
    let victim = detect_victim(&cast, &narrative).unwrap_or_else(|| {
        match language {
            Language::En => "the victim",
            Language::Zh => "死者",
        }
        .to_string()
    });

    let culprit_names: Vec<String> = culprits.iter().map(|&i| cast.0[i].name.clone()).collect();
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
        title,
        language,
        source: Some("mirage".into()),
        premise: layout.shared.join("\n\n"),
        acts,
        victims: vec![Victim {
            name: victim.clone(),
            description: String::new(),
        }],
        suspects: Vec::new(),
        host: None,
        characters,
        clues,
        truth: Truth {
            murderer: None,
            culprits: vec![Culprits {
                victim,
                by: culprit_names,
            }],
            narrative,
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
