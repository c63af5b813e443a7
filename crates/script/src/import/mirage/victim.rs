//! The victim, which the files do not list: the name the texts give the dead person, by three sources
//! tried in order, the first with a clear answer winning:
//!
//! 1. victim labels ([`mentions`]: `Victim: X`, `X (…) [Deceased]`, `死者：X`): the script says outright
//!    who died;
//! 2. the relationship texts: the person most characters list (`Name (role): …` lines, 【Name】) who is
//!    no character, listed by at least half of them (and at least two), ahead of everyone else, and —
//!    when there is an account — found in it;
//! 3. every mention, labels and phrases about a death (`X was murdered`, `X's body`, `X遇害`, …), across
//!    script.json, clues.json and the account.
//!
//! A clear answer from mentions (1 and 3): the name most mentioned (variants of one name counted
//! together: `Tianchuan` and `Li Tianchuan` are `Tianchuan Li`, an alias in parentheses is its name) is
//! mentioned at least twice, by at least two texts (characters, clue owners, premise, account), at least
//! twice as often as the next. Phrases about a death also tell of back-story deaths, so under 3 the name
//! must also be in the account when there is one. No clear answer: the caller keeps the placeholder and
//! warns with [`Unclear`].

use std::collections::HashMap;

use super::cast::{contains_bounded, strip_parens, Cast, Found};
use super::clues::Owner;
use super::corpus::Corpus;
use super::mentions::{mentions, Mention, LABELS_EN, LABELS_ZH};
use sleuth_base::text::is_cjk;

/// Why no victim was named: the most mentioned names, for the warning.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Unclear(pub(super) String);

/// The victim's name by the rules of the module documentation.
pub(super) fn detect_victim(
    cast: &Cast,
    corpus: &Corpus,
    owners: &[Owner],
    narrative: &str,
) -> Result<String, Unclear> {
    let known = known_names(cast, owners);
    let all: Vec<Mention> = mentions(corpus, &known)
        .into_iter()
        .filter(|m| !refers_to_player(cast, &m.name))
        .collect();
    let labels: Vec<Mention> = all.iter().filter(|m| m.label).cloned().collect();
    if let Ok(name) = clear_winner(&tally(&labels), narrative, false) {
        return Ok(name);
    }
    if let Some(name) = by_relationships(cast, narrative) {
        return Ok(name);
    }
    clear_winner(&tally(&all), narrative, true)
}

/// Names known from the files, which bound a Chinese name in a run of characters: clue owners (without
/// parenthesised parts) and the possessor of an owner (`X的房间`, `X's Room`), the names relationship
/// texts list, the characters' names.
fn known_names(cast: &Cast, owners: &[Owner]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in owners {
        let bare = strip_parens(&o.name);
        for sep in ["的", "之", "'s", "’s"] {
            if let Some((head, _)) = bare.split_once(sep) {
                out.push(head.trim().to_string());
            }
        }
        out.push(bare);
    }
    for d in &cast.0 {
        for t in &d.relationships {
            out.extend(relation_names(t));
        }
        out.extend(d.aliases.iter().map(|a| strip_parens(a)));
    }
    out.retain(|n| !n.is_empty());
    out.sort();
    out.dedup();
    out
}

/// A name that is (part of) a character's: the players are alive, and validation refuses a victim who
/// plays.
fn refers_to_player(cast: &Cast, name: &str) -> bool {
    cast.find(name, true) != Found::None || names_character(cast, name)
}

/// Mentions of one person counted together.
#[derive(Debug, Default)]
struct Group {
    /// Each spelling with its count, first seen first.
    variants: Vec<(String, usize)>,
    aliases: Vec<String>,
    mentions: usize,
    sources: Vec<String>,
}

impl Group {
    /// The spelling used most (the first seen of equals).
    fn display(&self) -> &str {
        let best = self.variants.iter().map(|v| v.1).max().unwrap_or(0);
        self.variants
            .iter()
            .find(|v| v.1 == best)
            .map_or("", |v| v.0.as_str())
    }

