//! Context windows: how much a model reads in one request, and how a prompt is made to fit it.
//!
//! Frameworks mark the parts of a prompt that the papers let a player do without — lines of dialogue
//! ([`dialogue`]) and recalled memory chunks ([`recalled`]) — when they put them in a template's
//! variables. The marks never reach a model: [`fit`] takes them out of every request, and only when
//! the prompt and the reply's `max_tokens` would not fit the model's window does it leave marked parts
//! out, in the order the issue of record (19) fixes: dialogue oldest first, then memory chunks least
//! relevant first (a recall lists them best first). The rules, the character's script and the question
//! are never marked, so never cut. Putting the script's summary in place of the script is the agent's
//! part (`agent/context.rs`), because only an agent that has a summary (MIRAGE's) can do it. A prompt
//! that does not fit even then is refused before it is sent, with its sizes.
//!
//! Tokens are counted with cl100k, which is not every model's tokenizer (SmolLM2's writes ~10–20 %
//! more tokens for English, others more for Chinese). So shortening aims at [`TARGET_SHARE`] of the
//! window, leaving room for the difference, while the refusal applies only to a prompt that passes the
//! whole window even by cl100k's count: a shortened prompt between the two is sent, and a server that
//! still finds it too long answers with a context-length error, which is final.
//!
//! **Per call, work in the marked parts only.** Every call's prompt is checked here, and a character's
//! script, unmarked, makes most of it: such a message is neither parsed nor rebuilt, and a long text's
//! count is kept by its content hash ([`prompt_tokens`]), so that the check of a 32k-token prompt
//! costs one hash of the script rather than a copy and a token-memo lookup per kilobyte (issue 32).

use std::sync::LazyLock;

use sleuth_base::memo::{self, Memo};

use super::tokens;
use super::types::Message;

/// Opens a line of dialogue (what was said, heard or done in the game).
const DIALOGUE: char = '\u{E000}';
/// Opens a recalled memory chunk.
const RECALLED: char = '\u{E001}';
/// Closes either.
const END: char = '\u{E002}';
/// Stands, while a message is rebuilt, where a left-out part was.
const GAP: char = '\u{E003}';

/// Shortening aims at this share of the window (see the module documentation).
pub const TARGET_SHARE: f64 = 0.9;

/// Context windows of models whose window is published and fixed, by model id. A model's own setting
/// and what its server reports come first; an id listed here needs neither.
const KNOWN: &[(&str, u32)] = &[
    ("gpt-4o", 128_000),
    ("gpt-4o-mini", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.1-mini", 1_047_576),
    ("gpt-4.1-nano", 1_047_576),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o3-mini", 200_000),
    ("o4-mini", 200_000),
];

/// The built-in window of a model id, if it is a known one.
pub fn known(model: &str) -> Option<u32> {
    KNOWN.iter().find(|(id, _)| *id == model).map(|(_, w)| *w)
}

/// `text` marked as a line of dialogue: left out (oldest first) when a prompt must be shortened.
pub fn dialogue(text: &str) -> String {
    mark(DIALOGUE, text)
}

/// `text` marked as a recalled memory chunk: left out (last first) after all dialogue.
pub fn recalled(text: &str) -> String {
    mark(RECALLED, text)
}

fn mark(kind: char, text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 6);
    out.push(kind);
    push_unmarked(&mut out, text);
    out.push(END);
    out
}

/// Whether `text` holds a mark, by a byte search: every prompt of every call is checked, and a
/// character's script makes it tens of kilobytes, so this runs at memchr's speed rather than a
/// decode of every character. The marks are U+E000..=U+E003, `EE 80 80..=83` in UTF-8, and `EE`
/// starts only the characters U+E000..=U+EFFF.
fn has_mark(text: &str) -> bool {
    marks(text).next().is_some()
}

/// The byte offsets of the marks in `text` (each three bytes long), found as [`has_mark`] does.
fn marks(text: &str) -> impl Iterator<Item = usize> + '_ {
    let b = text.as_bytes();
    memchr::memchr_iter(0xEE, b)
        .filter(move |&i| b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0x80..=0x83)))
}

