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
use sleuth_report::load::TRANSCRIPT_FILE;
use sleuth_store::{StoreError, TotalsRow};

/// How long one call to the coordinator may take before the mirror gives up on it (a `Results` of
/// a large sweep streams for a while: it has this long in all).
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
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

    /// Fetches game `game`'s transcript into `dir/transcript.jsonl` (written to a file of its own
    /// and renamed when the last piece is in, so a reader never sees half of it and two requests for
    /// the same game do not mix their pieces). `false` when the game has no transcript yet.
    pub async fn fetch_transcript(&self, game: &str, dir: &Path) -> Result<bool, MirrorError> {
        let mut api = self.api.clone();
        let game_id = game.to_string();
        let dir = dir.to_path_buf();
        timed(async move {
            let mut stream = api
                .transcript(pb::TranscriptRequest {
                    game_id: game_id.clone(),
                })
                .await?
                .into_inner();
            let part = dir.join(format!(
                "{TRANSCRIPT_FILE}.part-{:016x}",
                rand::random::<u64>()
            ));
            let mut file: Option<tokio::fs::File> = None;
            let mut finished = false;
            let written = async {
                use tokio::io::AsyncWriteExt;
                while let Some(chunk) = stream.message().await? {
                    if chunk.game_id != game_id || finished {
                        return Err(MirrorError::Bad(format!(
                            "a transcript piece of game {:?} while sending {game_id}'s",
                            chunk.game_id
                        )));
                    }
                    if file.is_none() {
                        tokio::fs::create_dir_all(&dir).await.map_err(io(&dir))?;
                        file = Some(tokio::fs::File::create(&part).await.map_err(io(&part))?);
                    }
                    if let Some(f) = file.as_mut() {
                        f.write_all(&chunk.data).await.map_err(io(&part))?;
                    }
                    finished = chunk.last;
                }
                if let Some(f) = file.as_mut() {
                    f.flush().await.map_err(io(&part))?;
                }
                Ok::<(), MirrorError>(())
            }
            .await;
            // Closed before it is renamed or removed.
            let had_file = file.take().is_some();
            let outcome = match (written, had_file, finished) {
                (Err(e), _, _) => Err(e),
                (Ok(()), false, _) => Ok(false),
                (Ok(()), true, false) => Err(MirrorError::Bad(format!(
                    "game {game_id}'s transcript cut short"
                ))),
                (Ok(()), true, true) => {
                    let to = dir.join(TRANSCRIPT_FILE);
                    tokio::fs::rename(&part, &to).await.map_err(io(&to))?;
                    Ok(true)
                }
            };
            if had_file && !matches!(outcome, Ok(true)) {
                let _ = tokio::fs::remove_file(&part).await;
            }
            outcome
        })
        .await
    }
}
