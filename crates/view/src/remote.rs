//! The cluster behind a mirrored run directory (`sleuth view --coordinator`): what the pages ask it
//! for while they serve (a game's transcript on demand) and what the mirror's last poll brought that
//! it does not store. The mirror (`mirror.rs`) keeps it up to date; the pages only read it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;
use std::time::Duration;

use sleuth_cluster::client::Sweeps;
use sleuth_cluster::proto as pb;
use sleuth_cluster::transcript::{SinkError, TranscriptSink};
use sleuth_report::load::TRANSCRIPT_FILE;
use sleuth_store::{StoreError, TotalsRow};

/// How long one call to the coordinator may take before the mirror gives up on it (a `Results` of
/// a large sweep streams for a while: it has this long in all).
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest transcript the mirror fetches: a game's transcript is a few megabytes; past this the
/// fetch stops (and what was written is discarded by the sink) instead of filling the disk.
pub const MAX_TRANSCRIPT_BYTES: u64 = 512 * 1024 * 1024;
/// Why the mirror could not follow the cluster.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The coordinator refused or failed a call (its status code and message; never the token).
    #[error("coordinator: {0}")]
    Rpc(String),
    #[error("coordinator: no answer in {0:?}")]
    Timeout(Duration),
    /// The coordinator sent something the mirror cannot use.
    #[error("coordinator sent {0}")]
    Bad(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl From<SinkError> for MirrorError {
    fn from(e: SinkError) -> Self {
        match e {
            SinkError::Io { path, source } => MirrorError::Io { path, source },
            other => MirrorError::Bad(other.to_string()),
        }
    }
}

impl From<tonic::Status> for MirrorError {
    fn from(s: tonic::Status) -> Self {
        MirrorError::Rpc(format!("{:?}: {}", s.code(), s.message()))
    }
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MirrorError + '_ {
    move |source| MirrorError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(crate) async fn timed<T, F>(f: F) -> Result<T, MirrorError>
where
    F: std::future::Future<Output = Result<T, MirrorError>>,
{
    tokio::time::timeout(CALL_TIMEOUT, f)
        .await
        .map_err(|_| MirrorError::Timeout(CALL_TIMEOUT))?
}

/// The cluster behind a mirrored run directory: what the pages ask it for while they serve (a
/// transcript on demand) and what the last poll brought that the mirror does not store (the ledger's
/// sums, whether the coordinator answered).
pub struct Remote {
    pub(crate) api: Sweeps,
    /// Each sweep's ledger summed, as the last `ListSweeps` sent it.
    pub(crate) totals: RwLock<HashMap<String, Vec<TotalsRow>>>,
    /// Whether the last poll reached the coordinator: a running sweep reads as running now only then.
    pub(crate) reachable: AtomicBool,
}

impl Remote {
    /// The ledger sums of every sweep, as the last poll got them.
    pub fn totals(&self) -> HashMap<String, Vec<TotalsRow>> {
        self.totals.read().map(|t| t.clone()).unwrap_or_default()
    }

    /// Whether the last poll reached the coordinator.
    pub fn reachable(&self) -> bool {
        self.reachable.load(Ordering::Relaxed)
    }

    /// Fetches game `game`'s transcript into `dir/transcript.jsonl`, which appears only when the
    /// last piece is in ([`TranscriptSink`]: a reader never sees half of it, and two requests for the
    /// same game write separate temporary files). `false` when the game has no transcript yet.
    pub async fn fetch_transcript(&self, game: &str, dir: &Path) -> Result<bool, MirrorError> {
        let mut api = self.api.clone();
        let game_id = game.to_string();
        let dir = dir.to_path_buf();
        let to = dir.join(TRANSCRIPT_FILE);
        timed(async move {
            let mut stream = api
                .transcript(pb::TranscriptRequest {
                    game_id: game_id.clone(),
                })
                .await?
                .into_inner();
            let mut sink = TranscriptSink::new(&game_id, &to);
            let mut total = 0u64;
            while let Some(chunk) = stream.message().await? {
                total += chunk.data.len() as u64;
                if total > MAX_TRANSCRIPT_BYTES {
                    return Err(MirrorError::Bad(format!(
                        "a transcript of game {game_id} over {MAX_TRANSCRIPT_BYTES} bytes"
                    )));
                }
                sink.write(&chunk)?;
            }
            Ok(sink.finish()?)
        })
        .await
    }
}
