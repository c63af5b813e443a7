//! The people the case is about who do not play, from whom a culprit who is no character is taken and
//! among whom the players then vote (MIRAGE "The Final Performance of a Big Star": two players
//! investigate, the culprit is one of the people their clues are about).
//!
//! Those people are the clue owners that are person names ([`is_person`]): each of them has clue cards
//! of its own ("investigate Richard"), and an owner that is a place or a thing is not a suspect. An owner
//! is a person name when, outside parenthesised parts:
//! - it has no digit (`Public Clue 1`) and no possessive (`X's Office`, `X的房间`, `X之…`);
//! - English: one to four capitalised words (`Mr.`-style honorifics allowed), none written in lower
//!   case anywhere in the texts except possibly the first, a title (`Security Wei`, not `Hotel Night
//!   Security Guard` or `Deep Investigation into X`);
//! - Chinese: two to four CJK characters, the last not a place or document head (室, 房, 厅, 馆, 表, …),
//!   never written followed by a locative particle (`X里`, `X内`, `X中`, `X外`);
//! - it is no character (also not by a misspelling: edit distance ≤ 0.2 as for titles) and not the
//!   victim;
//! - some other text (script.json, another owner's clues, the account) names it, not right after an
//!   article or an opening quote (`the X`, `'X'`, `《X》`): the case is about them, not a card heading.
//!
//! A suspect's description is the first sentence naming them in a text every player may know: the
//! premise, a character's `Relationship` text, or a clue whose owner says it is public (`Public …`,
//! `公开…`, which the reference implementation hands to every player); empty when there is none. Other
//! clue texts are found by investigating, so they are not used.

use std::path::Path;

use super::cast::{contains_bounded, strip_parens, Cast, Found};
use super::clues::Owner;
use super::corpus::{Corpus, Source};
use super::truth::{title_distance, Accused};
use crate::import::{format_error, ImportError};
use crate::model::Suspect;
use sleuth_base::text::{is_cjk, sentences};

/// Last characters of Chinese place and document names.
const ZH_PLACE_HEADS: &[char] = &[
    '室', '房', '厅', '库', '吧', '店', '馆', '楼', '院', '园', '场', '屋', '舱', '廊', '台', '间',
    '表', '单', '录', '书', '信', '图', '报', '册',
];
/// Chinese locative particles: `X里` is a place.
const ZH_LOCATIVES: &[char] = &['里', '内', '中', '外'];
/// Opening quotes and title marks: a name quoted or in 《》 is a title or a place.
const OPENING_QUOTES: &[char] = &['\'', '"', '“', '‘', '「', '『', '《'];
/// Longest description, in characters.
const DESCRIPTION_MAX: usize = 200;

/// The clue owners that are people who do not play, in file order, each once.
pub(super) fn people(
    owners: &[Owner],
    cast: &Cast,
    victim: Option<&str>,
    corpus: &Corpus,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in owners {
        if out.contains(&o.name) || !is_person(&o.name, corpus) || plays(cast, &o.name) {
            continue;
        }
        if victim.is_some_and(|v| same_person(v, &o.name)) {
            continue;
        }
        if named_elsewhere(&o.name, corpus) {
            out.push(o.name.clone());
        }
    }
    out
}

/// Whether the owner's name has the form of a person's name (the first rules of the module
/// documentation).
pub(super) fn is_person(owner: &str, corpus: &Corpus) -> bool {
    let bare = strip_parens(owner);
    if bare.is_empty() || bare.chars().any(|c| c.is_ascii_digit()) {
        return false;
    }
    let possessive = ["'s", "’s", "s'", "s’", "的", "之"]
        .iter()
        .any(|p| bare.contains(p));
    if possessive {
        return false;
    }
    if bare.chars().any(is_cjk) {
        let chars: Vec<char> = bare.chars().collect();
        return chars.iter().all(|&c| is_cjk(c))
            && (2..=4).contains(&chars.len())
            && !chars.last().is_some_and(|c| ZH_PLACE_HEADS.contains(c))
            && !located(&bare, corpus);
    }
    let words: Vec<&str> = bare.split_whitespace().collect();
    (1..=4).contains(&words.len())
        && words.iter().all(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w.chars()
                    .all(|c| c.is_alphabetic() || matches!(c, '-' | '.' | '\'' | '’'))
        })
        && (if words.len() == 1 {
            !corpus.is_common(words[0])
        } else {
            !words[1..].iter().any(|w| corpus.is_common(w))
        })
}

