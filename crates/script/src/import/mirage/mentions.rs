//! Who the texts say is dead: a name next to a victim label (`Victim: X`, `X (…) [Deceased]`, `死者：X`,
//! `X【死者】`) or in a phrase about a death (`X was murdered`, `X's body`, `the corpse of X`, `the
//! deceased was named X`, `X遇害`, `X的尸体`, `杀害X`). Each hit is one [`Mention`]; `victim` counts them.
//!
//! English names are runs of one to four capitalised words (`Mr.`-style honorifics included) next to the
//! phrase. A run right after "the"/"a" is a title, not a name (`the Inari God's death`), and the first
//! word of a run that starts a sentence is dropped when the texts also write it in lower case (`After
//! Captain Yang's death`). Chinese has no word boundaries: the name is the longest known name (a clue
//! owner, the possessor in an owner such as `X的房间`, a name in a relationship text, a character) that
//! touches the phrase, else the whole run of CJK characters there when it is two to four long.

use super::corpus::{Corpus, Source};
use sleuth_base::text::is_cjk;

/// One text naming someone as dead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mention {
    pub(super) name: String,
    /// Another name given in parentheses right after (`Director Zhen (Zhen San)`).
    pub(super) alias: Option<String>,
    /// The text's [`Source::key`].
    pub(super) source: String,
    /// Found by a victim label rather than a phrase about a death.
    pub(super) label: bool,
}

/// Label words, lower-case: a text naming the dead person outright. Also never names themselves.
pub(super) const LABELS_EN: &[&str] = &["victim", "deceased"];
/// The same in Chinese.
pub(super) const LABELS_ZH: &[&str] = &["死者", "被害人", "受害人", "受害者"];

/// Honorifics written with a period, part of a name (`Mr. Li`).
const HONORIFICS: &[&str] = &["Mr", "Mrs", "Ms", "Dr", "Mx"];
/// Auxiliaries and verbs of `X was murdered`.
const AUX: &[&str] = &["was", "were", "is", "got"];
const AUX_PERFECT: &[&str] = &["had", "has", "have"];
const KILLED: &[&str] = &[
    "murdered",
    "killed",
    "poisoned",
    "strangled",
    "stabbed",
    "shot",
    "slain",
];
/// Nouns of `X's death` and `the death of X`.
const DEATH_NOUNS: &[&str] = &["death", "corpse", "body", "murder", "killing", "remains"];
/// Chinese phrases written right after the dead person's name.
const ZH_AFTER_NAME: &[&str] = &[
    "被谋杀",
    "被杀害",
    "被枪杀",
    "被刺死",
    "被毒死",
    "被害死",
    "遇害",
    "被杀",
    "被害",
    "的尸体",
    "的遗体",
    "之死",
    "身亡",
];
/// Chinese phrases written right before it.
const ZH_BEFORE_NAME: &[&str] = &[
    "杀害了",
    "杀死了",
    "谋杀了",
    "枪杀了",
    "杀害",
    "杀死",
    "谋杀",
    "枪杀",
];
/// What may follow a Chinese victim label before the name.
const ZH_LABEL_LINKS: &[&str] = &["名叫", "叫做", "：", ":", "是", "为", "叫"];
/// Chinese personal pronouns: a run starting with one is no name (`他的尸体`).
const ZH_PRONOUNS: &[char] = &['我', '你', '他', '她', '它', '您'];

/// Every mention in the corpus. `known` are the Chinese names known from elsewhere (longest first is
/// not required); names found after a label become known for the phrases.
pub(super) fn mentions(corpus: &Corpus, known: &[String]) -> Vec<Mention> {
    let mut out = Vec::new();
    for (source, text) in &corpus.texts {
        english(text, source, corpus, &mut out);
    }
    let mut known: Vec<Vec<char>> = known
        .iter()
        .filter(|k| k.chars().count() >= 2 && k.chars().all(is_cjk))
        .map(|k| k.chars().collect())
        .collect();
    let mut zh = Vec::new();
    for (source, text) in &corpus.texts {
        if text.chars().any(is_cjk) {
            chinese_labels(text, source, &known, &mut zh);
        }
    }
    for m in &zh {
        let k: Vec<char> = m.name.chars().collect();
        if !known.contains(&k) {
            known.push(k);
        }
    }
    for (source, text) in &corpus.texts {
        if text.chars().any(is_cjk) {
            chinese_deaths(text, source, &known, &mut zh);
        }
    }
    out.extend(zh);
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    Space,
    Break,
    Punct,
}

