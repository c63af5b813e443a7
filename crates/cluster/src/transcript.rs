//! A game's transcript as the coordinator streams it — [`pb::TranscriptChunk`]s in order, the last
//! one marked — written to a file that appears only when the last piece is in.
//!
//! Two readers receive transcripts this way: `sleuth results` (interleaved with the games' results)
//! and the viewer's mirror of a cluster (one game on demand). Both write through [`TranscriptSink`],
//! so a cut stream never leaves a truncated `transcript.jsonl` and a piece of another game is refused
//! the same way in both.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use sleuth_base::fs::AtomicFile;

use crate::proto as pb;

/// Why a transcript could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// A piece of another game, or a piece after the last one.
    #[error("a transcript piece of game {got:?} while receiving game {game}'s")]
    OutOfOrder { game: String, got: String },
    /// The stream ended before the piece marked last.
    #[error("game {0}'s transcript cut short")]
    CutShort(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One game's transcript being received (see the module documentation). The file (and its
/// directory) is created with the first piece: a game with no transcript yet leaves nothing.
pub struct TranscriptSink {
    game: String,
    path: PathBuf,
    file: Option<AtomicFile>,
    done: bool,
}

impl TranscriptSink {
    /// A sink for game `game`'s transcript, to become the file at `path`.
    pub fn new(game: &str, path: &Path) -> TranscriptSink {
        TranscriptSink {
            game: game.to_string(),
            path: path.to_path_buf(),
            file: None,
            done: false,
        }
    }

    /// The game whose transcript this is.
    pub fn game(&self) -> &str {
        &self.game
    }

    /// Whether the piece marked last has arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Writes one piece (written through to the file, not held in memory).
    pub fn write(&mut self, chunk: &pb::TranscriptChunk) -> Result<(), SinkError> {
        if chunk.game_id != self.game || self.done {
            return Err(SinkError::OutOfOrder {
                game: self.game.clone(),
                got: chunk.game_id.clone(),
            });
        }
        let io = |source| SinkError::Io {
            path: self.path.clone(),
            source,
        };
        let file = match self.file.as_mut() {
            Some(f) => f,
            None => {
                if let Some(dir) = self.path.parent() {
                    std::fs::create_dir_all(dir).map_err(io)?;
                }
                self.file
                    .insert(AtomicFile::create(&self.path).map_err(io)?)
            }
        };
        file.write_all(&chunk.data).map_err(io)?;
        self.done = chunk.last;
        Ok(())
    }

    /// Ends the transcript: `true` when it is complete and now at its path, `false` when no piece
    /// came (the game has none yet). A transcript without its last piece is an error, and its
    /// temporary file is removed.
    pub fn finish(self) -> Result<bool, SinkError> {
        match (self.file, self.done) {
            (None, _) => Ok(false),
            (Some(_), false) => Err(SinkError::CutShort(self.game)),
            (Some(f), true) => {
                f.commit().map_err(|source| SinkError::Io {
                    path: self.path,
                    source,
                })?;
                Ok(true)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(game: &str, data: &str, last: bool) -> pb::TranscriptChunk {
        pb::TranscriptChunk {
            game_id: game.into(),
            data: data.as_bytes().to_vec(),
            last,
        }
    }

    #[test]
    fn the_file_appears_whole_only_after_the_last_piece() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("g1").join("transcript.jsonl");
        let mut sink = TranscriptSink::new("g1", &path);
        sink.write(&chunk("g1", "{\"a\":", false)).expect("first");
        assert!(!path.exists(), "no half transcript is visible");
        sink.write(&chunk("g1", "1}\n", true)).expect("last");
        assert!(sink.finish().expect("finish"));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "{\"a\":1}\n");
    }

    #[test]
    fn a_cut_stream_or_another_games_piece_leaves_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("transcript.jsonl");
        let mut sink = TranscriptSink::new("g1", &path);
        sink.write(&chunk("g1", "x", false)).expect("first");
        let err = sink
            .write(&chunk("g2", "y", false))
            .expect_err("other game");
        assert!(err.to_string().contains("g2"), "{err}");
        let err = sink.finish().expect_err("cut short");
        assert!(err.to_string().contains("cut short"), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
        assert!(!TranscriptSink::new("g3", &path).finish().expect("empty"));
    }
}