/// A Chinese name written followed by a locative particle somewhere: a place.
fn located(name: &str, corpus: &Corpus) -> bool {
    corpus.texts.iter().any(|(_, t)| {
        t.match_indices(name).any(|(i, _)| {
            t[i + name.len()..]
                .chars()
                .next()
                .is_some_and(|c| ZH_LOCATIVES.contains(&c))
        })
    })
}

/// A character, also when misspelt (a clue owner `Lenxing Ye` for the character `Lengxing Ye`).
fn plays(cast: &Cast, name: &str) -> bool {
    cast.find(name, true) != Found::None
        || cast
            .0
            .iter()
            .flat_map(|d| &d.aliases)
            .any(|a| title_distance(a, name) <= 0.2)
}

/// Two spellings of one person: equal ignoring case, or one's words among the other's.
fn same_person(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_lowercase(), b.to_lowercase());
    if a.chars().any(is_cjk) || b.chars().any(is_cjk) {
        return a == b;
    }
    let (wa, wb): (Vec<&str>, Vec<&str>) = (
        a.split_whitespace().collect(),
        b.split_whitespace().collect(),
    );
    wa.iter().all(|w| wb.contains(w)) || wb.iter().all(|w| wa.contains(w))
}

/// Where `name` occurs in `text` as a mention of a person: on word boundaries (alphabetic), not right
/// after an article or an opening quote.
fn mentions_of(text: &str, name: &str) -> usize {
    let cjk = name.chars().any(is_cjk);
    text.match_indices(name)
        .filter(|(i, _)| {
            let before = &text[..*i];
            let after = &text[i + name.len()..];
            let bounded = cjk
                || (!before
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() && !is_cjk(c))
                    && !after
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphanumeric() && !is_cjk(c)));
            let quoted = before
                .chars()
                .next_back()
                .is_some_and(|c| OPENING_QUOTES.contains(&c));
            let article = {
                let b = before.trim_end();
                let last = b
                    .rsplit(|c: char| !c.is_alphanumeric())
                    .next()
                    .unwrap_or("");
                b.len() < before.len()
                    && ["the", "a", "an"]
                        .iter()
                        .any(|a| last.eq_ignore_ascii_case(a))
            };
            bounded && !quoted && !article
        })
        .count()
}

/// Whether a text other than the owner's own clues names it as a person.
fn named_elsewhere(name: &str, corpus: &Corpus) -> bool {
    corpus.texts.iter().any(|(source, t)| {
        !matches!(source, Source::Clue(o) if o == name) && mentions_of(t, name) > 0
    })
}

/// The first sentence naming `name` in a text every player may know (premise, `Relationship` texts,
/// public clues), at most [`DESCRIPTION_MAX`] characters; empty when there is none.
pub(super) fn describe(name: &str, corpus: &Corpus) -> String {
    let public = |s: &Source| match s {
        Source::Shared => Some(0),
        Source::Character {
            relationship: true, ..
        } => Some(1),
        Source::Clue(owner) => {
            let first = owner.split_whitespace().next().unwrap_or("");
            (first.eq_ignore_ascii_case("public") || owner.starts_with("公开")).then_some(2)
        }
        _ => None,
    };
    let mut texts: Vec<(usize, &str)> = corpus
        .texts
        .iter()
        .filter_map(|(s, t)| public(s).map(|rank| (rank, t.as_str())))
        .collect();
    texts.sort_by_key(|(rank, _)| *rank);
    let lower = name.to_lowercase();
    for (_, t) in texts {
        for s in whole_sentences(t) {
            let hit = if name.chars().any(is_cjk) {
                s.contains(name)
            } else {
                contains_bounded(&s.to_lowercase(), &lower)
            };
            if hit {
                return shorten(
                    s.trim()
                        .trim_matches(['"', '“', '”', '\'', '‘', '’', '「', '」']),
                );
            }
        }
    }
    String::new()
}

