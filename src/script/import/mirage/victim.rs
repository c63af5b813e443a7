//! The victim, which the files do not name: the person most characters' relationship texts list who is
//! no character, confirmed by the true account when there is one.

use std::collections::HashMap;

use super::cast::{contains_bounded, strip_parens, Cast, Found};
use crate::text::is_cjk;

/// The victim's name by the rule of the module documentation, if it can be determined.
pub(super) fn detect_victim(cast: &Cast, narrative: &str) -> Option<String> {
    let n = cast.0.len();
    // lower-cased candidate → (display form, characters listing it)
    let mut counts: HashMap<String, (String, Vec<usize>)> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for (i, d) in cast.0.iter().enumerate() {
        for text in &d.relationships {
            for cand in relation_names(text) {
                if cast.find(&cand, true) != Found::None || names_character(cast, &cand) {
                    continue;
                }
                let key = cand.to_lowercase();
                let entry = counts.entry(key.clone()).or_insert_with(|| {
                    order.push(key.clone());
                    (cand.clone(), Vec::new())
                });
                if !entry.1.contains(&i) {
                    entry.1.push(i);
                }
            }
        }
    }
    let narrative = narrative.to_lowercase();
    let mut ranked: Vec<(&str, usize)> = order
        .iter()
        .map(|k| {
            let (display, who) = &counts[k];
            (display.as_str(), who.len())
        })
        .filter(|(display, _)| narrative.is_empty() || in_narrative(&narrative, display))
        .collect();
    ranked.sort_by_key(|r| std::cmp::Reverse(r.1));
    match ranked.as_slice() {
        [(name, c), rest @ ..]
            if *c >= 2 && c * 2 >= n && rest.first().is_none_or(|(_, c2)| c2 < c) =>
        {
            Some(name.to_string())
        }
        _ => None,
    }
}

/// Whether a candidate contains one of the characters' names (`Captain Hong Zilian`).
fn names_character(cast: &Cast, cand: &str) -> bool {
    let c = cand.to_lowercase();
    (0..cast.0.len()).any(|i| {
        cast.name_forms(i)
            .iter()
            .any(|f| f.chars().count() >= 2 && contains_bounded(&c, f))
    })
}

/// Whether a name occurs in the (lower-cased) narrative: as a string for CJK, else every word of it.
fn in_narrative(narrative: &str, name: &str) -> bool {
    let name = name.to_lowercase();
    if name.chars().any(is_cjk) {
        narrative.contains(&name)
    } else {
        name.split_whitespace()
            .all(|w| contains_bounded(narrative, w))
    }
}

/// The people a relationship text lists: the head of each `Name (role): …` line and every 【Name】.
fn relation_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(p) = line.find([':', '：']) {
            out.push(line[..p].to_string());
        }
    }
    let mut rest = text;
    while let Some(open) = rest.find('【') {
        let after = &rest[open + '【'.len_utf8()..];
        match after.find('】') {
            Some(close) => {
                out.push(after[..close].to_string());
                rest = &after[close + '】'.len_utf8()..];
            }
            None => break,
        }
    }
    out.into_iter()
        .map(|c| {
            strip_parens(&c)
                .trim()
                .trim_matches(['【', '】', '*', '-', '•'])
                .trim()
                .to_string()
        })
        .filter(|c| plausible_name(c))
        .collect()
}

/// A short capitalised (or CJK) phrase without digits or sentence punctuation.
fn plausible_name(c: &str) -> bool {
    let Some(first) = c.chars().next() else {
        return false;
    };
    let chars = c.chars().count();
    (first.is_uppercase() || is_cjk(first))
        && chars <= 40
        && c.split_whitespace().count() <= 4
        && !c
            .chars()
            .any(|ch| ch.is_ascii_digit() || ".,;!?。，；！？、\"“”".contains(ch))
        && (chars >= 2)
}
