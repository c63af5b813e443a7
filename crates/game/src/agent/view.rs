//! What a character may know: the boundary between the script (the truth of the case) and the agents.
//!
//! Agents are built from a [`CharacterView`]: their own character's script (acts as they are released),
//! their role, the script's language, title and public setting, the names and public introductions of
//! the others, and the suspects who do not play (names and descriptions, never which of them did it).
//! Nothing in it leads to another character's script, the culprits of the case or the answer keys of
//! the evaluation questions, so an agent cannot leak the truth into a prompt: there is no field to read
//! it from. The omniscient reference (OP) is the one agent that answers from every script;
//! it alone is constructed with an [`OmniscientView`].
//!
//! This module is the only one under `agent` that reads a [`Script`]; the views are built where the
//! characters are spawned (the game supervisor).
//!
//! ```
//! # fn read(view: &sleuth_game::agent::CharacterView) {
//! let _own = view.secrets(); // the character's own secrets: its player reads them
//! let _cast = view.cast(); // everyone's name and public introduction
//! # }
//! ```
//!
//! ```compile_fail
//! # fn leak(view: &sleuth_game::agent::CharacterView) {
//! // The view carries no truth: there is no script, no other character's secrets, no answer key.
//! let _ = view.script.truth.murderer;
//! # }
//! ```
//!
//! ```compile_fail
//! # fn leak(view: &sleuth_game::agent::CharacterView) {
//! let _ = view.characters[0].secrets.clone();
//! # }
//! ```
//!
//! ```compile_fail
//! # fn leak(view: &sleuth_game::agent::CharacterView) {
//! // A suspect who does not play is a name and a description; whether they did it is not there.
//! let _ = view.suspects()[0].culprit;
//! # }
//! ```

use std::sync::{Arc, LazyLock};

use serde::Serialize;

use sleuth_base::memo::{self, Memo};
use sleuth_base::text;
use sleuth_script::{Language, Script};

/// A script has no character of the requested name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the script has no character named {0}")]
pub struct ViewError(pub String);

/// A victim as every player knows them.
#[derive(Debug, Clone, Serialize)]
pub struct VictimCard {
    pub name: String,
    pub description: String,
}

/// Another player as everyone knows them: a name and the public introduction of the cast list.
#[derive(Debug, Clone, Serialize)]
pub struct CastMember {
    pub name: String,
    pub public: String,
}

/// A suspect who is not a player, as every player knows them: a name and who they are. Whether they are
/// the culprit is deliberately absent (the script's `Suspect::culprit` never reaches an agent).
#[derive(Debug, Clone, Serialize)]
pub struct SuspectCard {
    pub name: String,
    pub description: String,
}

/// The character's own private script.
#[derive(Debug, Serialize)]
struct OwnScript {
    story: String,
    timeline: String,
    /// Every act; only the released ones are reachable.
    acts: Vec<String>,
    secrets: Vec<String>,
    goals: Vec<String>,
    relationships: Vec<String>,
    performance: Vec<String>,
    abilities: Vec<String>,
    killed: Vec<String>,
}

/// What a view holds whatever has been handed out: a function of the script and the character alone,
/// so every game of a sweep that plays the script builds it alike.
#[derive(Debug, Serialize)]
struct ViewBase {
    name: String,
    murderer: bool,
    title: String,
    language: Language,
    premise: String,
    /// Acts (stages) of the script: how the game is structured, not what they hold.
    script_acts: u32,
    victims: Vec<VictimCard>,
    cast: Vec<CastMember>,
    /// Suspects who do not play (scripts with a `suspects` list), in the list's order.
    suspects: Vec<SuspectCard>,
    own: OwnScript,
    /// The memo's key of all of the above ([`shared_base`]); `None` for a base not shared.
    #[serde(skip)]
    key: Option<u128>,
}

/// Bytes of views [`shared_base`] and [`shared_facts`] keep per generation.
const SHARED_VIEW_BYTES: usize = 16 << 20;

