//! The calls that read a sweep back: `Results` (every game with its result and, when asked, its
//! transcript), `ListSweeps` (every sweep with its record, progress and ledger sums) and `Transcript`
//! (one game's transcript). They only read the store, so they are kept apart from the calls that
//! change the cluster.

use tonic::{Response, Status};

use super::{store_status, ChunkStream, RedisHandles, ResultStream};
use crate::proto as pb;
use crate::TRANSCRIPT_CHUNK;
use sleuth_store::{GameState, Store, SweepRecord, TotalsRow};

/// A transcript as the messages that carry it: pieces of at most [`TRANSCRIPT_CHUNK`] bytes, the
/// last one marked. `Results` and `Transcript` both send it so: a transcript is as long as its game,
/// never one message.
fn transcript_chunks(game_id: &str, text: String) -> impl Iterator<Item = pb::TranscriptChunk> {
    let bytes = text.into_bytes();
    let pieces = bytes.len().div_ceil(TRANSCRIPT_CHUNK);
    let game_id = game_id.to_string();
    (0..pieces).map(move |i| {
        let end = ((i + 1) * TRANSCRIPT_CHUNK).min(bytes.len());
        pb::TranscriptChunk {
            game_id: game_id.clone(),
            data: bytes[i * TRANSCRIPT_CHUNK..end].to_vec(),
            last: i + 1 == pieces,
        }
    })
}

/// A sweep's record, progress and ledger sums as `ListSweeps` sends them.
fn sweep_summary(r: SweepRecord, progress: pb::Progress, rows: Vec<TotalsRow>) -> pb::SweepSummary {
    pb::SweepSummary {
        status: r.status.as_str().to_string(),
        id: r.id,
        name: r.name,
        file: r.file,
        text: r.text,
        created_at: r.created_at,
        note: r.note.unwrap_or_default(),
        max_usd: r.max_usd,
        max_tokens: r.max_tokens,
        progress: Some(progress),
        totals: rows
            .into_iter()
            .map(|t| pb::LedgerSums {
                model: t.model,
                phase: t.phase,
                framework: t.framework,
                arm: t.arm,
                source: t.source,
                calls: t.calls,
                prompt_tokens: t.prompt_tokens,
                completion_tokens: t.completion_tokens,
                cached_tokens: t.cached_tokens,
                cost_usd: t.cost_usd,
            })
            .collect(),
    }
}

/// `Results`: the sweep's games (or the ones `req` names), each with its result unless asked
/// without, then its transcript in pieces when asked; streamed one game at a time.
pub(super) async fn results(
    s: RedisHandles,
    req: pb::ResultsRequest,
) -> Result<Response<ResultStream>, Status> {
    if s.store
        .sweep(&req.sweep_id)
        .await
        .map_err(store_status)?
        .is_none()
    {
        return Err(Status::not_found(format!(
            "no sweep named `{}`",
            req.sweep_id
        )));
    }
    let games = if req.game_ids.is_empty() {
        s.store.games(&req.sweep_id).await.map_err(store_status)?
    } else {
        let mut games = Vec::with_capacity(req.game_ids.len());
        for id in &req.game_ids {
            if let Some(g) = s.store.game(id).await.map_err(store_status)? {
                if g.sweep == req.sweep_id {
                    games.push(g);
                }
            }
        }
        games
    };
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tokio::spawn(async move {
        let send = |part: pb::results_part::Part| {
            let tx = tx.clone();
            async move {
                tx.send(Ok(pb::ResultsPart { part: Some(part) }))
                    .await
                    .is_ok()
            }
        };
        for g in games {
            let mut out = pb::GameResult {
                game_id: g.id.clone(),
                arm: g.arm,
                arm_label: g.arm_label,
                script: g.script,
                repeat: g.repeat,
                state: g.state.as_str().to_string(),
                result_json: String::new(),
                reason: g.reason.unwrap_or_default(),
                stage: g.stage.unwrap_or_default(),
                attempts: g.attempts,
                seed: g.seed,
            };
            let mut transcript = None;
            if g.state == GameState::Done && !req.without_results {
                match s.store.result(&g.id).await {
                    Ok(r) => out.result_json = r.unwrap_or_default(),
                    Err(e) => {
                        let _ = tx.send(Err(store_status(e))).await;
                        return;
                    }
                }
                if req.transcripts {
                    match s.store.transcript(&g.id).await {
                        Ok(t) => transcript = t.filter(|t| !t.is_empty()),
                        Err(e) => {
                            let _ = tx.send(Err(store_status(e))).await;
                            return;
                        }
                    }
                }
            }
            if !send(pb::results_part::Part::Game(out)).await {
                return;
            }
            // A transcript is as long as its game: it goes in pieces, never in one message.
            if let Some(t) = transcript {
                for chunk in transcript_chunks(&g.id, t) {
                    if !send(pb::results_part::Part::Transcript(chunk)).await {
                        return;
                    }
                }
            }
        }
    });
    Ok(Response::new(Box::pin(
        tokio_stream::wrappers::ReceiverStream::new(rx),
    )))
}

/// `ListSweeps`: every sweep with its record, its progress and its ledger summed.
pub(super) async fn list_sweeps(s: &RedisHandles) -> Result<pb::ListSweepsResponse, Status> {
    let records = s.store.sweeps().await.map_err(store_status)?;
    let mut sweeps = Vec::with_capacity(records.len());
    for r in records {
        let (progress, rows) = s.progress_of(&r).await?;
        sweeps.push(sweep_summary(r, progress, rows));
    }
    Ok(pb::ListSweepsResponse { sweeps })
}

/// `Transcript`: one game's transcript in pieces (none for a game that has none yet).
pub(super) async fn transcript(
    s: &RedisHandles,
    game: String,
) -> Result<Response<ChunkStream>, Status> {
    if s.store.game(&game).await.map_err(store_status)?.is_none() {
        return Err(Status::not_found(format!("no game `{game}`")));
    }
    let text = s.store.transcript(&game).await.map_err(store_status)?;
    // No transcript yet (a game that is not done): a stream without a piece.
    let chunks = transcript_chunks(&game, text.unwrap_or_default()).map(Ok);
    Ok(Response::new(Box::pin(tokio_stream::iter(chunks))))
}