#[derive(Debug, Clone, Copy)]
struct Tok<'a> {
    s: &'a str,
    kind: Kind,
}

/// Words (alphanumeric, not CJK), runs of spaces, line breaks and single other characters.
fn tokenize(text: &str) -> Vec<Tok<'_>> {
    let class = |c: char| {
        if c == '\n' || c == '\r' {
            Kind::Break
        } else if c == ' ' || c == '\t' {
            Kind::Space
        } else if c.is_alphanumeric() && !is_cjk(c) {
            Kind::Word
        } else {
            Kind::Punct
        }
    };
    let mut out = Vec::new();
    let mut start = 0;
    let mut cur: Option<Kind> = None;
    for (i, c) in text.char_indices() {
        let k = class(c);
        match cur {
            Some(p) if p == k && k != Kind::Punct => {}
            Some(p) => {
                out.push(Tok {
                    s: &text[start..i],
                    kind: p,
                });
                start = i;
                cur = Some(k);
            }
            None => cur = Some(k),
        }
    }
    if let Some(k) = cur {
        out.push(Tok {
            s: &text[start..],
            kind: k,
        });
    }
    out
}

/// Token `i` is the word `w` (ignoring case).
fn is_word(t: &[Tok], i: usize, ws: &[&str]) -> bool {
    t.get(i)
        .is_some_and(|x| x.kind == Kind::Word && ws.iter().any(|w| x.s.eq_ignore_ascii_case(w)))
}

fn is_space(t: &[Tok], i: usize) -> bool {
    t.get(i).is_some_and(|x| x.kind == Kind::Space)
}

fn is_punct(t: &[Tok], i: usize, ps: &[&str]) -> bool {
    t.get(i)
        .is_some_and(|x| x.kind == Kind::Punct && ps.contains(&x.s))
}

/// A capitalised word at `i`: its text and the tokens it takes (an honorific takes its period).
fn name_word(t: &[Tok], i: usize) -> Option<(String, usize)> {
    let x = t.get(i)?;
    if x.kind != Kind::Word || !x.s.chars().next().is_some_and(char::is_uppercase) {
        return None;
    }
    if HONORIFICS.contains(&x.s) && is_punct(t, i + 1, &["."]) {
        return Some((format!("{}.", x.s), 2));
    }
    Some((x.s.to_string(), 1))
}

/// The name starting at token `i`: up to four capitalised words one space apart, and the index after it.
fn name_forward(t: &[Tok], i: usize) -> Option<(Vec<String>, usize)> {
    let mut words = Vec::new();
    let mut j = i;
    while words.len() < 4 {
        let Some((w, n)) = name_word(t, j) else { break };
        words.push(w);
        j += n;
        if !(is_space(t, j) && name_word(t, j + 1).is_some()) {
            break;
        }
        j += 1;
    }
    (!words.is_empty()).then_some((words, j))
}

/// The name ending just before token `end`, read backwards, and the index of its first token.
fn name_backward(t: &[Tok], end: usize) -> Option<(Vec<String>, usize)> {
    let capitalised =
        |i: usize| t[i].kind == Kind::Word && t[i].s.chars().next().is_some_and(char::is_uppercase);
    let honorific = |i: usize| i >= 1 && t[i].s == "." && HONORIFICS.contains(&t[i - 1].s);
    let mut words: Vec<String> = Vec::new();
    let mut j = end;
    while words.len() < 4 && j >= 1 {
        if capitalised(j - 1) {
            words.insert(0, t[j - 1].s.to_string());
            j -= 1;
        } else if !words.is_empty() && honorific(j - 1) {
            words.insert(0, format!("{}.", t[j - 2].s));
            j -= 2;
        } else {
            break;
        }
        // Go on only over one space to another name word.
        if j >= 2 && is_space(t, j - 1) && (capitalised(j - 2) || honorific(j - 2)) {
            j -= 1;
        } else {
            break;
        }
    }
    (!words.is_empty()).then_some((words, j))
}