/// Appends `text` without its marks, copying the runs between them whole (a prompt is stripped with
/// every call: a copy per character was a sixth of a game's CPU with a long script).
fn push_unmarked(out: &mut String, text: &str) {
    let mut from = 0;
    for at in marks(text) {
        // `at` is a lead byte and `at + 3` ends the mark's character: both are char boundaries.
        out.push_str(&text[from..at]);
        from = at + 3;
    }
    out.push_str(&text[from..]);
}

/// `text` without marks: what a model, a transcript or a cache key sees.
pub fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_unmarked(&mut out, text);
    out
}

pub use crate::types::Shortening;

/// Texts at least this long have their counts kept by content hash ([`text_tokens`]); a shorter one
/// is a single lookup in the token memo anyway.
const COUNTED_BYTES: usize = 4096;

/// Long texts' token counts kept at most per generation (one weight each: about 3 MB for both
/// generations when full). Scripts, rules and long histories are far fewer in any run.
const COUNTED_TEXTS: usize = 1 << 16;

/// The tokens of `text` under cl100k ([`tokens::count`]): for a long text, counted once per process
/// and then found by one hash of its bytes, where [`tokens::count`] cuts it into chunks and looks each
/// up (a text's count is a function of its bytes, so the memo changes no figure).
fn text_tokens(text: &str) -> u64 {
    static COUNTS: LazyLock<Memo<u64>> = LazyLock::new(|| Memo::new(COUNTED_TEXTS));
    if text.len() < COUNTED_BYTES {
        return tokens::count(text);
    }
    COUNTS.get_or_insert_with(memo::key(text.as_bytes()), || (tokens::count(text), 1))
}

/// [`tokens::count_messages`] of messages whose contents count `counts`: the chat framing is taken
/// from it, so the two cannot disagree.
fn framed(counts: impl Iterator<Item = u64>) -> u64 {
    let frame = tokens::count_messages(&[]);
    let per_message = tokens::count_messages(&[Message::user(String::new())]) - frame;
    frame + counts.map(|c| per_message + c).sum::<u64>()
}

/// The prompt tokens of `messages` as sent (cl100k with the chat framing): [`tokens::count_messages`],
/// with long texts counted through [`text_tokens`]. What the gateway counts a prompt with.
pub fn prompt_tokens(messages: &[Message]) -> u64 {
    framed(messages.iter().map(|m| text_tokens(&m.content)))
}

/// A prompt that does not fit its window, however much is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    /// The prompt's tokens (cl100k) with every marked part left out.
    pub prompt_tokens: u64,
    pub max_tokens: u32,
    pub window: u32,
}

/// A request's messages made ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    pub messages: Vec<Message>,
    pub shortening: Shortening,
}

/// One message cut into plain text and marked parts.
struct Parsed {
    parts: Vec<Part>,
}

enum Part {
    Text(String),
    Marked {
        dialogue: bool,
        text: String,
        tokens: u64,
        out: bool,
    },
}

fn parse(content: &str) -> Parsed {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut open: Option<bool> = None;
    // The runs between marks are copied whole (see `push_unmarked`).
    let mut from = 0;
    for at in marks(content) {
        text.push_str(&content[from..at]);
        from = at + 3;
        let c = content[at..].chars().next().unwrap_or(GAP);
        match (c, open) {
            (DIALOGUE | RECALLED, _) => {
                // An unclosed mark ends at the next one: plain text either way.
                if !text.is_empty() {
                    parts.push(close(open, std::mem::take(&mut text)));
                }
                open = Some(c == DIALOGUE);
            }
            (END, Some(_)) => {
                parts.push(close(open, std::mem::take(&mut text)));
                open = None;
            }
            // An end with nothing open, or a gap: dropped.
            _ => {}
        }
    }
    text.push_str(&content[from..]);
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Parsed { parts }
}

fn close(open: Option<bool>, text: String) -> Part {
    match open {
        Some(dialogue) => Part::Marked {
            dialogue,
            tokens: tokens::count(&text) + 1,
            text,
            out: false,
        },
        None => Part::Text(text),
    }
}