/// The sentences of a text, a sentence cut after an honorific (`… grateful to Mr.`) joined to the next.
fn whole_sentences(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for s in sentences(text) {
        match out.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(&s);
            }
            _ => out.push(s),
        }
        let last = out.last().map_or("", String::as_str);
        open = ["Mr.", "Mrs.", "Ms.", "Dr.", "Mx."].iter().any(|h| {
            last.ends_with(h) && !last[..last.len() - h.len()].ends_with(char::is_alphanumeric)
        });
    }
    out
}

/// At most [`DESCRIPTION_MAX`] characters, cut at a space where there is one, with an ellipsis.
fn shorten(s: &str) -> String {
    if s.chars().count() <= DESCRIPTION_MAX {
        return s.to_string();
    }
    let cut: String = s.chars().take(DESCRIPTION_MAX).collect();
    let cut = match cut.rfind(' ') {
        Some(p) if p > DESCRIPTION_MAX / 2 => cut[..p].to_string(),
        _ => cut,
    };
    format!("{}…", cut.trim_end_matches([',', ';', ' ']))
}

/// What `--suspect NAME` refers to: a character, or a person who does not play (the detected person the
/// name matches, else the name as given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Listed {
    Player(usize),
    Outsider(String),
}

/// The `--suspect` names resolved, each once, in the order given.
pub(super) fn listed(names: &[String], cast: &Cast, people: &[String]) -> Vec<Listed> {
    let detected = Cast::of_names(people);
    let mut out: Vec<Listed> = Vec::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let l = match cast.find(n, false) {
            Found::One(i) => Listed::Player(i),
            _ => match detected.find(n, false) {
                Found::One(i) => Listed::Outsider(people[i].clone()),
                _ => Listed::Outsider(n.to_string()),
            },
        };
        if !out.contains(&l) {
            out.push(l);
        }
    }
    out
}