/// The token before `i`, skipping spaces.
fn before<'a>(t: &[Tok<'a>], i: usize) -> Option<Tok<'a>> {
    t[..i].iter().rev().find(|x| x.kind != Kind::Space).copied()
}

/// A name read backwards, judged by what precedes it: after an article it is a title (none); at the start
/// of a sentence (when `drop` allows) its first word is dropped when the texts write it in lower case
/// and never capitalise it inside a sentence (`After`, not `Captain`).
fn judged(
    t: &[Tok],
    words: Vec<String>,
    first: usize,
    corpus: &Corpus,
    drop: bool,
) -> Option<String> {
    let mut words = words;
    let prev = before(t, first);
    if prev.is_some_and(|p| {
        p.kind == Kind::Word && ["the", "a", "an"].contains(&p.s.to_lowercase().as_str())
    }) {
        return None;
    }
    let starts = match prev {
        None => true,
        Some(p) => p.kind == Kind::Break || ".!?\"“”‘’'(:;…「『【[".contains(p.s),
    };
    if drop && starts && words.first().is_some_and(|w| corpus.is_function_word(w)) {
        if ["the", "a", "an"].contains(&words[0].to_lowercase().as_str()) {
            return None;
        }
        words.remove(0);
    }
    let name = words.join(" ");
    (name.chars().filter(|c| c.is_alphabetic()).count() >= 2).then_some(name)
}

/// `(Alias)` right after token `i`: a name in parentheses.
fn alias_after(t: &[Tok], i: usize) -> Option<String> {
    let j = if is_space(t, i) { i + 1 } else { i };
    if !is_punct(t, j, &["(", "（"]) {
        return None;
    }
    let (words, k) = name_forward(t, j + 1)?;
    is_punct(t, k, &[")", "）"]).then(|| words.join(" "))
}