impl Parsed {
    /// The message's text, with left-out parts gone and a line they leave empty (or holding only a
    /// list bullet) gone with them.
    fn render(&self) -> String {
        let mut raw = String::new();
        let mut gaps = false;
        for p in &self.parts {
            match p {
                Part::Text(t) => raw.push_str(t),
                Part::Marked { out: true, .. } => {
                    raw.push(GAP);
                    gaps = true;
                }
                Part::Marked { text, .. } => raw.push_str(text),
            }
        }
        if !gaps {
            return raw;
        }
        let mut out = String::with_capacity(raw.len());
        for line in raw.split_inclusive('\n') {
            if !line.contains(GAP) {
                out.push_str(line);
                continue;
            }
            let kept: String = line.chars().filter(|c| *c != GAP).collect();
            if !bullet_only(&kept) {
                out.push_str(&kept);
            }
        }
        out
    }
}

/// True for a line with nothing but whitespace and a list bullet ("- ", "* ", "3. ").
fn bullet_only(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || matches!(t, "-" | "*" | "•")
        || (t.ends_with(['.', ')']) && t[..t.len() - 1].chars().all(|c| c.is_ascii_digit()))
}

/// Each message parsed if it holds marks; `None` for one that goes as it is (see the module
/// documentation).
fn parse_marked(messages: &[Message]) -> Vec<Option<Parsed>> {
    messages
        .iter()
        .map(|m| has_mark(&m.content).then(|| parse(&m.content)))
        .collect()
}

/// The messages as they would be sent: unmarked ones shared, marked ones rebuilt.
fn sent(messages: &[Message], parsed: &[Option<Parsed>]) -> Vec<Message> {
    messages
        .iter()
        .zip(parsed)
        .map(|(m, p)| match p {
            None => m.clone(),
            Some(p) => Message {
                role: m.role,
                content: p.render().into(),
            },
        })
        .collect()
}

/// [`prompt_tokens`] of [`sent`]'s messages, without building them.
fn sent_tokens(messages: &[Message], parsed: &[Option<Parsed>]) -> u64 {
    framed(messages.iter().zip(parsed).map(|(m, p)| match p {
        None => text_tokens(&m.content),
        Some(p) => text_tokens(&p.render()),
    }))
}

/// `messages` made ready for a model with a context window of `window` tokens (none: unbounded) and a
/// reply of up to `max_tokens`: marks taken out, and marked parts left out until the prompt fits (see
/// the module documentation). `Ok(None)`: send the messages as they are.
pub fn fit(
    messages: &[Message],
    max_tokens: u32,
    window: Option<u32>,
) -> Result<Option<Fitted>, Overflow> {
    let mut parsed = parse_marked(messages);
    let marked = parsed.iter().any(Option::is_some);
    let Some(window) = window else {
        return Ok(marked.then(|| Fitted {
            messages: strip_all(messages, &parsed),
            shortening: Shortening::default(),
        }));
    };
    let target = (f64::from(window) * TARGET_SHARE) as u64;
    let room = target.saturating_sub(u64::from(max_tokens));
    let hard = u64::from(window).saturating_sub(u64::from(max_tokens));
    let full = sent_tokens(messages, &parsed);
    if full <= room {
        return Ok(marked.then(|| Fitted {
            messages: sent(messages, &parsed),
            shortening: Shortening::default(),
        }));
    }
    // The order parts are left out in: dialogue oldest first, then memory chunks last first.
    let mut order: Vec<(usize, usize)> = Vec::new();
    let mut chunks: Vec<(usize, usize)> = Vec::new();
    for (i, p) in parsed.iter().enumerate() {
        let Some(p) = p else { continue };
        for (j, part) in p.parts.iter().enumerate() {
            if let Part::Marked { dialogue, .. } = part {
                if *dialogue {
                    order.push((i, j));
                } else {
                    chunks.push((i, j));
                }
            }
        }
    }
    order.extend(chunks.into_iter().rev());
    let mut shortening = Shortening {
        calls: 1,
        ..Shortening::default()
    };
    let mut estimate = full;
    let mut next = order.into_iter();
    let now = loop {
        // Leave parts out by their own counts until the estimate fits, then count the real prompt.
        while estimate > room {
            let Some((i, j)) = next.next() else { break };
            let part = parsed[i].as_mut().map(|p| &mut p.parts[j]);
            if let Some(Part::Marked {
                dialogue,
                tokens,
                out,
                ..
            }) = part
            {
                *out = true;
                estimate = estimate.saturating_sub(*tokens);
                if *dialogue {
                    shortening.dialogue += 1;
                } else {
                    shortening.recalled += 1;
                }
            }
        }
        let now = sent_tokens(messages, &parsed);
        if now <= room || next.len() == 0 {
            break now;
        }
        estimate = now;
    };
    if now > hard {
        return Err(Overflow {
            prompt_tokens: now,
            max_tokens,
            window,
        });
    }
    shortening.tokens = full.saturating_sub(now);
    Ok(Some(Fitted {
        messages: sent(messages, &parsed),
        shortening,
    }))
}

