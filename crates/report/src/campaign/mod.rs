//! Drawing the items of an annotation campaign from a run directory (issue 30, `docs/humans.md`).
//!
//! A campaign asks people what the papers asked their annotators: to rate the agents' responses
//! (ThinkThrice Appendix A, [`responses`]), to rank a MIRAGE game's characters (MIRAGE Table 7,
//! [`rankings`]) or to review generated factual questions (ThinkThrice §5.1, [`questions`]; its items
//! come from `sleuth questions generate --review`, not from a run's games). Drawing is a pure function of the run's finished games and a seed, so a campaign is
//! reproducible from its settings; what an item *is* (its conditions, games, the judge's scores) goes in
//! `hidden`, and what the annotator sees in `shown`, which never names a framework, model, arm, game id or
//! file: the study is blind.
//!
//! Making one — checking the request, drawing, storing it with a token per annotator — is
//! [`create`], shared by `sleuth annotate create` and the viewer's *New campaign* form.

use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ReportError;
use sleuth_game::game::Event;

pub mod answers;
pub mod create;
pub mod questions;
pub mod rankings;
pub mod responses;

pub use create::{annotator_names, check, create, store_items, Created, Field};

/// What a campaign asks of its annotators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Rate responses on ThinkThrice's three 1–5 scales, one response per condition in a group.
    Responses,
    /// Order a MIRAGE game's characters on ICI and SCI.
    Rankings,
    /// Accept, edit or reject generated factual questions before they enter a script.
    Questions,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Responses => "responses",
            Kind::Rankings => "rankings",
            Kind::Questions => "questions",
        }
    }
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        match s {
            "responses" => Ok(Kind::Responses),
            "rankings" => Ok(Kind::Rankings),
            "questions" => Ok(Kind::Questions),
            other => Err(format!(
                "campaign kind '{other}' is not one of: responses, rankings, questions"
            )),
        }
    }
}

/// How a campaign's items are drawn: stored with the campaign, so that it can be drawn again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub kind: Kind,
    /// Items per condition: groups of responses (each holds one response of every condition), or MIRAGE
    /// games of each condition.
    pub per_condition: usize,
    /// The transcript event kind whose text is rated (*responses*): `introduction` is the paper's.
    pub stage: String,
    /// Only conditions whose label contains one of these (all when empty).
    pub conditions: Vec<String>,
    pub seed: u64,
}

/// One item: what the annotator is shown, and what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub shown: Value,
    pub hidden: Value,
}

/// A campaign's items, and what could not be drawn (a condition short of games, a game without the
/// response), said to the researcher rather than hidden.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Drawn {
    pub items: Vec<Item>,
    pub notes: Vec<String>,
}

/// Why no campaign could be drawn or made.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error("{0}")]
    Nothing(String),
    /// A field of the request ([`Field`]: the command's flag, the form's field) and what it must
    /// be, so that the command and the viewer's form both say what to change.
    #[error("--{field}: {problem}")]
    Invalid { field: Field, problem: String },
    /// The draw found nothing to ask; its notes say what was missing.
    #[error("no item could be drawn; nothing was created")]
    NothingDrawn { notes: Vec<String> },
    /// The run's store failed (or refused a campaign it already has).
    #[error(transparent)]
    Store(#[from] sleuth_store::StoreError),
}

/// How a *questions* campaign is made instead of drawn: its candidates are generated for a script.
pub const QUESTIONS_FROM: &str =
    "a questions campaign is not drawn from a run's games: make it with \
     `sleuth questions generate SCRIPT --review RUN --campaign ID --annotators NAMES`";

/// Draws the items of a campaign from the finished games under `run`.
pub fn draw(run: &Path, settings: &Settings) -> Result<Drawn, CampaignError> {
    if settings.kind == Kind::Questions {
        return Err(CampaignError::Nothing(QUESTIONS_FROM.into()));
    }
    if settings.per_condition == 0 {
        return Err(CampaignError::Invalid {
            field: Field::PerCondition,
            problem: "must be at least 1".into(),
        });
    }
    let grouping = crate::Grouping::new(crate::load(run)?.games);
    match settings.kind {
        Kind::Responses => responses::draw(&grouping, settings),
        Kind::Rankings => rankings::draw(&grouping, settings),
        Kind::Questions => Err(CampaignError::Nothing(QUESTIONS_FROM.into())),
    }
}

/// The conditions a campaign covers, as indices into the grouping's conditions.
fn chosen_conditions(g: &crate::Grouping, settings: &Settings) -> Vec<usize> {
    (0..g.conditions.len())
        .filter(|&c| {
            settings.conditions.is_empty()
                || settings
                    .conditions
                    .iter()
                    .any(|want| g.conditions[c].label().contains(want.as_str()))
        })
        .collect()
}

/// A generator for one purpose of one campaign: the campaign's seed and a name, so that adding a
/// condition does not reshuffle another's draw.
fn rng(seed: u64, purpose: &str) -> ChaCha8Rng {
    let named = sleuth_base::memo::key(purpose.as_bytes()) as u64;
    ChaCha8Rng::seed_from_u64(seed ^ named)
}

/// `items` shuffled by a generator named `purpose`.
fn shuffled<T>(mut items: Vec<T>, seed: u64, purpose: &str) -> Vec<T> {
    items.shuffle(&mut rng(seed, purpose));
    items
}

/// The events of a game's transcript.
fn read_events(path: &Path) -> Result<Vec<Event>, ReportError> {
    let mut events = Vec::new();
    crate::load::for_each_event(path, |e| events.push(e))?;
    Ok(events)
}

/// The script a game was played from, when its path is recorded and still reads.
fn script_of(record: &crate::GameRecord) -> Option<(PathBuf, sleuth_script::Script)> {
    let path = PathBuf::from(record.script_path.as_ref()?);
    let script = sleuth_script::Script::load(&path).ok()?;
    Some((path, script))
}

/// Labels of the responses of a group: A, B, … Z, then AA, AB, …
fn label(i: usize) -> String {
    let letters: Vec<char> = ('A'..='Z').collect();
    if i < 26 {
        letters[i].to_string()
    } else {
        format!("{}{}", letters[i / 26 - 1], letters[i % 26])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_run_past_z() {
        assert_eq!(label(0), "A");
        assert_eq!(label(25), "Z");
        assert_eq!(label(26), "AA");
        assert_eq!(label(27), "AB");
    }

    #[test]
    fn a_purpose_has_its_own_shuffle_and_a_seed_repeats_it() {
        let a = shuffled((0..20).collect::<Vec<_>>(), 7, "one");
        assert_eq!(a, shuffled((0..20).collect::<Vec<_>>(), 7, "one"));
        assert_ne!(a, shuffled((0..20).collect::<Vec<_>>(), 7, "two"));
        assert_ne!(a, shuffled((0..20).collect::<Vec<_>>(), 8, "one"));
    }

    #[test]
    fn kinds_read_as_written() {
        assert_eq!("responses".parse::<Kind>(), Ok(Kind::Responses));
        assert!("votes"
            .parse::<Kind>()
            .is_err_and(|e| e.contains("responses, rankings")));
    }
}