/// The suspects list of the script:
/// - with `--suspect`: the names given, in that order (players only when named); every culprit must be
///   among them, else an error (on `script_path`, field `--suspect`);
/// - else, when a culprit does not play: the culprit players (if any) and every person who does not play
///   ([`people`]), with a warning naming them — the players investigate, they are not suspects;
/// - else none: the players are the suspects.
///
/// `pool` are the people who do not play that `accused.outsiders` index.
pub(super) fn suspect_list(
    listed: &[Listed],
    cast: &Cast,
    pool: &[String],
    accused: &Accused,
    corpus: &Corpus,
    script_path: &Path,
) -> Result<(Vec<Suspect>, Option<String>), ImportError> {
    let outsider = |name: &str| Suspect {
        name: name.to_string(),
        description: describe(name, corpus),
        culprit: accused
            .outsiders
            .iter()
            .any(|&i| pool.get(i).is_some_and(|p| p == name)),
    };
    let player = |i: usize| Suspect {
        name: cast.0[i].name.clone(),
        description: String::new(),
        culprit: false,
    };
    if !listed.is_empty() {
        for &i in &accused.characters {
            if !listed.contains(&Listed::Player(i)) {
                return Err(format_error(
                    script_path,
                    "--suspect",
                    &format!(
                        "every culprit among the suspects (\"{}\", a culprit, is not listed)",
                        cast.0[i].name
                    ),
                ));
            }
        }
        let list = listed
            .iter()
            .map(|l| match l {
                Listed::Player(i) => player(*i),
                Listed::Outsider(n) => outsider(n),
            })
            .collect();
        return Ok((list, None));
    }
    if accused.outsiders.is_empty() {
        return Ok((Vec::new(), None));
    }
    let mut list: Vec<Suspect> = accused.characters.iter().map(|&i| player(i)).collect();
    list.extend(pool.iter().map(|n| outsider(n)));
    let culprits: Vec<&str> = accused
        .outsiders
        .iter()
        .filter_map(|&i| pool.get(i).map(String::as_str))
        .collect();
    let note = format!(
        "{} does not play: the players vote among the {} people of the clue owners who do not play ({}); \
         pass --suspect NAME to choose them",
        culprits.join(", "),
        pool.len(),
        pool.join(", ")
    );
    Ok((list, Some(note)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::mirage::cast::Draft;

    fn owner(name: &str, text: &str) -> Owner {
        Owner {
            name: name.into(),
            field: name.into(),
            texts: vec![text.into()],
            act: None,
        }
    }

    fn cast(names: &[&str], relationship: &str) -> Cast {
        Cast(
            names
                .iter()
                .map(|n| Draft {
                    name: n.to_string(),
                    aliases: vec![n.to_string()],
                    acts: vec![
                        "At the hotel you met Ann Lee and Bo Ray. Ann Lee was angry. Bo Ray left at ten."
                            .into(),
                    ],
                    relationships: vec![relationship.into()],
                    ..Draft::default()
                })
                .collect(),
        )
    }

    #[test]
    fn english_person_keys_are_people_and_place_keys_are_not() {
        let owners = vec![
            owner("Tom Bell's Suite", "A neat bed and the hotel guard's note."),
            owner("Ann Lee", "You found Ann Lee at home; she was crying."),
            owner("Hotel Night Guard", "The night guard saw a car."),
            owner("Deep Search into Tom Bell", "A detective's file."),
            owner(
                "Public Note 1",
                "The star Bo Ray quit the film. Ann Lee is a singer.",
            ),
            owner("Bo Ray", "Bo Ray smoked by the window."),
            owner("Guest List", "Rooms of the guests."),
            owner("Kit Moss", "Nobody else ever names this card."),
            owner("Eve Mor", "A card under a misspelt player's name."),
        ];
        let c = cast(
            &["Cy Dunn", "Eve Moor"],
            "Cy Dunn (friend): Bo Ray is his cousin.",
        );
        let corpus = Corpus::new(&c, &[], &owners, "Tom Bell died.");
        assert_eq!(
            people(&owners, &c, Some("Tom Bell"), &corpus),
            ["Ann Lee", "Bo Ray"]
        );
        assert!(plays(&c, "Eve Mor") && !plays(&c, "Ann Lee"));
        assert!(
            !named_elsewhere("Kit Moss", &corpus),
            "only its own card names it"
        );
        assert_eq!(
            mentions_of("见到 Bo Ray, the Bo Ray, 'Bo Ray', Bo Rayne", "Bo Ray"),
            1,
            "not after an article or a quote, not inside a word"
        );
        assert!(!is_person("Hotel Night Guard", &corpus), "common words");
        assert!(!is_person("Tom Bell's Suite", &corpus), "possessive");
        assert!(!is_person("Public Note 1", &corpus), "digit");
        assert!(
            !is_person("Deep Search into Tom Bell", &corpus),
            "lower-case word"
        );
        assert_eq!(
            describe("Bo Ray", &corpus),
            "Cy Dunn (friend): Bo Ray is his cousin."
        );
        assert_eq!(
            describe("Ann Lee", &corpus),
            "Ann Lee is a singer.",
            "public clue"
        );
        assert_eq!(describe("Kit Moss", &corpus), "");
        assert_eq!(
            whole_sentences("Bo thanked Mr. Ray. Then he left."),
            ["Bo thanked Mr. Ray.", "Then he left."]
        );
    }

    #[test]
    fn chinese_person_keys_are_people_and_place_keys_are_not() {
        let owners = vec![
            owner("周老爷的书房", "书房里很乱。"),
            owner("王纱", "你在王纱家里找到了她。"),
            owner("酒店夜班保安", "保安在门口抽烟。"),
            owner("公开线索1", "新闻：明星李强退出了电影。"),
            owner("李强", "李强在片场。"),
            owner("酒吧", "酒吧里没有人。"),
            owner("花园", "花园中有脚印。"),
        ];
        let mut c = cast(&["韩伟文"], "【沈曼离】你的同事。");
        c.0[0].acts = vec!["昨晚王纱和李强都在酒店。".into()];
        let corpus = Corpus::new(&c, &[], &owners, "");
        assert_eq!(people(&owners, &c, None, &corpus), ["王纱", "李强"]);
        assert!(!is_person("酒吧", &corpus) && !is_person("花园", &corpus));
        assert_eq!(describe("李强", &corpus), "新闻：明星李强退出了电影。");
    }

    #[test]
    fn suspect_option_names_players_detected_people_or_new_ones() {
        let c = cast(&["Eve Moor", "Cy Dunn"], "");
        let people = vec!["Bo Ray".to_string()];
        let names: Vec<String> = ["cy dunn", "bo ray", "Zed", "Bo Ray", " "]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            listed(&names, &c, &people),
            [
                Listed::Player(1),
                Listed::Outsider("Bo Ray".into()),
                Listed::Outsider("Zed".into())
            ]
        );
    }
}
