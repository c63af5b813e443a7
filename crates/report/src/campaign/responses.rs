//! *responses* campaigns: ThinkThrice Appendix A's groups of responses, one per condition.
//!
//! The paper took 20 self-introductions per architecture and had them compared in groups of five, one
//! response per architecture for the same character, the character's script beside them. Here a group
//! is one (script, character) and one response of that character at the campaign's stage from a game of
//! every condition; groups go round the (script, character) pairs every condition played, in an order
//! drawn by seed, and each condition's games for a pair are taken in a drawn order without replacement.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use super::{
    chosen_conditions, label, read_events, script_of, shuffled, CampaignError, Drawn, Item,
    Settings,
};
use crate::Grouping;
use sleuth_game::game::Event;

/// One (script, character) that every chosen condition played, with each condition's games of the
/// script.
struct Pair<'a> {
    script: &'a str,
    title: String,
    character: String,
    reference: String,
    /// Per chosen condition (in `conds` order): its games of the script, in drawn order.
    games: Vec<Vec<usize>>,
}

pub(super) fn draw(g: &Grouping, s: &Settings) -> Result<Drawn, CampaignError> {
    let conds = chosen_conditions(g, s);
    if conds.is_empty() {
        return Err(CampaignError::Nothing(format!(
            "no condition of the run matches {:?}",
            s.conditions
        )));
    }
    let mut drawn = Drawn::default();
    let mut pairs = pairs(g, &conds, s, &mut drawn.notes);
    if pairs.is_empty() {
        return Err(CampaignError::Nothing(
            "no script was played by every chosen condition (with its script file still readable)"
                .into(),
        ));
    }
    let mut transcripts: HashMap<usize, Vec<Event>> = HashMap::new();
    let mut cursors = vec![vec![0usize; conds.len()]; pairs.len()];
    let mut exhausted = vec![false; pairs.len()];
    let mut groups = vec![0usize; pairs.len()];
    let mut k = 0usize;
    while drawn.items.len() < s.per_condition && exhausted.iter().any(|e| !e) {
        let p = k % pairs.len();
        k += 1;
        if exhausted[p] {
            continue;
        }
        let mut responses = Vec::with_capacity(conds.len());
        for (ci, &c) in conds.iter().enumerate() {
            match next_response(
                g,
                &mut pairs[p],
                ci,
                &mut cursors[p][ci],
                s,
                &mut transcripts,
            )? {
                Some(found) => responses.push((c, found)),
                None => break,
            }
        }
        if responses.len() < conds.len() {
            exhausted[p] = true;
            drawn.notes.push(format!(
                "{} / {}: a condition has no more games with a '{}' response ({} group(s) drawn of it)",
                pairs[p].title, pairs[p].character, s.stage, groups[p]
            ));
            continue;
        }
        groups[p] += 1;
        drawn
            .items
            .push(group(g, &pairs[p], responses, drawn.items.len(), s));
    }
    if drawn.items.len() < s.per_condition {
        drawn.notes.push(format!(
            "{} group(s) drawn of the {} asked for: the run has no more responses for every condition",
            drawn.items.len(),
            s.per_condition
        ));
    }
    Ok(drawn)
}

/// The (script, character) pairs every chosen condition played, in drawn order.
fn pairs<'a>(
    g: &'a Grouping,
    conds: &[usize],
    s: &Settings,
    notes: &mut Vec<String>,
) -> Vec<Pair<'a>> {
    // Script label → per chosen condition, its games of that script.
    let mut by_script: BTreeMap<&str, Vec<Vec<usize>>> = BTreeMap::new();
    for (ci, &c) in conds.iter().enumerate() {
        for &a in &g.conditions[c].arms {
            let arm = &g.arms[a];
            let row = by_script
                .entry(arm.script_label.as_str())
                .or_insert_with(|| vec![Vec::new(); conds.len()]);
            row[ci].extend(arm.games.iter().copied());
        }
    }
    let mut out = Vec::new();
    for (script, games) in by_script {
        if games.iter().any(Vec::is_empty) {
            notes.push(format!(
                "{script}: not played by every chosen condition; left out"
            ));
            continue;
        }
        let Some((_, sc)) = games.iter().flatten().find_map(|&i| script_of(&g.games[i])) else {
            notes.push(format!(
                "{script}: its script file is not readable; left out"
            ));
            continue;
        };
        for c in &sc.characters {
            let games = games
                .iter()
                .enumerate()
                .map(|(ci, list)| {
                    let purpose = format!("games {script} / {} / {ci}", c.name);
                    shuffled(list.clone(), s.seed, &purpose)
                })
                .collect();
            out.push(Pair {
                script,
                title: sc.title.clone(),
                character: c.name.clone(),
                reference: c.script_text(),
                games,
            });
        }
    }
    shuffled(out, s.seed, "pairs")
}

/// A response found: the game it is from and its text.
struct Found {
    game: usize,
    text: String,
}

/// The next game of condition `ci` for `pair` whose transcript has the character's response at the
/// stage, moving the cursor past it.
fn next_response(
    g: &Grouping,
    pair: &mut Pair<'_>,
    ci: usize,
    cursor: &mut usize,
    s: &Settings,
    transcripts: &mut HashMap<usize, Vec<Event>>,
) -> Result<Option<Found>, CampaignError> {
    while let Some(&game) = pair.games[ci].get(*cursor) {
        *cursor += 1;
        let Some(path) = &g.games[game].transcript else {
            continue;
        };
        let events = match transcripts.entry(game) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(read_events(path)?),
        };
        let text = events
            .iter()
            .find(|e| e.kind == s.stage && e.speaker == pair.character && !e.text.trim().is_empty())
            .map(|e| e.text.clone());
        if let Some(text) = text {
            return Ok(Some(Found { game, text }));
        }
    }
    Ok(None)
}

/// One group: the responses under labels shuffled per group, the conditions in `hidden` only.
fn group(
    g: &Grouping,
    pair: &Pair<'_>,
    responses: Vec<(usize, Found)>,
    n: usize,
    s: &Settings,
) -> Item {
    let responses = shuffled(responses, s.seed, &format!("labels {n}"));
    let mut shown = Vec::with_capacity(responses.len());
    let mut hidden = serde_json::Map::new();
    for (i, (c, found)) in responses.into_iter().enumerate() {
        let l = label(i);
        shown.push(json!({"label": l, "text": found.text}));
        hidden.insert(
            l,
            json!({
                "condition": g.conditions[c].label(),
                "game": g.games[found.game].result.game_id,
            }),
        );
    }
    Item {
        shown: json!({
            "script": pair.title,
            "character": pair.character,
            "stage": s.stage,
            "reference": pair.reference,
            "responses": shown,
        }),
        hidden: json!({
            "script": pair.title,
            "script_label": pair.script,
            "character": pair.character,
            "stage": s.stage,
            "responses": Value::Object(hidden),
        }),
    }
}
