//! How the simulated model reads a request: the query, the context's sentences (quotable or secret,
//! instructions left out), the option lines and the language.
//!
//! A character's script and the rules go out with every one of its calls, so what the model makes of a
//! message — its sentences, each sentence's terms, its option lines — is kept in process-wide memos
//! ([`sleuth_base::memo`]) by content hash, and a call pays only for the messages (and sentences) it
//! is the first to send. The answer is the same as reading everything afresh: only where the work is
//! done changes (issue 32: a 200 KB premise made every call re-read 200 KB).

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use sleuth_base::memo::{self, Memo};
use sleuth_base::text::{self, Bm25, Postings, TermCounts};

use crate::types::{ChatRequest, ChatRole};

const HIDDEN_MARKERS: &[&str] = &[
    "do not reveal",
    "never reveal",
    "keep secret",
    "不可透露",
    "不要透露",
    "保密",
];
const INSTRUCTION_MARKERS: &[&str] = &[
    "rules",
    "instructions",
    "format",
    "规则",
    "要求",
    "格式",
    "说明",
];

/// Bytes (estimated) the sentence memo and the message memo may each hold per generation.
const MEMO_BYTES: usize = 16 << 20;

/// One sentence as the model reads it, the same wherever it occurs.
pub(super) struct Read {
    /// What the model says when it quotes the sentence: list bullets and a leading `[label]` removed.
    pub quote: String,
    /// The terms of the sentence as scored, attribution labels included ("[Ada answered Ben] …" helps
    /// find what Ada said): its BM25 document, and what an option's terms are looked up in.
    pub counts: Arc<TermCounts>,
    /// The terms of `quote` (the same map as `counts` when the two texts are equal).
    pub quote_counts: Arc<TermCounts>,
    /// `quote`'s memo key: sentences are told apart by it when repeats are dropped.
    quote_key: u128,
}

/// A context sentence of one request, and whether the model may quote it there.
#[derive(Clone)]
pub(super) struct Sentence {
    pub read: Arc<Read>,
    pub quotable: bool,
}

/// A request taken apart: what is asked, what it may be answered from.
pub(super) struct Prompt {
    pub query: String,
    pub sentences: Vec<Sentence>,
    /// The BM25 index of `sentences`, in their order.
    pub index: Bm25,
    pub option_texts: Vec<(String, String)>,
    pub chinese: bool,
}

/// The sentences of one message body, and their postings: what the memo keeps of a body.
struct Segment {
    sentences: Vec<Sentence>,
    postings: Arc<Postings>,
}

impl Prompt {
    pub fn parse(req: &ChatRequest) -> Prompt {
        let last_user = req.messages.iter().rposition(|m| m.role == ChatRole::User);
        let mut segments = Vec::new();
        let mut query = String::new();
        let mut lines = LineScan::default();
        for (i, m) in req.messages.iter().enumerate() {
            lines.add(&m.content);
            // An unheaded system preamble is the persona and task description: instructions, not facts.
            let preamble_is_instructions = m.role == ChatRole::System;
            if Some(i) == last_user {
                let paragraphs: Vec<&str> = m
                    .content
                    .split("\n\n")
                    .filter(|p| !p.trim().is_empty())
                    .collect();
                let (q, rest) = paragraphs
                    .split_last()
                    .map(|(q, r)| (*q, r.join("\n\n")))
                    .unwrap_or(("", String::new()));
                query = strip_label(q.trim()).to_string();
                segments.push(segment(&rest, preamble_is_instructions));
            } else {
                segments.push(segment(&m.content, preamble_is_instructions));
            }
        }
        let (option_texts, chinese) = lines.finish();
        let (sentences, index) = one_voice_each(&segments, &query);
        Prompt {
            query,
            sentences,
            index,
            option_texts,
            chinese,
        }
    }
}