/// One copy of a view's base for every game that builds an equal one. Each game used to keep its own:
/// every character's premise, cast list and own script (~11 KiB a game of orchard-press, a character's
/// whole script in MIRAGE's), thousands of equal copies in a sweep (issue 32). The key is the base's
/// JSON (unambiguous, every field), hashed when the view is built; bounded like every memo of
/// `sleuth_base::memo` (the views holding a base keep it).
fn shared_base(mut base: ViewBase) -> Arc<ViewBase> {
    static BASES: LazyLock<Memo<Arc<ViewBase>>> = LazyLock::new(|| Memo::new(SHARED_VIEW_BYTES));
    // Strings, lists and a flag serialise without fail; were one not to, the base goes unshared.
    let Ok(json) = serde_json::to_vec(&base) else {
        return Arc::new(base);
    };
    let key = memo::key(&json);
    base.key = Some(key);
    BASES.get_or_insert_with(key, move || (Arc::new(base), json.len()))
}

/// One copy of the facts of a base with `released` acts handed out, for every view at that point.
fn shared_facts(base: &ViewBase, released: u32) -> Arc<[String]> {
    static FACTS: LazyLock<Memo<Arc<[String]>>> = LazyLock::new(|| Memo::new(SHARED_VIEW_BYTES));
    let Some(base_key) = base.key else {
        return compute_facts(base, released).into();
    };
    // Keyed by the acts the facts are drawn from: a count past the script's acts draws on the same.
    let shown = released_acts(base, released).len() as u64;
    let key = memo::key_parts(&[&base_key.to_le_bytes(), &shown.to_le_bytes()]);
    FACTS.get_or_insert_with(key, || {
        let facts = compute_facts(base, released);
        let weight = facts.iter().map(String::len).sum();
        (facts.into(), weight)
    })
}

/// The sentences of the own script up to the released act that the agent may offer as facts: a later
/// act is never drawn on before it is handed out, and a murderer's secrets never.
fn compute_facts(base: &ViewBase, released: u32) -> Vec<String> {
    let o = &base.own;
    let mut facts = text::sentences(&o.story);
    facts.extend(text::sentences(&o.timeline));
    facts.extend(
        released_acts(base, released)
            .iter()
            .flat_map(|a| text::sentences(a)),
    );
    facts.extend(o.relationships.iter().flat_map(|r| text::sentences(r)));
    if !base.murderer {
        facts.extend(o.secrets.iter().flat_map(|s| text::sentences(s)));
    }
    facts
}

/// The texts of the acts handed out when `released` have been.
fn released_acts(base: &ViewBase, released: u32) -> &[String] {
    let shown = (released.max(1) as usize).min(base.own.acts.len());
    &base.own.acts[..shown]
}

/// Everything one player may know, and nothing more (see the module documentation). Cheap to clone:
/// what every game of the script holds alike is shared.
#[derive(Debug, Clone)]
pub struct CharacterView {
    base: Arc<ViewBase>,
    /// Acts handed out so far (1-based count).
    released: u32,
    /// The own script's sentences handed out so far, the murderer's secrets left out.
    facts: Arc<[String]>,
}