/// Tokens (cl100k, with the chat framing) of `messages` with every marked part left out: the least a
/// prompt can be shortened to.
pub fn least_tokens(messages: &[Message]) -> u64 {
    let mut parsed = parse_marked(messages);
    for p in parsed.iter_mut().flatten() {
        for part in &mut p.parts {
            if let Part::Marked { out, .. } = part {
                *out = true;
            }
        }
    }
    sent_tokens(messages, &parsed)
}

/// The messages with marks taken out and nothing left out.
fn strip_all(messages: &[Message], parsed: &[Option<Parsed>]) -> Vec<Message> {
    messages
        .iter()
        .zip(parsed)
        .map(|(m, p)| match p {
            None => m.clone(),
            Some(_) => Message {
                role: m.role,
                content: strip(&m.content).into(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The marks, one character at a time: what the byte search must agree with.
    fn is_mark(c: char) -> bool {
        matches!(c, DIALOGUE | RECALLED | END | GAP)
    }

    fn user(lines: &[String]) -> Vec<Message> {
        let mut text = String::from("### What was said\n");
        for l in lines {
            text.push_str(&format!("- {l}\n"));
        }
        text.push_str("### Instructions\nWho did it?");
        vec![Message::system("You are Ada."), Message::user(text)]
    }

    fn said(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                dialogue(&format!(
                    "Bo said line number {i} about the lantern and the ferry."
                ))
            })
            .collect()
    }

    #[test]
    fn stripping_by_runs_equals_stripping_by_characters() {
        let texts = [
            format!("a{DIALOGUE}b{END}c"),
            format!("{DIALOGUE}{RECALLED}{END}{GAP}"),
            format!("你{DIALOGUE}好{}{END}{}", '\u{E004}', '\u{EFFF}'),
            String::from("plain"),
            String::new(),
        ];
        for t in texts {
            let by_chars: String = t.chars().filter(|c| !is_mark(*c)).collect();
            assert_eq!(strip(&t), by_chars, "{t:?}");
        }
        assert_eq!(dialogue(&format!("x{END}y")), format!("{DIALOGUE}xy{END}"));
    }

    #[test]
    fn the_byte_search_finds_exactly_the_marks() {
        assert!(has_mark(&dialogue("x")));
        assert!(has_mark(&format!("abc{GAP}")));
        // Neighbours of the marks in the private-use area, and other characters starting with EE.
        for c in ['\u{E004}', '\u{E0FF}', '\u{EFFF}', '\u{E07F}', '你'] {
            assert!(!has_mark(&format!("a{c}b")), "{c:?}");
        }
        assert!(!has_mark(""));
    }

    #[test]
    fn marks_never_reach_the_model_and_an_unbounded_window_leaves_everything_in() {
        let m = user(&said(3));
        let f = fit(&m, 100, None)
            .unwrap()
            .expect("marked messages are rebuilt");
        assert!(f.shortening.is_empty());
        let text = &f.messages[1].content;
        assert!(!text.chars().any(is_mark), "{text:?}");
        assert!(!has_mark(text));
        assert!(text.contains("- Bo said line number 0"));
        assert!(text.contains("- Bo said line number 2"));
        assert_eq!(fit(&[Message::user("plain")], 10, Some(100)).unwrap(), None);
    }

    #[test]
    fn dialogue_goes_oldest_first_then_memory_last_first_never_the_rest() {
        let mut lines = said(40);
        lines.extend(
            ["alpha", "beta", "gamma"]
                .iter()
                .map(|w| recalled(&format!("Memory {w}: the lamp was lit at nine."))),
        );
        let m = user(&lines);
        let full = tokens::count_messages(&fit(&m, 0, None).unwrap().unwrap().messages);
        // Room for the frame and a few lines only.
        let window = ((full / 4) as f64 / TARGET_SHARE) as u32 + 50;
        let f = fit(&m, 50, Some(window)).unwrap().expect("shortened");
        let text = &f.messages[1].content;
        assert!(text.starts_with("### What was said\n"), "{text}");
        assert!(text.ends_with("### Instructions\nWho did it?"), "{text}");
        assert!(
            !text.contains("line number 0 "),
            "oldest dialogue left out first"
        );
        assert!(f.shortening.dialogue > 0 && f.shortening.calls == 1);
        assert!(
            tokens::count_messages(&f.messages) + 50 <= (f64::from(window) * TARGET_SHARE) as u64
        );
        if f.shortening.recalled > 0 {
            assert_eq!(
                f.shortening.dialogue, 40,
                "memory goes only after all dialogue"
            );
            assert!(!text.contains("gamma") || text.contains("alpha"));
        } else {
            assert!(text.contains("Memory gamma") && text.contains("line number 39"));
        }
        assert!(
            !text.contains("\n- \n"),
            "no empty bullet left behind: {text}"
        );
        assert!(f.shortening.tokens > 0);
    }

    #[test]
    fn memory_chunks_go_last_first_once_dialogue_is_gone() {
        let lines: Vec<String> = (0..30)
            .map(|i| {
                recalled(&format!(
                    "Chunk {i}: someone crossed the deck at {i} past nine."
                ))
            })
            .collect();
        let m = user(&lines);
        let f = fit(&m, 20, Some(300)).unwrap().expect("shortened");
        let text = &f.messages[1].content;
        assert!(text.contains("Chunk 0:"), "the best chunk stays: {text}");
        assert!(!text.contains("Chunk 29:"), "the least relevant goes first");
        assert_eq!(f.shortening.dialogue, 0);
        assert!(f.shortening.recalled > 0);
    }

    #[test]
    fn a_prompt_that_cannot_fit_is_refused_with_its_sizes() {
        let script = "The ferry left at nine. ".repeat(200);
        let m = vec![Message::system(script), Message::user(said(2).join("\n"))];
        let err = fit(&m, 100, Some(512)).unwrap_err();
        assert_eq!(err.window, 512);
        assert_eq!(err.max_tokens, 100);
        assert!(err.prompt_tokens > 412, "{err:?}");
    }

    #[test]
    fn counts_kept_by_content_equal_the_tokenizers() {
        let script = "Ada kept the brass key in her glove.\n\n".repeat(400);
        assert!(script.len() >= COUNTED_BYTES);
        let m = vec![
            Message::system(script.clone()),
            Message::user(format!(
                "### What was said\n- {}\nWho?",
                dialogue("Bo: at nine.")
            )),
        ];
        for _ in 0..2 {
            assert_eq!(
                prompt_tokens(&m[..1]),
                tokens::count_messages(&m[..1]),
                "counted, then found"
            );
        }
        // An unmarked script goes as it is; only the marked message is rebuilt.
        let f = fit(&m, 100, Some(128_000))
            .unwrap()
            .expect("marks stripped");
        assert_eq!(f.messages[0], m[0]);
        assert_eq!(*f.messages[1].content, strip(&m[1].content));
        assert_eq!(
            least_tokens(&m),
            tokens::count_messages(&[m[0].clone(), Message::user("### What was said\nWho?")])
        );
        let plain = [m[0].clone(), Message::user("Who?")];
        assert_eq!(fit(&plain, 100, Some(128_000)).unwrap(), None);
    }

    #[test]
    fn text_cannot_forge_a_mark() {
        let evil = format!("a{DIALOGUE}b{END}c");
        assert_eq!(strip(&dialogue(&evil)), "abc");
        assert!(bullet_only(" - ") && bullet_only("12.") && !bullet_only("- x"));
    }
}