/// The request's sentences and their index: repeated sentences (a memory record may repeat the
/// agent's own script) and the query itself left out. A hidden copy wins over a quotable one, so a
/// secret stays secret even if repeated elsewhere.
fn one_voice_each(segments: &[Arc<Segment>], query: &str) -> (Vec<Sentence>, Bm25) {
    let wanted = |s: &Sentence| !s.read.quote.is_empty() && s.read.quote != query;
    let hidden: HashSet<u128> = segments
        .iter()
        .flat_map(|seg| &seg.sentences)
        .filter(|s| wanted(s) && !s.quotable)
        .map(|s| s.read.quote_key)
        .collect();
    let mut seen = HashSet::new();
    let mut sentences = Vec::new();
    let mut parts = Vec::with_capacity(segments.len());
    for seg in segments {
        let place = seg
            .sentences
            .iter()
            .map(|s| {
                let keep = wanted(s)
                    && (s.quotable || hidden.contains(&s.read.quote_key))
                    && seen.insert(s.read.quote_key);
                keep.then(|| {
                    sentences.push(Sentence {
                        read: s.read.clone(),
                        quotable: s.quotable && !hidden.contains(&s.read.quote_key),
                    });
                    (sentences.len() - 1) as u32
                })
            })
            .collect();
        parts.push((seg.postings.clone(), place));
    }
    (sentences, Bm25::from_parts(parts))
}

/// "Question: Who …" → "Who …": labels carry no content and would dilute coverage.
fn strip_label(q: &str) -> &str {
    for sep in [':', '：'] {
        if let Some((label, rest)) = q.split_once(sep) {
            if label.chars().count() <= 20
                && !label.trim().is_empty()
                && !label.contains(char::is_numeric)
                && !rest.trim().is_empty()
            {
                return rest.trim();
            }
        }
    }
    q
}

/// Strips a list bullet ("- ", "* ", "3. ") and a leading bracketed attribution from a sentence.
fn quote_form(s: &str) -> String {
    let mut t = s.trim_start();
    for bullet in ["- ", "* ", "• "] {
        if let Some(r) = t.strip_prefix(bullet) {
            t = r.trim_start();
        }
    }
    if let Some(r) = t.strip_prefix('[') {
        if let Some((_, rest)) = r.split_once(']') {
            t = rest.trim_start();
        }
    }
    t.to_string()
}

/// The sentences of a message body by section, with their postings (from the memo when the body
/// was read before).
fn segment(body: &str, preamble_is_instructions: bool) -> Arc<Segment> {
    static MEMO: OnceLock<Memo<Arc<Segment>>> = OnceLock::new();
    let key = memo::key_parts(&[&[u8::from(preamble_is_instructions)], body.as_bytes()]);
    MEMO.get_or_init(|| Memo::new(MEMO_BYTES))
        .get_or_insert_with(key, || {
            let mut sentences = Vec::new();
            collect_sections(body, preamble_is_instructions, &mut sentences);
            let postings = Arc::new(Postings::new(
                sentences.iter().map(|s| s.read.counts.as_ref()),
            ));
            // What the entry keeps alive: its postings and its sentences, about twice the body's bytes.
            let weight = postings.weight() + 2 * body.len() + 64;
            (
                Arc::new(Segment {
                    sentences,
                    postings,
                }),
                weight,
            )
        })
}

fn collect_sections(body: &str, preamble_is_instructions: bool, out: &mut Vec<Sentence>) {
    let mut header: Option<String> = None;
    let mut buf = String::new();
    let flush = |header: &Option<String>, buf: &mut String, out: &mut Vec<Sentence>| {
        let (skip, quotable) = match header {
            None => (preamble_is_instructions, true),
            Some(h) => {
                let h = h.to_lowercase();
                (
                    INSTRUCTION_MARKERS.iter().any(|m| h.contains(m)),
                    !HIDDEN_MARKERS.iter().any(|m| h.contains(m)),
                )
            }
        };
        if !skip {
            out.extend(text::sentences(buf).into_iter().map(|t| Sentence {
                read: read(t),
                quotable,
            }));
        }
        buf.clear();
    };
    for line in body.lines() {
        if line.trim_start().starts_with('#') {
            flush(&header, &mut buf, out);
            header = Some(line.trim_start().trim_start_matches('#').trim().to_string());
        } else {
            buf.push_str(line);
            buf.push('\n');
        }
    }
    flush(&header, &mut buf, out);
}

/// One sentence read: from the memo, or analysed now and kept.
fn read(text: String) -> Arc<Read> {
    static MEMO: OnceLock<Memo<Arc<Read>>> = OnceLock::new();
    MEMO.get_or_init(|| Memo::new(MEMO_BYTES))
        .get_or_insert_with(memo::key(text.as_bytes()), || {
            let quote = quote_form(&text);
            let counts = Arc::new(text::term_counts(&text));
            let quote_counts = if quote == text {
                counts.clone()
            } else {
                Arc::new(text::term_counts(&quote))
            };
            let weight = quote.len() + 48 * (counts.len() + quote_counts.len()) + 96;
            let quote_key = memo::key(quote.as_bytes());
            let read = Read {
                quote,
                counts,
                quote_counts,
                quote_key,
            };
            (Arc::new(read), weight)
        })
}