impl CharacterView {
    /// The view of character `name`, with the first act released.
    pub fn of(script: &Script, name: &str) -> Result<CharacterView, ViewError> {
        let c = script
            .character(name)
            .ok_or_else(|| ViewError(name.to_string()))?;
        let base = shared_base(ViewBase {
            name: c.name.clone(),
            murderer: c.is_murderer(),
            title: script.title.clone(),
            language: script.language,
            premise: script.premise.clone(),
            script_acts: script.acts,
            victims: script
                .victims
                .iter()
                .map(|v| VictimCard {
                    name: v.name.clone(),
                    description: v.description.clone(),
                })
                .collect(),
            cast: script
                .characters
                .iter()
                .map(|o| CastMember {
                    name: o.name.clone(),
                    public: o.public.clone(),
                })
                .collect(),
            suspects: script
                .non_player_suspects()
                .map(|s| SuspectCard {
                    name: s.name.clone(),
                    description: s.description.clone(),
                })
                .collect(),
            own: OwnScript {
                story: c.story.clone(),
                timeline: c.timeline.clone(),
                acts: c.acts.clone(),
                secrets: c.secrets.clone(),
                goals: c.goals.clone(),
                relationships: c.relationships.clone(),
                performance: c.performance.clone(),
                abilities: c.abilities.clone(),
                killed: c.killed.clone(),
            },
            key: None,
        });
        let mut view = CharacterView {
            base,
            released: 0,
            facts: Arc::from(Vec::new()),
        };
        view.release(1);
        Ok(view)
    }

    /// Hands out acts up to `act` (acts are never taken back). Only the character actor calls this,
    /// when the host releases an act; agents hold the view through a shared reference.
    pub(super) fn release(&mut self, act: u32) {
        self.released = self.released.max(act);
        self.facts = shared_facts(&self.base, self.released);
    }

    /// Hands out every act of the script at once (the ThinkThrice protocol, and the no-play references).
    pub(super) fn release_all(&mut self) {
        self.release(self.base.script_acts.max(1));
    }

    pub fn name(&self) -> &str {
        &self.base.name
    }

    /// The character's own role: a murderer knows it is one.
    pub fn is_murderer(&self) -> bool {
        self.base.murderer
    }

    pub fn title(&self) -> &str {
        &self.base.title
    }

    pub fn language(&self) -> Language {
        self.base.language
    }

    /// What everyone knows at the start.
    pub fn premise(&self) -> &str {
        &self.base.premise
    }

    pub fn victims(&self) -> &[VictimCard] {
        &self.base.victims
    }

    /// Every player (this one included) in cast order, with their public introduction.
    pub fn cast(&self) -> &[CastMember] {
        &self.base.cast
    }

    /// The suspects who do not play, with who they are: they can be suspected and voted for, but not
    /// questioned. Empty for a script whose suspects are its players.
    pub fn suspects(&self) -> &[SuspectCard] {
        &self.base.suspects
    }

    /// The other players' names, in cast order: whom this one may question (and, in a script without a
    /// suspects list, suspect and vote for).
    pub fn others(&self) -> impl Iterator<Item = &str> {
        self.base
            .cast
            .iter()
            .map(|c| c.name.as_str())
            .filter(move |n| *n != self.base.name)
    }

    /// Acts handed out so far; may run past the script's acts when the host says so.
    pub fn acts_released(&self) -> u32 {
        self.released
    }

    /// The texts of the acts handed out so far.
    pub fn acts(&self) -> &[String] {
        released_acts(&self.base, self.released)
    }

    /// How many acts the script has, handed out or not: prompts number the acts by it, so handing out
    /// act 2 appends to the system prompt instead of renaming act 1 (a provider's prompt cache keeps
    /// serving everything before it).
    pub fn act_count(&self) -> usize {
        (self.base.script_acts as usize).max(self.base.own.acts.len())
    }

    /// The own script's sentences handed out so far, without a murderer's secrets.
    pub fn facts(&self) -> &[String] {
        &self.facts
    }

    pub fn story(&self) -> &str {
        &self.base.own.story
    }

    pub fn timeline(&self) -> &str {
        &self.base.own.timeline
    }

    /// The character's own secrets.
    pub fn secrets(&self) -> &[String] {
        &self.base.own.secrets
    }

    pub fn goals(&self) -> &[String] {
        &self.base.own.goals
    }

    pub fn relationships(&self) -> &[String] {
        &self.base.own.relationships
    }

    pub fn performance(&self) -> &[String] {
        &self.base.own.performance
    }

    pub fn abilities(&self) -> &[String] {
        &self.base.own.abilities
    }

