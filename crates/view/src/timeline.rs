//! A game's transcript in pages, read from a byte offset: the page's cursor is where the next line
//! starts, so the next page seeks there and reads on. A 3 MB transcript is never read whole for one
//! request, nothing about it is kept between requests, and a page of a running game's transcript ends
//! before a line still being written (the next poll reads it whole).
//!
//! The filter "as seen by character X" is the transcript's own rule, [`Visibility::includes`]: the
//! same one that decides what goes into X's memory during the game, so the page shows exactly what X
//! could have known.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;

use sleuth_game::transcript::{Event, Visibility};
use sleuth_llm::Usage;

/// Bytes one request reads at most while looking for events that pass a filter: a page of a filtered
/// view ends there (with a cursor to go on) rather than reading a large transcript through.
pub const MAX_SCAN: u64 = 4 * 1024 * 1024;

/// The evaluation's answers: the kinds the evaluation view shows.
pub const ANSWER_KINDS: [&str; 3] = ["factual_answer", "inferential_answer", "choice_answer"];

/// Which events a page holds.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only events this character could see.
    pub as_character: Option<String>,
    /// Only events of these kinds.
    pub kinds: Option<Vec<String>>,
}

impl Filter {
    fn admits(&self, e: &Event) -> bool {
        self.as_character
            .as_deref()
            .is_none_or(|who| e.visible_to.includes(who))
            && self.kinds.as_ref().is_none_or(|k| k.contains(&e.kind))
    }
}

/// An event as the timeline shows it.
#[derive(Debug, Clone, Serialize)]
pub struct EventView {
    pub seq: u64,
    pub ts: String,
    pub stage: String,
    pub kind: String,
    pub speaker: String,
    pub addressee: Option<String>,
    pub text: String,
    /// `None`: every player; else who could see it.
    pub only: Option<Vec<String>>,
    pub usage: Option<Usage>,
    /// `data`, pretty-printed.
    pub data: Option<String>,
    /// An evaluation verdict's `correct`, when the event has one.
    pub correct: Option<bool>,
    /// The question an answer answers (`data.text`) and its reference answer, when recorded.
    pub question: Option<String>,
    pub reference: Option<String>,
}

impl From<Event> for EventView {
    fn from(e: Event) -> EventView {
        let field = |k: &str| {
            e.data.as_ref().and_then(|d| d.get(k)).and_then(|v| {
                v.as_str()
                    .map(str::to_string)
                    .or_else(|| (!v.is_null()).then(|| v.to_string()))
            })
        };
        let correct = e
            .data
            .as_ref()
            .and_then(|d| d.get("correct"))
            .and_then(|v| v.as_bool());
        let question = field("text");
        let reference = field("reference")
            .or_else(|| field("answer"))
            .or_else(|| field("truth"));
        EventView {
            seq: e.seq,
            ts: e.ts,
            stage: e.stage,
            kind: e.kind,
            speaker: e.speaker,
            addressee: e.addressee,
            text: e.text,
            only: match e.visible_to {
                Visibility::All => None,
                Visibility::Only(v) => Some(v),
            },
            usage: e.usage,
            data: e
                .data
                .as_ref()
                .and_then(|d| serde_json::to_string_pretty(d).ok()),
            correct,
            question,
            reference,
        }
    }
}

/// A page of events.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    pub events: Vec<EventView>,
    /// Lines that were not events (shown as such, not dropped silently): (byte offset, error).
    pub unreadable: Vec<(u64, String)>,
    /// For each event of `events`, the byte offset where the line after it starts: a reader that
    /// uses only the first events of a page (the two-games view, which aligns two transcripts) goes
    /// on from there.
    pub ends: Vec<u64>,
    /// Where the next page starts; `None` at the end of the file as it is now.
    pub next: Option<u64>,
    /// Where reading stopped: the end of the last whole line read (a running game's next events
    /// start there).
    pub end: u64,
    /// Bytes the file had when read.
    pub size: u64,
}