/// Lines like "A. text", "(B) text", "C) text", "D：text" over all the messages' text run together (as
/// the model has always read them: a message that does not end its last line continues it into the
/// next), and whether the text is mostly Chinese.
#[derive(Default)]
struct LineScan {
    options: Vec<(String, String)>,
    /// The line begun by earlier messages and not yet ended.
    carry: String,
    cjk: usize,
    alphabetic: usize,
}

/// What a message contributes to a [`LineScan`], kept by content.
struct MessageLines {
    /// Up to the first line break (the whole text when there is none).
    head: String,
    has_break: bool,
    /// The option lines between the first line break and the last.
    middle: Vec<(String, String)>,
    /// After the last line break.
    tail: String,
    cjk: usize,
    alphabetic: usize,
}

impl LineScan {
    fn add(&mut self, content: &str) {
        let m = message_lines(content);
        self.cjk += m.cjk;
        self.alphabetic += m.alphabetic;
        self.carry.push_str(&m.head);
        if m.has_break {
            let line = std::mem::take(&mut self.carry);
            self.options.extend(option_line(&line));
            self.options.extend(m.middle.iter().cloned());
            self.carry.push_str(&m.tail);
        }
    }

    fn finish(mut self) -> (Vec<(String, String)>, bool) {
        let last = std::mem::take(&mut self.carry);
        self.options.extend(option_line(&last));
        (self.options, self.cjk * 4 > self.alphabetic)
    }
}

fn message_lines(content: &str) -> Arc<MessageLines> {
    static MEMO: OnceLock<Memo<Arc<MessageLines>>> = OnceLock::new();
    MEMO.get_or_init(|| Memo::new(MEMO_BYTES / 4))
        .get_or_insert_with(memo::key(content.as_bytes()), || {
            let (head, rest) = match content.split_once('\n') {
                Some((h, r)) => (h, Some(r)),
                None => (content, None),
            };
            let (middle_text, tail) = match rest.map(|r| r.rsplit_once('\n')) {
                Some(Some((m, t))) => (m, t),
                Some(None) => ("", rest.unwrap_or("")),
                None => ("", ""),
            };
            let middle: Vec<(String, String)> =
                middle_text.lines().filter_map(option_line).collect();
            let m = MessageLines {
                head: head.to_string(),
                has_break: rest.is_some(),
                middle,
                tail: tail.to_string(),
                cjk: content.chars().filter(|c| text::is_cjk(*c)).count(),
                alphabetic: content.chars().filter(|c| c.is_alphabetic()).count(),
            };
            let weight = m.head.len() + m.tail.len() + 64 * m.middle.len() + 64;
            (Arc::new(m), weight)
        })
}

/// "A. text" → ("A", "text"), for option-letter enums.
fn option_line(line: &str) -> Option<(String, String)> {
    let l = line.trim().trim_start_matches('(').trim_start_matches('（');
    let mut chars = l.chars();
    let (Some(letter), Some(sep)) = (chars.next(), chars.next()) else {
        return None;
    };
    if letter.is_ascii_uppercase() && matches!(sep, '.' | ')' | '）' | '：' | ':' | '、') {
        let rest: String = chars.collect();
        if !rest.trim().is_empty() {
            return Some((letter.to_string(), rest.trim().to_string()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option lines of texts run together, read the way the model always read them.
    fn whole(texts: &[&str]) -> Vec<(String, String)> {
        texts.concat().lines().filter_map(option_line).collect()
    }

    #[test]
    fn option_lines_by_message_equal_those_of_the_text_run_together() {
        let cases: &[&[&str]] = &[
            &["A. one\nB. two\n", "C. three"],
            &["intro\nA. one", "\nB) two\r\nx\n(C) three"],
            &["no break A", ". tail\nD：four\n\n", "", "E、five"],
            &["A.", " split across\n", "B. b\nC. c"],
            &["\n\n", "A. x\n", "\nB. y"],
        ];
        for texts in cases {
            let mut scan = LineScan::default();
            for t in texts.iter() {
                scan.add(t);
            }
            assert_eq!(scan.finish().0, whole(texts), "{texts:?}");
        }
    }
}