    fn absorb(&mut self, other: Group) {
        for (v, n) in other.variants {
            match self.variants.iter_mut().find(|x| x.0 == v) {
                Some(x) => x.1 += n,
                None => self.variants.push((v, n)),
            }
        }
        for a in other.aliases {
            if !self.aliases.contains(&a) {
                self.aliases.push(a);
            }
        }
        for s in other.sources {
            if !self.sources.contains(&s) {
                self.sources.push(s);
            }
        }
        self.mentions += other.mentions;
    }

    /// Whether `other`'s name is a shorter or reordered form of this one's, or one of its aliases.
    fn covers(&self, other: &Group) -> bool {
        let name = other.display();
        self.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
            || self.variants.iter().any(|(v, _)| part_of(name, v))
    }
}

/// `short` names the same person as `long`: for CJK, a substring of at least two characters; else its
/// words (honorifics aside, ignoring case) are among `long`'s.
fn part_of(short: &str, long: &str) -> bool {
    if short.chars().any(is_cjk) {
        return short.chars().count() >= 2 && long.contains(short);
    }
    let words = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .filter(|w| !w.ends_with('.'))
            .map(str::to_lowercase)
            .collect()
    };
    let (a, b) = (words(short), words(long));
    !a.is_empty() && a.iter().all(|w| b.contains(w))
}

/// The mentions grouped: by spelling, then each group folded into the one bigger group that covers it
/// (most mentioned first), so the biggest group of a person gathers its variants.
fn tally(ms: &[Mention]) -> Vec<Group> {
    let mut by_name: Vec<Group> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for m in ms {
        if is_label_word(&m.name) {
            continue;
        }
        let k = *index.entry(m.name.clone()).or_insert_with(|| {
            by_name.push(Group {
                variants: vec![(m.name.clone(), 0)],
                ..Group::default()
            });
            by_name.len() - 1
        });
        let g = &mut by_name[k];
        g.variants[0].1 += 1;
        g.mentions += 1;
        if !g.sources.contains(&m.source) {
            g.sources.push(m.source.clone());
        }
        if let Some(a) = &m.alias {
            if !g.aliases.contains(a) {
                g.aliases.push(a.clone());
            }
        }
    }
    // Most mentioned first; of equals, the longer name first, so a shorter form folds into it. Stable:
    // otherwise first-seen order.
    by_name.sort_by_key(|g| {
        (
            std::cmp::Reverse(g.mentions),
            std::cmp::Reverse(g.display().chars().count()),
        )
    });
    let mut out: Vec<Group> = Vec::new();
    for g in by_name {
        let hosts: Vec<usize> = (0..out.len()).filter(|&i| out[i].covers(&g)).collect();
        match hosts.as_slice() {
            [i] => out[*i].absorb(g),
            _ => out.push(g),
        }
    }
    out.sort_by_key(|g| std::cmp::Reverse(g.mentions));
    out
}

/// The clear winner of the module documentation, or why there is none.
fn clear_winner(groups: &[Group], narrative: &str, in_account: bool) -> Result<String, Unclear> {
    let Some(top) = groups.first() else {
        return Err(Unclear("no text names anyone as dead".into()));
    };
    let second = groups.get(1).map_or(0, |g| g.mentions);
    let narrative = narrative.to_lowercase();
    let confirmed = !in_account
        || narrative.trim().is_empty()
        || top
            .variants
            .iter()
            .map(|v| &v.0)
            .chain(&top.aliases)
            .any(|n| in_narrative(&narrative, n));
    if top.mentions >= 2 && top.sources.len() >= 2 && top.mentions >= 2 * second && confirmed {
        return Ok(top.display().to_string());
    }
    let listed: Vec<String> = groups
        .iter()
        .take(3)
        .map(|g| format!("{} {}×", g.display(), g.mentions))
        .collect();
    let why = if !confirmed {
        format!(
            "the most named as dead, {}, is not in the true account",
            top.display()
        )
    } else {
        "no name is clearly ahead (at least twice, by two texts, twice as often as the next)".into()
    };
    Err(Unclear(format!(
        "named as dead: {}; {why}",
        listed.join(", ")
    )))
}