/// The English mentions of one text.
fn english(text: &str, source: &Source, corpus: &Corpus, out: &mut Vec<Mention>) {
    let t = tokenize(text);
    let key = source.key();
    let mut push = |name: String, alias: Option<String>, label: bool| {
        out.push(Mention {
            name,
            alias,
            source: key.clone(),
            label,
        })
    };
    for i in 0..t.len() {
        // Victim: X / Deceased: X (the name may be on the next line).
        if is_word(&t, i, LABELS_EN) {
            let mut j = i + 1;
            if is_space(&t, j) {
                j += 1;
            }
            if is_punct(&t, j, &[":", "："]) {
                j += 1;
                while t
                    .get(j)
                    .is_some_and(|x| matches!(x.kind, Kind::Space | Kind::Break))
                {
                    j += 1;
                }
                if let Some((mut words, end)) = name_forward(&t, j) {
                    // `Victim: There was …`: the label starts a sentence, not a name.
                    if corpus.is_function_word(&words[0]) {
                        words.remove(0);
                    }
                    if !words.is_empty() {
                        push(words.join(" "), alias_after(&t, end), true);
                    }
                }
            }
        }
        // X (…) [Deceased]
        if is_punct(&t, i, &["["]) && is_word(&t, i + 1, LABELS_EN) && is_punct(&t, i + 2, &["]"]) {
            let mut e = i;
            if is_space(&t, e.wrapping_sub(1)) {
                e -= 1;
            }
            if e > 0 && is_punct(&t, e - 1, &[")", "）"]) {
                match t[..e - 1].iter().rposition(|x| x.s == "(" || x.s == "（") {
                    Some(open) => e = open,
                    None => continue,
                }
                if is_space(&t, e.wrapping_sub(1)) {
                    e -= 1;
                }
            }
            if let Some((words, first)) = name_backward(&t, e) {
                if let Some(name) = judged(&t, words, first, corpus, false) {
                    push(name, None, true);
                }
            }
        }
        // X was murdered / X had been killed
        if is_space(&t, i)
            && (is_word(&t, i + 1, AUX) && is_space(&t, i + 2) && is_word(&t, i + 3, KILLED)
                || is_word(&t, i + 1, AUX_PERFECT)
                    && is_space(&t, i + 2)
                    && is_word(&t, i + 3, &["been"])
                    && is_space(&t, i + 4)
                    && is_word(&t, i + 5, KILLED))
        {
            if let Some((words, first)) = name_backward(&t, i) {
                if let Some(name) = judged(&t, words, first, corpus, true) {
                    push(name, None, false);
                }
            }
        }
        // X's death / X's dead body
        if is_punct(&t, i, &["'", "’"])
            && is_word(&t, i + 1, &["s"])
            && is_space(&t, i + 2)
            && (is_word(&t, i + 3, DEATH_NOUNS)
                || is_word(&t, i + 3, &["dead", "lifeless"])
                    && is_space(&t, i + 4)
                    && is_word(&t, i + 5, &["body"]))
        {
            if let Some((words, first)) = name_backward(&t, i) {
                if let Some(name) = judged(&t, words, first, corpus, true) {
                    push(name, None, false);
                }
            }
        }
        // the death of X / the murder case of the famous X / the deceased was named X
        let after =
            if is_word(&t, i, DEATH_NOUNS) && is_space(&t, i + 1) && is_word(&t, i + 2, &["of"]) {
                Some(i + 3)
            } else if is_word(&t, i, &["murder"])
                && is_space(&t, i + 1)
                && is_word(&t, i + 2, &["case"])
                && is_space(&t, i + 3)
                && is_word(&t, i + 4, &["of"])
            {
                Some(i + 5)
            } else if is_word(&t, i, &["the"])
                && is_space(&t, i + 1)
                && is_word(&t, i + 2, &["deceased"])
                && is_space(&t, i + 3)
                && is_word(&t, i + 4, &["was", "is"])
            {
                let j = i + 5;
                if is_space(&t, j) && is_word(&t, j + 1, &["named", "called"]) {
                    Some(j + 2)
                } else {
                    Some(j)
                }
            } else {
                None
            };
        if let Some(mut j) = after {
            if !is_space(&t, j) {
                continue;
            }
            j += 1;
            // `the famous X`: one lower-case word may stand between; `the X` is a title.
            if is_word(&t, j, &["the"]) {
                let adjective = t.get(j + 2).is_some_and(|x| {
                    x.kind == Kind::Word && x.s.chars().next().is_some_and(char::is_lowercase)
                });
                if !(is_space(&t, j + 1) && adjective && is_space(&t, j + 3)) {
                    continue;
                }
                j += 4;
            }
            if let Some((words, end)) = name_forward(&t, j) {
                let name = words.join(" ");
                if name.chars().filter(|c| c.is_alphabetic()).count() >= 2 {
                    push(name, alias_after(&t, end), false);
                }
            }
        }
    }
}

/// Whether `chars[at..]` starts with `pat`.
fn starts_at(chars: &[char], at: usize, pat: &str) -> bool {
    let n = pat.chars().count();
    chars
        .get(at..at + n)
        .is_some_and(|w| w.iter().copied().eq(pat.chars()))
}

/// The Chinese name ending at `end` (exclusive): the longest known name ending there, else the whole run
/// of CJK characters ending there when it is two to four long.
fn zh_name_before(chars: &[char], end: usize, known: &[Vec<char>]) -> Option<String> {
    let start = chars[..end]
        .iter()
        .rposition(|&c| !is_cjk(c))
        .map_or(0, |p| p + 1);
    zh_name_in(&chars[start..end], known, |run, k| run.ends_with(k))
}

/// The Chinese name starting at `start`, by the same rule forwards.
fn zh_name_after(chars: &[char], start: usize, known: &[Vec<char>]) -> Option<String> {
    let end = chars[start..]
        .iter()
        .position(|&c| !is_cjk(c))
        .map_or(chars.len(), |p| start + p);
    zh_name_in(&chars[start..end], known, |run, k| run.starts_with(k))
}