    /// The victims this character killed, as its own script says (empty for a civilian).
    pub fn killed(&self) -> &[String] {
        &self.base.own.killed
    }
}

/// One character's whole script as the omniscient reference reads it.
#[derive(Debug, Clone, Serialize)]
pub struct ScriptCard {
    pub name: String,
    pub public: String,
    pub story: String,
    pub timeline: String,
    pub acts: Vec<String>,
    pub secrets: Vec<String>,
    pub relationships: Vec<String>,
    pub murderer: bool,
}

/// Every character's script: what the Omniscient Perspective (OP) answers from, and only it.
#[derive(Debug, Clone)]
pub struct OmniscientView {
    everyone: Vec<ScriptCard>,
}

impl OmniscientView {
    pub fn of(script: &Script) -> OmniscientView {
        OmniscientView {
            everyone: script
                .characters
                .iter()
                .map(|o| ScriptCard {
                    name: o.name.clone(),
                    public: o.public.clone(),
                    story: o.story.clone(),
                    timeline: o.timeline.clone(),
                    acts: o.acts.clone(),
                    secrets: o.secrets.clone(),
                    relationships: o.relationships.clone(),
                    murderer: o.is_murderer(),
                })
                .collect(),
        }
    }

    /// Every character's script, in cast order.
    pub fn everyone(&self) -> &[ScriptCard] {
        &self.everyone
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// An example script of the repository (`examples/<file>`), for the agent module's tests.
    pub(in crate::agent) fn example(file: &str) -> Script {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples")
            .join(file);
        Script::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Every text of a view, as a prompt could show it: released acts only.
    fn texts(v: &CharacterView) -> Vec<String> {
        let mut out = vec![
            v.name().to_string(),
            v.title().to_string(),
            v.premise().to_string(),
            v.story().to_string(),
            v.timeline().to_string(),
        ];
        for list in [
            v.acts(),
            v.secrets(),
            v.goals(),
            v.relationships(),
            v.performance(),
            v.abilities(),
            v.killed(),
            v.facts(),
        ] {
            out.extend(list.iter().cloned());
        }
        out.extend(
            v.cast()
                .iter()
                .flat_map(|c| [c.name.clone(), c.public.clone()]),
        );
        out.extend(
            v.victims()
                .iter()
                .flat_map(|c| [c.name.clone(), c.description.clone()]),
        );
        out.extend(
            v.suspects()
                .iter()
                .flat_map(|c| [c.name.clone(), c.description.clone()]),
        );
        out
    }

    #[test]
    fn a_view_holds_none_of_the_other_characters_private_script() {
        for file in [
            "night-ferry.toml",
            "glasshouse.toml",
            "zh-teahouse.toml",
            "orchard-press.toml",
        ] {
            let script = example(file);
            for me in &script.characters {
                let mut view = CharacterView::of(&script, &me.name).expect("character exists");
                view.release_all();
                let seen = texts(&view).join("\n");
                for other in script.characters.iter().filter(|o| o.name != me.name) {
                    let private = [&other.story, &other.timeline]
                        .into_iter()
                        .chain(&other.acts)
                        .chain(&other.secrets)
                        .chain(&other.relationships)
                        .chain(&other.goals);
                    for t in private.filter(|t| t.trim().len() > 12) {
                        assert!(
                            !seen.contains(t.as_str()),
                            "{file}: {}'s view holds {}'s text: {t}",
                            me.name,
                            other.name
                        );
                    }
                }
                if !me.is_murderer() && !script.truth.narrative.trim().is_empty() {
                    assert!(!seen.contains(script.truth.narrative.trim()));
                }
            }
        }
    }

    /// A script whose culprit does not play: every view lists the non-player suspects with their public
    /// descriptions, and nothing in a view tells which of them did it — the view of a script where
    /// another suspect is marked as the culprit is the same, field for field.
    #[test]
    fn a_view_names_the_suspects_who_do_not_play_but_never_the_culprit() {
        let script = example("orchard-press.toml");
        let outside: Vec<_> = script.non_player_suspects().collect();
        assert_eq!(
            outside.len(),
            2,
            "the example has two suspects who do not play"
        );
        let mut swapped = script.clone();
        for s in &mut swapped.suspects {
            if script.character(&s.name).is_none() {
                s.culprit = !s.culprit;
            }
        }
        swapped.truth = Default::default();
        for me in &script.characters {
            let mut view = CharacterView::of(&script, &me.name).expect("character exists");
            view.release_all();
            let cards: Vec<(&str, &str)> = view
                .suspects()
                .iter()
                .map(|s| (s.name.as_str(), s.description.as_str()))
                .collect();
            let expected: Vec<(&str, &str)> = outside
                .iter()
                .map(|s| (s.name.as_str(), s.description.as_str()))
                .collect();
            assert_eq!(cards, expected, "{}", me.name);
            // Players are suspects as players: never listed again among the outsiders.
            assert!(cards.iter().all(|(n, _)| script.character(n).is_none()));
            let seen = format!("{view:?}");
            assert!(!seen.contains("culprit"), "{}'s view: {seen}", me.name);
            assert!(!seen.contains(script.truth.narrative.trim()));
            let mut other = CharacterView::of(&swapped, &me.name).expect("character exists");
            other.release_all();
            assert_eq!(
                seen,
                format!("{other:?}"),
                "{}'s view depends on who the culprit is",
                me.name
            );
        }
        // Without a suspects list nobody is listed.
        let ferry = example("night-ferry.toml");
        let view = CharacterView::of(&ferry, &ferry.characters[0].name).expect("exists");
        assert!(view.suspects().is_empty());
    }

    #[test]
    fn later_acts_are_out_of_reach_until_released() {
        let mut script = example("night-ferry.toml");
        script.acts = 3;
        script.characters[0].acts = vec![
            "Act one.".into(),
            "Act Zebra-Two.".into(),
            "Act three.".into(),
        ];
        let name = script.characters[0].name.clone();
        let mut view = CharacterView::of(&script, &name).expect("character exists");
        assert_eq!(view.acts(), ["Act one."]);
        assert!(!view.facts().iter().any(|f| f.contains("Zebra-Two")));
        view.release(2);
        assert_eq!(view.acts().len(), 2);
        assert!(view.facts().iter().any(|f| f.contains("Zebra-Two")));
        view.release(1);
        assert_eq!(view.acts_released(), 2, "acts are never taken back");
        view.release_all();
        assert_eq!(view.acts().len(), 3);
    }

    #[test]
    fn games_of_one_script_share_a_view_and_a_changed_script_does_not() {
        let (a, b) = (example("night-ferry.toml"), example("night-ferry.toml"));
        let name = a.characters[0].name.clone();
        let va = CharacterView::of(&a, &name).expect("character exists");
        let vb = CharacterView::of(&b, &name).expect("character exists");
        assert!(Arc::ptr_eq(&va.base, &vb.base), "one copy for both games");
        assert!(Arc::ptr_eq(&va.facts, &vb.facts));
        let mut changed = example("night-ferry.toml");
        changed.characters[0]
            .story
            .push_str(" She kept the ticket stub.");
        let vc = CharacterView::of(&changed, &name).expect("character exists");
        assert!(!Arc::ptr_eq(&va.base, &vc.base));
        assert!(vc.facts().iter().any(|f| f.contains("ticket stub")));
        assert!(!va.facts().iter().any(|f| f.contains("ticket stub")));
        let other = CharacterView::of(&a, &a.characters[1].name).expect("character exists");
        assert_ne!(
            other.name(),
            va.name(),
            "another character has a view of its own"
        );
    }

    #[test]
    fn an_unknown_character_has_no_view() {
        let script = example("night-ferry.toml");
        assert_eq!(
            CharacterView::of(&script, "Nobody").err(),
            Some(ViewError("Nobody".into()))
        );
    }
}
