//! *rankings* campaigns: MIRAGE Appendix I's human rankings of a game's characters on ICI and SCI,
//! which Table 7 compares with the LLM judge's scores (Kendall's τ).
//!
//! An item is one finished MIRAGE game whose judge scored every character: the annotator reads the
//! conversation every player could see (what the judge's ICI rests on) and each character's script
//! (what SCI compares the play with), and orders the characters on each criterion. The judge's scores
//! stay in `hidden`; the characters are listed in an order shuffled per item, never the judge's.

use serde_json::{json, Map, Value};

use super::{
    chosen_conditions, read_events, script_of, shuffled, CampaignError, Drawn, Item, Settings,
};
use crate::Grouping;
use sleuth_game::game::{Protocol, Visibility};

pub(super) fn draw(g: &Grouping, s: &Settings) -> Result<Drawn, CampaignError> {
    let conds: Vec<usize> = chosen_conditions(g, s)
        .into_iter()
        .filter(|&c| g.conditions[c].key.protocol == Protocol::Mirage.as_str())
        .collect();
    if conds.is_empty() {
        return Err(CampaignError::Nothing(
            "a rankings campaign needs MIRAGE games (protocol mirage) among the chosen conditions"
                .into(),
        ));
    }
    let mut drawn = Drawn::default();
    for c in conds {
        let label = g.conditions[c].label();
        let games = shuffled(
            g.conditions[c].games.clone(),
            s.seed,
            &format!("games {label}"),
        );
        let mut taken = 0;
        for i in games {
            if taken == s.per_condition {
                break;
            }
            if let Some(item) = item(g, i, &label)? {
                drawn.items.push(item);
                taken += 1;
            }
        }
        if taken < s.per_condition {
            drawn.notes.push(format!(
                "{label}: {taken} game(s) with every character scored by the judge, of the {} asked for",
                s.per_condition
            ));
        }
    }
    let items = shuffled(drawn.items, s.seed, "items");
    Ok(Drawn {
        items,
        notes: drawn.notes,
    })
}

/// The item of game `i`, when its judge scored ICI and SCI for every character and its transcript and
/// script can be read.
fn item(g: &Grouping, i: usize, condition: &str) -> Result<Option<Item>, CampaignError> {
    let record = &g.games[i];
    let r = &record.result;
    let Some(scores) = &r.mirage_scores else {
        return Ok(None);
    };
    let (mut ici, mut sci) = (Map::new(), Map::new());
    for (name, c) in &scores.characters {
        let (Some(i), Some(s)) = (c.ici, c.sci) else {
            return Ok(None);
        };
        ici.insert(name.clone(), json!(i));
        sci.insert(name.clone(), json!(s));
    }
    if ici.len() < 2 {
        return Ok(None);
    }
    let (Some(path), Some((_, script))) = (&record.transcript, script_of(record)) else {
        return Ok(None);
    };
    let conversation: Vec<Value> = read_events(path)?
        .into_iter()
        .filter(|e| e.visible_to == Visibility::All && (e.speaker != "host" || e.kind == "clue"))
        .map(|e| json!({"speaker": e.speaker, "kind": e.kind, "text": e.text}))
        .collect();
    let names: Vec<String> = shuffled(
        ici.keys().cloned().collect(),
        r.seed,
        &format!("characters {}", r.game_id),
    );
    let characters: Vec<Value> = names
        .iter()
        .map(|n| {
            let own = script
                .character(n)
                .map(|c| c.script_text())
                .unwrap_or_default();
            json!({"name": n, "script": own})
        })
        .collect();
    Ok(Some(Item {
        shown: json!({
            "script": script.title,
            "characters": characters,
            "conversation": conversation,
        }),
        hidden: json!({
            "game": r.game_id,
            "condition": condition,
            "model": r.model,
            "judge": r.judges.get("mirage").cloned().unwrap_or_default(),
            "scores": {"ici": ici, "sci": sci},
        }),
    }))
}
