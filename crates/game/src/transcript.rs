//! The transcript: the game's event log (ARCHITECTURE.md decision 5b).
//!
//! A top-level module below `agent`, `eval` and `game`: characters draft the events of their turns,
//! the evaluator records answers and verdicts, and the game supervisor owns the log, so the log itself
//! depends on none of them (only on `llm` for usage).
//!
//! Every observation is an event with the list of characters who can see it: host lines, questions,
//! answers, clue cards, votes, module outputs. Memory indexes are fed from events by visibility,
//! evaluation reads them, and `result.json`'s usage is their sum, so nothing keeps a second copy of
//! history. Written as JSONL, one event per line, as the game goes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use sleuth_llm::Usage;

/// Who may see an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// Every player.
    All,
    /// Only these characters (and the host and evaluators, who see everything).
    Only(Vec<String>),
}

impl Visibility {
    /// Whether `agent` can see the event.
    pub fn includes(&self, agent: &str) -> bool {
        match self {
            Visibility::All => true,
            Visibility::Only(v) => v.iter().any(|a| a == agent),
        }
    }
}

/// One line of the transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the game, from 0.
    pub seq: u64,
    /// Wall-clock time (RFC 3339); the only field that differs between replays of the same game.
    pub ts: String,
    pub stage: String,
    /// What happened: `host`, `introduction`, `question`, `answer`, `clue`, `vote`, `reveal`, a module
    /// step (`memory_recall`, `sr_subquestions`, `sr_refined`, `sv_attempt`) or an evaluation record.
    pub kind: String,
    pub speaker: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addressee: Option<String>,
    pub text: String,
    pub visible_to: Visibility,
    /// LLM usage of the calls that produced this event (each call is attributed to exactly one event).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Structured details: votes, verification scores, evaluation verdicts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// An event before it gets its place in the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub kind: String,
    pub speaker: String,
    pub addressee: Option<String>,
    pub text: String,
    pub visible_to: Visibility,
    pub usage: Usage,
    pub data: Option<Value>,
}

impl Draft {
    /// A public event.
    pub fn public(
        kind: &str,
        speaker: &str,
        addressee: Option<&str>,
        text: impl Into<String>,
    ) -> Draft {
        Draft {
            kind: kind.into(),
            speaker: speaker.into(),
            addressee: addressee.map(str::to_string),
            text: text.into(),
            visible_to: Visibility::All,
            usage: Usage::default(),
            data: None,
        }
    }

    /// An event only `who` can see.
    pub fn private(kind: &str, speaker: &str, who: &[&str], text: impl Into<String>) -> Draft {
        Draft {
            visible_to: Visibility::Only(who.iter().map(|s| s.to_string()).collect()),
            ..Draft::public(kind, speaker, None, text)
        }
    }

    /// Attaches usage.
    pub fn with_usage(mut self, usage: Usage) -> Draft {
        self.usage = usage;
        self
    }

    /// Attaches structured data.
    pub fn with_data(mut self, data: Value) -> Draft {
        self.data = Some(data);
        self
    }
}

/// Why the transcript could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write transcript {path}")]
pub struct TranscriptError {
    pub path: String,
    #[source]
    pub source: std::io::Error,
}

/// The log of one game, in memory and (optionally) on disk.
///
/// Written to a file, the log need not keep in memory what nobody reads again: with a retention rule
/// ([`Transcript::retaining`]) an event that has been written stays in memory only if the rule keeps
/// it. A game's readers after play are its evaluation (MIRAGE's reads the public conversation and the
/// script summaries) and its bill; the module steps (memory recalls, reflections, refinements), most of
/// a transcript's bytes, are for the file and the viewer. A sweep holds thousands of games at their
/// evaluation at once, each with its whole log (issue 32: ~60 KiB a game, most of it private steps).
pub struct Transcript {
    /// Every event, for a log kept in memory only or without a retention rule; with one, the events not
    /// yet written and the written ones the rule keeps, in order.
    events: Vec<Event>,
    /// Events pushed so far: the next event's `seq`.
    len: u64,
    /// Usage of every event pushed, and of those in the `evaluation` stage and in every other, each
    /// summed as the events come: the order the bill was always summed in, so the floats add up to the
    /// same bits.
    usage: Usage,
    evaluation_usage: Usage,
    gameplay_usage: Usage,
    sink: Option<Sink>,
}

/// About this many bytes of events are appended to the file at once (what a `BufWriter` would
/// buffer).
const FILE_CHUNK: usize = 8 * 1024;

