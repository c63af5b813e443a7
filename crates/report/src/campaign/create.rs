//! Making a campaign: the one path `sleuth annotate create` and the viewer's *New campaign* form
//! share (`docs/humans.md`), so that a campaign made from a page is checked, drawn and stored exactly
//! as one made from a shell, and both refuse the same requests in the same words.
//!
//! [`check`] reads the request alone (no store, no file), so a caller can refuse a bad one before it
//! creates anything — not even the store of a run of `sleuth play` games; [`create`] checks it again,
//! refuses an id the run already has, draws the items ([`super::draw`]) and stores them with a fresh
//! token per annotator ([`store`], which `questions generate --review` calls with its own items).
//! The tokens are returned to be shown once: only their SHA-256 is stored.

use std::path::Path;

use rand::RngCore;
use serde_json::Value;

use super::{draw, CampaignError, Item, Kind, Settings, QUESTIONS_FROM};
use sleuth_store::annotations::{Annotations, NewCampaign};
use sleuth_store::StoreError;

/// A field of a campaign's request, named as the command's flag (without `--`) and as the viewer's
/// form field, so that a refusal names what to change in either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Id,
    Kind,
    PerCondition,
    Annotators,
    Stage,
    Condition,
    Seed,
}

impl Field {
    pub fn name(self) -> &'static str {
        match self {
            Field::Id => "id",
            Field::Kind => "kind",
            Field::PerCondition => "per-condition",
            Field::Annotators => "annotators",
            Field::Stage => "stage",
            Field::Condition => "condition",
            Field::Seed => "seed",
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A campaign just made: what to tell the researcher, once.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    pub id: String,
    pub kind: Kind,
    /// (annotator, token), by name: the only time the tokens exist outside the annotators' hands.
    pub tokens: Vec<(String, String)>,
    pub items: usize,
    /// What the draw could not do (a condition short of games, a game without the response).
    pub notes: Vec<String>,
}

/// The longest campaign id: it is shown in pages and addresses, and no name needs more.
const MAX_ID: usize = 128;

/// What an annotator's name may hold: their queue's order is seeded by it and the export's rows
/// carry it, so it stays a plain word.
const NAMES: &str = "names are letters, digits, '-' and '_', comma-separated";

fn invalid(field: Field, problem: impl Into<String>) -> CampaignError {
    CampaignError::Invalid {
        field,
        problem: problem.into(),
    }
}

/// The annotators' names, trimmed, sorted and without repeats, or why they cannot be names.
pub fn annotator_names(given: &[String]) -> Result<Vec<String>, CampaignError> {
    let mut names: Vec<String> = given.iter().map(|n| n.trim().to_string()).collect();
    names.sort();
    names.dedup();
    let word = |n: &String| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    };
    if names.is_empty() || !names.iter().all(word) {
        return Err(invalid(Field::Annotators, NAMES));
    }
    Ok(names)
}

/// Checks a request to draw a campaign without touching a file: the id, the kind (a *questions*
/// campaign is generated, not drawn), the number of items and the annotators' names. Returns the
/// names as they will be stored.
pub fn check(
    id: &str,
    settings: &Settings,
    names: &[String],
) -> Result<Vec<String>, CampaignError> {
    if settings.kind == Kind::Questions {
        return Err(invalid(Field::Kind, QUESTIONS_FROM));
    }
    if id.trim().is_empty() {
        return Err(invalid(Field::Id, "a campaign needs a name"));
    }
    if id.chars().count() > MAX_ID || id.chars().any(char::is_control) {
        return Err(invalid(
            Field::Id,
            format!("a name of at most {MAX_ID} characters, without control characters"),
        ));
    }
    if settings.per_condition == 0 {
        return Err(invalid(Field::PerCondition, "must be at least 1"));
    }
    if settings.stage.trim().is_empty() {
        return Err(invalid(
            Field::Stage,
            "a transcript event kind (`introduction` is the paper's)",
        ));
    }
    annotator_names(names)
}

/// The refusal of an id the run already has: a campaign holds people's work, so it is never
/// replaced.
fn taken(id: &str) -> CampaignError {
    invalid(
        Field::Id,
        format!("the run already has a campaign '{id}'; give this one another name"),
    )
}

/// Draws a campaign from the finished games under `run` and stores it in `store` with a fresh token
/// per annotator. Nothing is stored when the request is refused or no item can be drawn
/// ([`CampaignError::NothingDrawn`] carries the draw's notes, which say why).
pub fn create(
    store: &Annotations,
    run: &Path,
    id: &str,
    settings: &Settings,
    names: &[String],
) -> Result<Created, CampaignError> {
    let names = check(id, settings, names)?;
    if store.campaign(id)?.is_some() {
        return Err(taken(id));
    }
    let drawn = draw(run, settings)?;
    if drawn.items.is_empty() {
        return Err(CampaignError::NothingDrawn { notes: drawn.notes });
    }
    let items = drawn.items.len();
    let recorded = serde_json::to_value(settings)
        .map_err(|e| CampaignError::Nothing(format!("the settings do not serialise: {e}")))?;
    let tokens = store_items(store, id, settings.kind, &recorded, &names, drawn.items)?;
    Ok(Created {
        id: id.to_string(),
        kind: settings.kind,
        tokens,
        items,
        notes: drawn.notes,
    })
}