/// The relationship rule (2 of the module documentation).
fn by_relationships(cast: &Cast, narrative: &str) -> Option<String> {
    let n = cast.0.len();
    // lower-cased candidate → (display form, characters listing it)
    let mut counts: HashMap<String, (String, Vec<usize>)> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for (i, d) in cast.0.iter().enumerate() {
        for text in &d.relationships {
            for cand in relation_names(text) {
                if refers_to_player(cast, &cand) {
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

/// A label word, not a name: `Victim`, `Suspect`, `死者`, `嫌疑人`, or a heading containing one
/// (`Other Suspects`, `其他嫌疑人`).
pub(super) fn is_label_word(name: &str) -> bool {
    const SUSPECT_EN: &[&str] = &["suspect", "suspects"];
    const SUSPECT_ZH: &[&str] = &["嫌疑人", "嫌犯"];
    let lower = name.to_lowercase();
    lower
        .split_whitespace()
        .any(|w| LABELS_EN.contains(&w) || SUSPECT_EN.contains(&w))
        || LABELS_ZH.iter().chain(SUSPECT_ZH).any(|l| name.contains(l))
}

/// The people a relationship text lists: the head of each `Name (role): …` line and every 【Name】,
/// label words (`Victim:`, `嫌疑人：`) aside.
pub(super) fn relation_names(text: &str) -> Vec<String> {
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
        .filter(|c| plausible_name(c) && !is_label_word(c))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, source: &str, label: bool) -> Mention {
        Mention {
            name: name.into(),
            alias: None,
            source: source.into(),
            label,
        }
    }

    #[test]
    fn variants_of_one_name_are_counted_together() {
        let mut ms = vec![
            m("Tom Bell", "a", false),
            m("Tom Bell", "b", false),
            m("Tom", "c", false),
            m("Bell Tom", "d", false),
            m("Mr. Tom Bell", "d", false),
            m("Ida Fern", "a", false),
        ];
        ms.push(Mention {
            alias: Some("Tommy".into()),
            ..m("Tom Bell", "e", false)
        });
        ms.push(m("Tommy", "f", false));
        let g = tally(&ms);
        assert_eq!(g[0].display(), "Tom Bell");
        assert_eq!(g[0].mentions, 7);
        assert_eq!(g[0].sources.len(), 6);
        assert_eq!(g[1].display(), "Ida Fern");
        assert_eq!(
            clear_winner(&g, "Tom Bell died.", true),
            Ok("Tom Bell".into())
        );
        // A name not in the account is no answer under the account rule.
        assert!(clear_winner(&g, "Ida Fern died.", true).is_err());
        assert!(clear_winner(&g, "Ida Fern died.", false).is_ok());
    }

    #[test]
    fn a_winner_needs_two_texts_and_a_lead() {
        let one_text = tally(&[m("Tom Bell", "a", false), m("Tom Bell", "a", false)]);
        assert!(clear_winner(&one_text, "", true).is_err());
        let tie = tally(&[
            m("Tom Bell", "a", false),
            m("Tom Bell", "b", false),
            m("Ida Fern", "a", false),
            m("Ida Fern", "c", false),
        ]);
        let err = clear_winner(&tie, "", true).unwrap_err();
        assert!(
            err.0.contains("Tom Bell 2×") && err.0.contains("Ida Fern 2×"),
            "{err:?}"
        );
        assert!(clear_winner(&[], "", true).is_err());
    }

    #[test]
    fn label_words_are_no_names() {
        for w in [
            "Victim",
            "Other Suspects",
            "嫌疑人",
            "其他嫌疑人介绍",
            "死者",
        ] {
            assert!(is_label_word(w), "{w}");
        }
        assert!(!is_label_word("Tom Bell") && !is_label_word("周老爷"));
        assert_eq!(
            relation_names(
                "Victim: Tom Bell\nSuspect: Ann\nIda Fern (cook): kind.\n【死者】【周老爷】"
            ),
            ["Ida Fern", "周老爷"]
        );
    }
}
