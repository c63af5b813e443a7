//! The worker protocol: a worker registers (under its old name when the coordinator forgot it, so the
//! queue entries it holds stay its own), sends heartbeats (its load, and back the sweeps cancelled
//! since) and reports its games' events, which the coordinator logs.

use tonic::{Request, Response, Status};

use super::{now_ms, WorkerRecord, WorkersService};
use crate::models as declared;
use crate::proto as pb;
use crate::proto::workers_server::Workers;

#[tonic::async_trait]
impl Workers for WorkersService {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        let s = &self.0;
        let req = request.into_inner();
        // A worker the coordinator forgot registers again under its old name, so the entries it
        // holds in the queue stay its own.
        let id = if req.worker_id.is_empty() {
            format!("{}-{}-{:04x}", req.host, req.pid, rand::random::<u16>())
        } else {
            req.worker_id.clone()
        };
        let now = now_ms();
        s.put_worker(
            &id,
            &WorkerRecord {
                host: req.host,
                pid: req.pid,
                capacity: req.capacity,
                in_flight: 0,
                games_done: 0,
                metrics_addr: req.metrics_addr,
                registered_ms: now,
                last_ms: now,
                models: req.models.iter().map(declared::from_proto).collect(),
            },
        )
        .await?;
        tracing::info!(worker = %id, capacity = req.capacity, "worker registered");
        Ok(Response::new(pb::RegisterResponse {
            worker_id: id,
            stream: s.queue.stream().to_string(),
            group: "workers".into(),
            heartbeat_ms: s.heartbeat.as_millis() as u64,
            claim_idle_ms: s.claim_idle.as_millis() as u64,
            namespace: s.namespace.clone(),
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatResponse>, Status> {
        let s = &self.0;
        let req = request.into_inner();
        let Some(mut r) = s.worker(&req.worker_id).await? else {
            return Ok(Response::new(pb::HeartbeatResponse {
                cancelled_sweeps: Vec::new(),
                known: false,
            }));
        };
        r.in_flight = req.in_flight;
        r.games_done = req.games_done;
        r.last_ms = now_ms();
        s.put_worker(&req.worker_id, &r).await?;
        let cancelled_sweeps = s.cancelled.read().map(|c| c.clone()).unwrap_or_default();
        Ok(Response::new(pb::HeartbeatResponse {
            cancelled_sweeps,
            known: true,
        }))
    }

    async fn report(
        &self,
        request: Request<pb::ReportRequest>,
    ) -> Result<Response<pb::ReportResponse>, Status> {
        let req = request.into_inner();
        for e in req.events {
            tracing::info!(
                worker = %req.worker_id,
                sweep = %e.sweep_id,
                game = %e.game_id,
                kind = %e.kind,
                reason = %e.reason,
                stage = %e.stage,
                "game event"
            );
        }
        Ok(Response::new(pb::ReportResponse {}))
    }
}