/// Reads up to `limit` events passing `filter` from byte `from` of the transcript at `path`.
pub fn read_page(path: &Path, from: u64, limit: usize, filter: &Filter) -> std::io::Result<Page> {
    read_page_within(path, from, limit, filter, MAX_SCAN)
}

/// [`read_page`] reading at most `max_bytes` (and never more than [`MAX_SCAN`]): a request that
/// reads several pages (the two-games view looking for the first difference) shares one budget
/// between them.
pub fn read_page_within(
    path: &Path,
    from: u64,
    limit: usize,
    filter: &Filter,
    max_bytes: u64,
) -> std::io::Result<Page> {
    let max_bytes = max_bytes.min(MAX_SCAN);
    let mut f = File::open(path)?;
    let size = f.metadata()?.len();
    let mut page = Page {
        events: Vec::new(),
        unreadable: Vec::new(),
        ends: Vec::new(),
        next: None,
        end: from,
        size,
    };
    if from >= size {
        return Ok(page);
    }
    f.seek(SeekFrom::Start(from))?;
    let mut r = BufReader::with_capacity(64 * 1024, f);
    let mut pos = from;
    let mut line = Vec::new();
    loop {
        if page.events.len() >= limit || pos - from >= max_bytes {
            page.next = (pos < size).then_some(pos);
            break;
        }
        let Some((n, whole)) = read_line_capped(&mut r, &mut line)? else {
            // The end, or a line still being written: leave it for the next read.
            break;
        };
        let at = pos;
        pos += n;
        if !whole {
            if filter.as_character.is_none() && filter.kinds.is_none() {
                page.unreadable.push((
                    at,
                    format!("a line of {n} bytes, longer than the viewer reads ({MAX_LINE})"),
                ));
            }
            continue;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Event>(text) {
            Ok(e) => {
                if filter.admits(&e) {
                    page.events.push(e.into());
                    page.ends.push(pos);
                }
            }
            Err(e) if filter.as_character.is_none() && filter.kinds.is_none() => {
                page.unreadable.push((at, e.to_string()));
            }
            // Filtered views leave out what cannot be read: it cannot be shown to be visible.
            Err(_) => {}
        }
    }
    page.end = pos;
    Ok(page)
}

/// The characters of a transcript: everyone an event was private to among its first `scan` bytes
/// (each player is dealt a private script at the start), in order of first appearance.
pub fn characters(path: &Path, scan: u64) -> Vec<String> {
    let Ok(f) = File::open(path) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    let mut read = 0u64;
    let mut r = BufReader::new(f);
    let mut line = Vec::new();
    while let Ok(Some((n, whole))) = read_line_capped(&mut r, &mut line) {
        read += n;
        if read > scan {
            break;
        }
        if !whole {
            continue;
        }
        if let Ok(e) = serde_json::from_slice::<Event>(&line) {
            if let Visibility::Only(who) = e.visible_to {
                for w in who {
                    if !out.contains(&w) {
                        out.push(w);
                    }
                }
            }
        }
    }
    out
}

/// The longest transcript line the viewer reads: an event holds one utterance or one prompt's text,
/// far below this; a longer line (a corrupt or hostile file) is passed over without being held in
/// memory, so one line cannot make a request take hundreds of megabytes.
pub const MAX_LINE: usize = 4 * 1024 * 1024;

/// Reads the next whole line into `line` (cleared first), holding at most [`MAX_LINE`] bytes of it.
/// `None` at the end or on a last line without its line break (still being written); else the bytes
/// the line took in the file and whether it fit (a line that did not is read past, not kept).
fn read_line_capped<R: BufRead>(
    r: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<(u64, bool)>> {
    line.clear();
    let n = std::io::Read::take(&mut *r, MAX_LINE as u64 + 1).read_until(b'\n', line)? as u64;
    if n == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        return Ok(Some((n, true)));
    }
    if line.len() <= MAX_LINE {
        // The end of the file inside a line: it is still being written.
        return Ok(None);
    }
    // Too long: pass over the rest of it a buffer at a time.
    line.clear();
    let mut skipped = n;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                r.consume(i + 1);
                return Ok(Some((skipped + i as u64 + 1, false)));
            }
            None => {
                let len = buf.len();
                r.consume(len);
                skipped += len as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_line_past_the_cap_is_passed_over_and_named() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.jsonl");
        let mut f = File::create(&path).expect("create");
        writeln!(f, "{}", event(0, "narration", "host", None)).expect("write");
        writeln!(f, "{}", "x".repeat(MAX_LINE + 10)).expect("write");
        writeln!(f, "{}", event(1, "narration", "host", None)).expect("write");
        drop(f);
        let p = read_page(&path, 0, 100, &Filter::default()).expect("a page");
        assert_eq!(p.unreadable.len(), 1);
        assert!(p.unreadable[0].1.contains("longer than the viewer reads"));
        let mut events = p.events.len();
        if let Some(next) = p.next {
            events += read_page(&path, next, 100, &Filter::default())
                .expect("the next page")
                .events
                .len();
        }
        assert_eq!(events, 2, "the events on both sides of the long line");
    }

    fn event(seq: u64, kind: &str, speaker: &str, only: Option<&[&str]>) -> String {
        let e = Event {
            seq,
            ts: "2026-01-01T00:00:00Z".into(),
            stage: if seq < 2 { "intro" } else { "play" }.into(),
            kind: kind.into(),
            speaker: speaker.into(),
            addressee: None,
            text: format!("event {seq}"),
            visible_to: match only {
                None => Visibility::All,
                Some(w) => Visibility::Only(w.iter().map(|s| s.to_string()).collect()),
            },
            usage: None,
            data: None,
        };
        serde_json::to_string(&e).expect("json")
    }

    fn transcript(lines: &[String], tail: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        for l in lines {
            writeln!(f, "{l}").expect("write");
        }
        write!(f, "{tail}").expect("write");
        f
    }

    #[test]
    fn pages_follow_their_cursor_to_the_end() {
        let lines: Vec<String> = (0..5).map(|i| event(i, "host", "host", None)).collect();
        let f = transcript(&lines, "");
        let p1 = read_page(f.path(), 0, 2, &Filter::default()).expect("page 1");
        assert_eq!(p1.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [0, 1]);
        let p2 = read_page(f.path(), p1.next.expect("more"), 2, &Filter::default()).expect("p2");
        assert_eq!(p2.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3]);
        let p3 = read_page(f.path(), p2.next.expect("more"), 2, &Filter::default()).expect("p3");
        assert_eq!(p3.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [4]);
        assert_eq!(p3.next, None);
    }

    #[test]
    fn a_character_sees_public_events_and_its_own_private_ones_only() {
        let lines = vec![
            event(0, "script", "host", Some(&["Ada"])),
            event(1, "script", "host", Some(&["Bo"])),
            event(2, "question", "Ada", None),
            event(3, "factual_answer", "Bo", Some(&["Bo"])),
        ];
        let f = transcript(&lines, "");
        let as_ada = Filter {
            as_character: Some("Ada".into()),
            kinds: None,
        };
        let p = read_page(f.path(), 0, 10, &as_ada).expect("page");
        assert_eq!(p.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [0, 2]);
        let answers = Filter {
            as_character: None,
            kinds: Some(ANSWER_KINDS.iter().map(|s| s.to_string()).collect()),
        };
        let p = read_page(f.path(), 0, 10, &answers).expect("page");
        assert_eq!(p.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [3]);
        assert_eq!(characters(f.path(), 1 << 20), ["Ada", "Bo"]);
    }

    #[test]
    fn a_line_still_being_written_is_left_for_the_next_read() {
        let lines = vec![event(0, "host", "host", None)];
        let f = transcript(&lines, "{\"seq\": 1, \"ts\"");
        let p = read_page(f.path(), 0, 10, &Filter::default()).expect("page");
        assert_eq!(p.events.len(), 1);
        assert!(p.unreadable.is_empty());
        assert_eq!(p.next, None);
    }
}