/// The transcript's file, held by path, not open. Events are kept in memory anyway (evaluation
/// reads them), so nothing is buffered twice: the events not yet written are serialised and appended
/// (open, write, close) when about [`FILE_CHUNK`] bytes of them have accumulated, on
/// [`Transcript::flush`] and when the transcript is dropped. A sweep plays thousands of games at
/// once; an open file per game would need as many descriptors (20,000 games pass this machine's hard
/// limit of 20,000; a common soft limit is 1,024), and a write buffer per game costs 8 KiB or more
/// of memory each, while an append per chunk costs three system calls.
struct Sink {
    path: PathBuf,
    /// Events of the in-memory list already in the file (a prefix of it).
    written: usize,
    /// Roughly the bytes of the events not yet written.
    pending: usize,
    /// Which written events stay in memory (all, without a rule).
    keep: Option<fn(&Event) -> bool>,
}

impl Sink {
    fn error(&self, source: std::io::Error) -> TranscriptError {
        TranscriptError {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Appends `events[self.written..]` to the file as JSONL, then lets go of those the retention rule
    /// does not keep.
    fn write_pending(&mut self, events: &mut Vec<Event>) -> Result<(), TranscriptError> {
        let Some(new) = events.get(self.written..).filter(|e| !e.is_empty()) else {
            return Ok(());
        };
        let mut buf = Vec::with_capacity(self.pending + 256 * new.len());
        for e in new {
            serde_json::to_writer(&mut buf, e).map_err(|err| self.error(err.into()))?;
            buf.push(b'\n');
        }
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(&buf))
            .map_err(|e| self.error(e))?;
        if let Some(keep) = self.keep {
            let mut i = 0;
            let written = self.written;
            events.retain(|e| {
                i += 1;
                i <= written || keep(e)
            });
            // The list keeps the capacity of its longest stretch unwritten (an event is ~370 bytes
            // inline) unless told otherwise: thousands of games at their evaluation peak each held
            // one such empty buffer.
            if events.capacity() > 2 * events.len() + 8 {
                events.shrink_to(events.len() + events.len() / 2);
            }
        }
        self.written = events.len();
        self.pending = 0;
        Ok(())
    }
}

impl Drop for Transcript {
    fn drop(&mut self) {
        // What a dropped `BufWriter` does: write the rest, ignoring errors nobody could receive.
        if let Some(sink) = &mut self.sink {
            let _ = sink.write_pending(&mut self.events);
        }
    }
}

impl Transcript {
    /// A transcript kept in memory only.
    pub fn in_memory() -> Transcript {
        Transcript {
            events: Vec::new(),
            len: 0,
            usage: Usage::default(),
            evaluation_usage: Usage::default(),
            gameplay_usage: Usage::default(),
            sink: None,
        }
    }

    /// A transcript also written to `path` as JSONL.
    pub fn to_file(path: &Path) -> Result<Transcript, TranscriptError> {
        // Created (or emptied) now, so a path that cannot be written fails the game before it starts.
        File::create(path).map_err(|source| TranscriptError {
            path: path.display().to_string(),
            source,
        })?;
        let mut t = Transcript::in_memory();
        t.sink = Some(Sink {
            path: path.to_path_buf(),
            written: 0,
            pending: 0,
            keep: None,
        });
        Ok(t)
    }

    /// Keeps in memory, once written to the file, only the events `keep` accepts; [`Transcript::events`]
    /// then holds those and the events not yet written. No effect on a transcript kept in memory only:
    /// there the memory is the only copy.
    pub fn retaining(mut self, keep: fn(&Event) -> bool) -> Transcript {
        if let Some(sink) = &mut self.sink {
            sink.keep = Some(keep);
        }
        self
    }

    /// Appends an event in the given stage and returns its sequence number.
    pub fn push(&mut self, stage: &str, d: Draft) -> Result<u64, TranscriptError> {
        let seq = self.len;
        let e = Event {
            seq,
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            stage: stage.to_string(),
            kind: d.kind,
            speaker: d.speaker,
            addressee: d.addressee,
            text: d.text,
            visible_to: d.visible_to,
            usage: (!d.usage.is_empty()).then_some(d.usage),
            data: d.data,
        };
        if let Some(u) = e.usage {
            self.usage += u;
            if e.stage == EVALUATION {
                self.evaluation_usage += u;
            } else {
                self.gameplay_usage += u;
            }
        }
        // Serialised when written: the text dominates an event's size.
        let size = e.text.len() + 256;
        self.events.push(e);
        self.len += 1;
        if let Some(sink) = &mut self.sink {
            sink.pending += size;
            if sink.pending >= FILE_CHUNK {
                sink.write_pending(&mut self.events)?;
            }
        }
        Ok(seq)
    }

