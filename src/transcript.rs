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

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::Usage;

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
pub struct Transcript {
    events: Vec<Event>,
    sink: Option<(String, BufWriter<File>)>,
}

impl Transcript {
    /// A transcript kept in memory only.
    pub fn in_memory() -> Transcript {
        Transcript {
            events: Vec::new(),
            sink: None,
        }
    }

    /// A transcript also written to `path` as JSONL.
    pub fn to_file(path: &Path) -> Result<Transcript, TranscriptError> {
        let f = File::create(path).map_err(|source| TranscriptError {
            path: path.display().to_string(),
            source,
        })?;
        Ok(Transcript {
            events: Vec::new(),
            sink: Some((path.display().to_string(), BufWriter::new(f))),
        })
    }

    /// Appends an event in the given stage and returns its sequence number.
    pub fn push(&mut self, stage: &str, d: Draft) -> Result<u64, TranscriptError> {
        let seq = self.events.len() as u64;
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
        if let Some((path, w)) = &mut self.sink {
            let line = serde_json::to_string(&e).map_err(|e| TranscriptError {
                path: path.clone(),
                source: e.into(),
            })?;
            writeln!(w, "{line}").map_err(|source| TranscriptError {
                path: path.clone(),
                source,
            })?;
        }
        self.events.push(e);
        Ok(seq)
    }

    /// Flushes the file.
    pub fn flush(&mut self) -> Result<(), TranscriptError> {
        if let Some((path, w)) = &mut self.sink {
            w.flush().map_err(|source| TranscriptError {
                path: path.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// The events so far.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Total usage of every event: the game's bill.
    pub fn usage(&self) -> Usage {
        self.events.iter().filter_map(|e| e.usage).sum()
    }
}