/// The longest known name that `fits` the run, else the whole run when it is two to four long; kept if
/// plausible.
fn zh_name_in(
    run: &[char],
    known: &[Vec<char>],
    fits: impl Fn(&[char], &[char]) -> bool,
) -> Option<String> {
    let best = known
        .iter()
        .filter(|k| fits(run, k))
        .max_by_key(|k| k.len());
    let name: &[char] = match best {
        Some(k) => k,
        None if (2..=4).contains(&run.len()) => run,
        None => return None,
    };
    zh_plausible(name).then(|| name.iter().collect())
}

/// Not a pronoun phrase, not a label word.
fn zh_plausible(name: &[char]) -> bool {
    let s: String = name.iter().collect();
    name.len() >= 2
        && !name.first().is_some_and(|c| ZH_PRONOUNS.contains(c))
        && !LABELS_ZH.iter().any(|l| s.contains(l))
}

/// `(别名)` right after `at`: a CJK name of two to four characters in parentheses.
fn zh_alias(chars: &[char], at: usize) -> Option<String> {
    if !matches!(chars.get(at), Some('(' | '（')) {
        return None;
    }
    let close = chars[at + 1..]
        .iter()
        .position(|&c| c == ')' || c == '）')?;
    let inner = &chars[at + 1..at + 1 + close];
    ((2..=4).contains(&inner.len()) && inner.iter().all(|&c| is_cjk(c)) && zh_plausible(inner))
        .then(|| inner.iter().collect())
}

/// `死者：X` (the name may be on the next line), `X（…）【死者】`.
fn chinese_labels(text: &str, source: &Source, known: &[Vec<char>], out: &mut Vec<Mention>) {
    let chars: Vec<char> = text.chars().collect();
    for i in 0..chars.len() {
        for label in LABELS_ZH {
            if !starts_at(&chars, i, label) {
                continue;
            }
            let n = label.chars().count();
            let bracketed = i > 0
                && matches!(chars[i - 1], '【' | '[')
                && matches!(chars.get(i + n), Some('】' | ']'));
            if bracketed {
                let mut e = i - 1;
                while e > 0 && chars[e - 1] == ' ' {
                    e -= 1;
                }
                if e > 0 && matches!(chars[e - 1], ')' | '）') {
                    match chars[..e - 1].iter().rposition(|&c| c == '(' || c == '（') {
                        Some(open) => e = open,
                        None => continue,
                    }
                }
                if let Some(name) = zh_name_before(&chars, e, known) {
                    out.push(Mention {
                        name,
                        alias: None,
                        source: source.key(),
                        label: true,
                    });
                }
                continue;
            }
            let mut j = i + n;
            let Some(link) = ZH_LABEL_LINKS.iter().find(|l| starts_at(&chars, j, l)) else {
                continue;
            };
            j += link.chars().count();
            while chars.get(j).is_some_and(|c| c.is_whitespace()) {
                j += 1;
            }
            if let Some(name) = zh_name_after(&chars, j, known) {
                let alias = zh_alias(&chars, j + name.chars().count());
                out.push(Mention {
                    name,
                    alias,
                    source: source.key(),
                    label: true,
                });
            }
        }
    }
}