    /// Flushes the file.
    pub fn flush(&mut self) -> Result<(), TranscriptError> {
        match &mut self.sink {
            Some(sink) => sink.write_pending(&mut self.events),
            None => Ok(()),
        }
    }

    /// The events in memory: all of them, unless a retention rule let written ones go
    /// ([`Transcript::retaining`]).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// How many events the game has logged, whether or not they are still in memory.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing has been logged yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Total usage of every event: the game's bill.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Usage of the events of the `evaluation` stage, and of all the others: the bill by phase.
    pub fn usage_by_stage(&self) -> (Usage, Usage) {
        (self.evaluation_usage, self.gameplay_usage)
    }
}

/// The stage whose events are evaluation's (every other stage is play).
const EVALUATION: &str = "evaluation";

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(cost: f64) -> Usage {
        Usage {
            calls: 1,
            prompt_tokens: 10,
            cost_usd: cost,
            ..Usage::default()
        }
    }

    #[test]
    fn written_events_the_rule_does_not_keep_leave_memory_but_not_the_file_or_the_bill() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("transcript.jsonl");
        let mut t = Transcript::to_file(&path)
            .expect("the file is created")
            .retaining(|e| e.visible_to == Visibility::All);
        let long = "x".repeat(FILE_CHUNK);
        t.push("play", Draft::public("speech", "Ann", None, "hello"))
            .expect("pushed");
        t.push(
            "play",
            Draft::private("memory_recall", "Ann", &["Ann"], long.clone()).with_usage(usage(0.1)),
        )
        .expect("pushed, and written: the chunk is full");
        t.push(
            "evaluation",
            Draft::private("answer", "Ann", &["Ann"], "no").with_usage(usage(0.2)),
        )
        .expect("pushed");
        let kinds = |t: &Transcript| {
            t.events()
                .iter()
                .map(|e| e.kind.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            kinds(&t),
            ["speech", "answer"],
            "the written private step let go, the unwritten kept"
        );
        assert_eq!(t.len(), 3);
        assert_eq!(
            t.usage().calls,
            2,
            "the bill counts the step that left memory"
        );
        let (evaluation, play) = t.usage_by_stage();
        assert_eq!((evaluation.cost_usd, play.cost_usd), (0.2, 0.1));
        t.flush().expect("flushed");
        assert_eq!(kinds(&t), ["speech"]);
        let file = std::fs::read_to_string(&path).expect("the file reads");
        let seqs: Vec<u64> = file
            .lines()
            .map(|l| serde_json::from_str::<Event>(l).expect("an event").seq)
            .collect();
        assert_eq!(seqs, [0, 1, 2], "the file has every event, in order");
    }

    #[test]
    fn only_a_mirage_game_keeps_its_written_public_events() {
        use sleuth_script::rules::Protocol;
        let dir = tempfile::tempdir().expect("a temporary directory");
        for (protocol, kept) in [
            (Protocol::Mirage, 1),
            (Protocol::WellPlay, 0),
            (Protocol::ThinkThrice, 0),
        ] {
            let path = dir.path().join(format!("{protocol:?}.jsonl"));
            let mut t = Transcript::to_file(&path)
                .expect("the file is created")
                .retaining(crate::eval::retained_after_play(protocol));
            t.push("play", Draft::public("speech", "Ann", None, "hello"))
                .expect("pushed");
            t.push(
                "play",
                Draft::private("memory_recall", "Ann", &["Ann"], "x"),
            )
            .expect("pushed");
            t.flush().expect("flushed");
            assert_eq!(t.events().len(), kept, "{protocol:?}");
            let lines = std::fs::read_to_string(&path).expect("the file reads");
            assert_eq!(lines.lines().count(), 2, "{protocol:?}: the file has both");
        }
    }

    #[test]
    fn without_a_file_every_event_stays() {
        let mut t = Transcript::in_memory().retaining(|_| false);
        t.push(
            "play",
            Draft::private("memory_recall", "Ann", &["Ann"], "x"),
        )
        .expect("pushed");
        t.flush().expect("nothing to flush");
        assert_eq!(t.events().len(), 1, "memory is the only copy");
    }
}