/// Stores a campaign whose items are already made (drawn, or generated by `questions generate
/// --review`) with a fresh token per annotator, and returns the tokens by name. `names` must be
/// checked ([`annotator_names`]); a campaign of the same id, even one made a moment ago by another
/// process, is refused.
pub fn store_items(
    store: &Annotations,
    id: &str,
    kind: Kind,
    settings: &Value,
    names: &[String],
    items: Vec<Item>,
) -> Result<Vec<(String, String)>, CampaignError> {
    let tokens: Vec<(String, String)> = names.iter().map(|n| (n.clone(), new_token())).collect();
    let items: Vec<(Value, Value)> = items.into_iter().map(|i| (i.shown, i.hidden)).collect();
    let made = store.create_campaign(&NewCampaign {
        id,
        kind: kind.as_str(),
        settings,
        annotators: &tokens,
        items: &items,
    });
    match made {
        Ok(()) => Ok(tokens),
        // The check before the draw passed, so another process made it meanwhile.
        Err(StoreError::Conflict(_)) if store.campaign(id).ok().flatten().is_some() => {
            Err(taken(id))
        }
        Err(e) => Err(e.into()),
    }
}

/// An unguessable token: 32 bytes from the operating system, hex. It is the annotator's link, and
/// opens their queue from any browser, so it must not be derivable from anything else.
fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(kind: Kind) -> Settings {
        Settings {
            kind,
            per_condition: 2,
            stage: "introduction".into(),
            conditions: Vec::new(),
            seed: 7,
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    fn field(r: Result<impl std::fmt::Debug, CampaignError>) -> Field {
        match r {
            Err(CampaignError::Invalid { field, .. }) => field,
            other => panic!("not a refused field: {other:?}"),
        }
    }

    #[test]
    fn a_bad_request_is_refused_naming_its_field() {
        let s = settings(Kind::Responses);
        let ann = names(&["ann"]);
        assert_eq!(field(check("", &s, &ann)), Field::Id);
        assert_eq!(field(check(" ", &s, &ann)), Field::Id);
        assert_eq!(field(check("a\nb", &s, &ann)), Field::Id);
        assert_eq!(field(check(&"x".repeat(129), &s, &ann)), Field::Id);
        assert_eq!(field(check("c", &s, &[])), Field::Annotators);
        assert_eq!(
            field(check("c", &s, &names(&["ann", "b c"]))),
            Field::Annotators
        );
        assert_eq!(field(check("c", &s, &names(&[" ", ""]))), Field::Annotators);
        let q = check("c", &settings(Kind::Questions), &ann);
        let e = q.as_ref().map_err(|e| e.to_string()).expect_err("refused");
        assert!(
            e.starts_with("--kind: ") && e.contains("questions generate"),
            "{e}"
        );
        assert_eq!(field(q), Field::Kind);
        let zero = Settings {
            per_condition: 0,
            ..s.clone()
        };
        assert_eq!(field(check("c", &zero, &ann)), Field::PerCondition);
        let no_stage = Settings {
            stage: " ".into(),
            ..s.clone()
        };
        assert_eq!(field(check("c", &no_stage, &ann)), Field::Stage);
        let e = check("c", &s, &names(&["b c"])).expect_err("refused");
        assert_eq!(
            e.to_string(),
            "--annotators: names are letters, digits, '-' and '_', comma-separated"
        );
    }

    #[test]
    fn names_are_trimmed_sorted_and_kept_once() {
        let got = check(
            "c",
            &settings(Kind::Rankings),
            &names(&[" bob", "ann", "bob "]),
        );
        assert_eq!(got.expect("names"), names(&["ann", "bob"]));
    }

    #[test]
    fn stored_campaigns_get_a_fresh_token_each_and_an_id_only_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Annotations::open(&dir.path().join("sleuth.db")).expect("store");
        let item = Item {
            shown: json!({"q": 1}),
            hidden: json!({"a": 1}),
        };
        let who = names(&["ann", "bob"]);
        let recorded = json!({"kind": "responses"});
        let tokens = store_items(&store, "c1", Kind::Responses, &recorded, &who, vec![item])
            .expect("stored");
        assert_eq!(tokens.len(), 2);
        assert_ne!(tokens[0].1, tokens[1].1);
        for (name, token) in &tokens {
            assert_eq!(token.len(), 64);
            assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
            let found = store.annotator_for_token(token).expect("lookup");
            assert_eq!(found, Some(("c1".to_string(), name.clone())));
        }
        // The same id again: refused before anything is drawn (the run directory has no game).
        let again = create(&store, dir.path(), "c1", &settings(Kind::Responses), &who);
        assert_eq!(field(again), Field::Id);
        let again = store_items(&store, "c1", Kind::Responses, &recorded, &who, Vec::new());
        assert_eq!(field(again), Field::Id);
        assert_eq!(store.campaigns().expect("list").len(), 1);
    }

    #[test]
    fn a_run_without_games_makes_no_campaign() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Annotations::open(&dir.path().join("sleuth.db")).expect("store");
        let made = create(
            &store,
            dir.path(),
            "c1",
            &settings(Kind::Responses),
            &names(&["ann"]),
        );
        assert!(matches!(made, Err(CampaignError::Report(_))), "{made:?}");
        assert!(store.campaigns().expect("list").is_empty());
    }
}