/// `X遇害`, `X的尸体`, `杀害X`.
fn chinese_deaths(text: &str, source: &Source, known: &[Vec<char>], out: &mut Vec<Mention>) {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if let Some(p) = ZH_AFTER_NAME.iter().find(|p| starts_at(&chars, i, p)) {
            if let Some(name) = zh_name_before(&chars, i, known) {
                out.push(Mention {
                    name,
                    alias: None,
                    source: source.key(),
                    label: false,
                });
            }
            i += p.chars().count();
            continue;
        }
        if let Some(p) = ZH_BEFORE_NAME.iter().find(|p| starts_at(&chars, i, p)) {
            let mut j = i + p.chars().count();
            // Overlapping phrases (`开枪杀死了X`: 枪杀, then 杀死了): the one reaching furthest.
            while let Some(k) = (i + 1..j).find_map(|k| {
                ZH_BEFORE_NAME
                    .iter()
                    .find(|q| starts_at(&chars, k, q))
                    .map(|q| k + q.chars().count())
                    .filter(|&end| end > j)
            }) {
                j = k;
            }
            if let Some(name) = zh_name_after(&chars, j, known) {
                out.push(Mention {
                    name,
                    alias: None,
                    source: source.key(),
                    label: false,
                });
            }
            i = j;
            continue;
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::mirage::cast::Cast;
    use crate::import::mirage::clues::Owner;

    fn found(texts: &[&str], known: &[&str]) -> Vec<(String, Option<String>, bool)> {
        let owners: Vec<Owner> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Owner {
                name: format!("Card {i}"),
                field: format!("Card {i}"),
                texts: vec![t.to_string()],
                act: None,
            })
            .collect();
        let corpus = Corpus::new(&Cast::default(), &[], &owners, "");
        let known: Vec<String> = known.iter().map(|s| s.to_string()).collect();
        mentions(&corpus, &known)
            .into_iter()
            .map(|m| (m.name, m.alias, m.label))
            .collect()
    }

    fn names(texts: &[&str], known: &[&str]) -> Vec<String> {
        found(texts, known).into_iter().map(|m| m.0).collect()
    }

    #[test]
    fn english_labels_name_the_victim() {
        assert_eq!(
            found(
                &["Victim: Director Lo (Lo Wen), the curator.\nSuspect: Ann."],
                &[]
            ),
            [("Director Lo".to_string(), Some("Lo Wen".to_string()), true)]
        );
        assert_eq!(names(&["Victim:\nTom Bell (male, 40)"], &[]), ["Tom Bell"]);
        assert_eq!(
            found(&["Director Lo (Male, 40) [Deceased] The curator."], &[]),
            [("Director Lo".to_string(), None, true)]
        );
    }

    #[test]
    fn english_death_phrases_name_the_dead() {
        let texts = [
            "Everyone knows Tom Bell was murdered at dawn.",
            "Then Mr. Ray Cole had been killed too.",
            "They found Tom Bell's body by the well.",
            "After Tom Bell's death the inn closed.",
            "Nobody mourned the death of Tom Bell.",
            "It was the murder case of the famous Ida Fern.",
            "Police said the deceased was named Ida Fern.",
            "We ate then, after the storm.",
        ];
        assert_eq!(
            names(&texts, &[]),
            [
                "Tom Bell",
                "Mr. Ray Cole",
                "Tom Bell",
                "Tom Bell",
                "Tom Bell",
                "Ida Fern",
                "Ida Fern"
            ]
        );
    }

    #[test]
    fn titles_and_pronouns_are_no_names() {
        // "the Fox God's death": a title; "He was killed": "he" is written in lower case elsewhere.
        let texts = [
            "They mourned the Fox God's death.",
            "He was killed. Then he left.",
            "The body of the Fox God lay there.",
            "The old man's body was cold.",
        ];
        assert!(names(&texts, &[]).is_empty(), "{:?}", names(&texts, &[]));
    }

    #[test]
    fn chinese_labels_and_phrases_name_the_victim() {
        assert_eq!(
            found(&["受害人:\n周老爷(周福)男,60岁"], &[]),
            [("周老爷".to_string(), Some("周福".to_string()), true)]
        );
        assert_eq!(names(&["周老爷(男)【死者】书房的主人"], &[]), ["周老爷"]);
        assert_eq!(names(&["死者是周老爷。"], &[]), ["周老爷"]);
        // Known names bound a name inside a longer run of characters.
        assert_eq!(
            names(
                &[
                    "今早发现周老爷的尸体。",
                    "知道周老爷被杀了吗",
                    "是谁杀害了周老爷的？"
                ],
                &["周老爷"]
            ),
            ["周老爷", "周老爷", "周老爷"]
        );
        assert_eq!(
            names(&["他开枪杀死了周福。"], &[]),
            ["周福"],
            "overlapping phrases"
        );
        // Without a known name, only a run of two to four characters after punctuation counts.
        assert_eq!(
            names(&["，周老爷遇害了。", "今早发现周老爷的尸体。"], &[]),
            ["周老爷"]
        );
        assert!(names(&["他的尸体很冷。", "我不认识死者，只见过他。"], &[]).is_empty());
    }
}
