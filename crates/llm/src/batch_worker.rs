//! The batch worker: one task per run that turns queued lines into batches, follows them at the
//! provider, and lands their answers (see the module documentation of `llm::batch`).
//!
//! Each round, in order: batches a killed run left `submitting` are found at the provider (by the
//! `sleuth_batch` metadata) or sent again; routes whose queue is due are flushed into files within
//! the provider's limits; open batches are polled (every `poll_every`); games whose calls are all
//! back are announced. Provider errors are logged and tried again next round — a batch has 24
//! hours, a round a few seconds.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::batch::journal::{now_secs, BatchRow, Line};
use crate::batch::{BatchError, BatchQueue, LineMeta};
use crate::gateway::{Budget, CallScope, Route, Router, Spent, StoredChat};
use crate::pricing::Pricing;
use crate::provider::batch::{self as api, LineOutcome, RemoteBatch, BATCH_TAG};
use crate::types::{CallTags, Phase, TokenUsage};
use sleuth_base::shutdown::Shutdown;
use sleuth_base::telemetry as tm;
use sleuth_store::{CacheKind, CallSource, Store};

/// What the worker needs besides the queue.
pub struct WorkerParts {
    pub router: Router,
    pub pricing: Pricing,
    pub store: Arc<dyn Store>,
    pub budget: Option<Arc<Budget>>,
}

/// The running worker, owned by the run that started it.
pub struct BatchWorker {
    task: JoinHandle<()>,
    stop: Shutdown,
}

impl BatchWorker {
    /// Lets the worker finish the round it is in (a batch being written or sent is recorded in the
    /// journal first) and waits for it: what it did not get to, the next run picks up from the
    /// journal.
    pub async fn stop(self) {
        self.stop.drain();
        if let Err(e) = self.task.await {
            tracing::warn!(error = %e, "batch worker ended abnormally");
        }
    }
}

/// Starts the worker; it runs until [`BatchWorker::stop`].
pub fn spawn_worker(queue: Arc<BatchQueue>, parts: WorkerParts) -> BatchWorker {
    let stop = Shutdown::new();
    let w = Worker {
        queue,
        parts,
        last_poll: None,
        seq: AtomicU64::new(0),
    };
    let task = tokio::spawn(w.run(stop.clone()));
    BatchWorker { task, stop }
}

struct Worker {
    queue: Arc<BatchQueue>,
    parts: WorkerParts,
    last_poll: Option<Instant>,
    seq: AtomicU64,
}

impl Worker {
    async fn run(mut self, stop: Shutdown) {
        let s = self.queue.settings().clone();
        let tick = s
            .poll_every
            .min(s.flush_after)
            .max(Duration::from_millis(20))
            .min(Duration::from_secs(5));
        loop {
            if let Err(e) = self.round().await {
                tracing::warn!(error = %e, "batch worker: round failed; trying again");
            }
            tokio::select! {
                _ = self.queue.wake.notified() => {}
                _ = tokio::time::sleep(tick) => {}
                _ = stop.draining() => return,
            }
        }
    }

    async fn round(&mut self) -> Result<(), BatchError> {
        let journal = self.queue.journal().clone();
        let open = journal.open_batches().await?;
        if open.iter().any(|b| b.state == "submitting") {
            self.reconcile(&open).await?;
        }
        self.flush_due().await?;
        let s = self.queue.settings();
        if self.last_poll.is_none_or(|t| t.elapsed() >= s.poll_every) {
            self.last_poll = Some(Instant::now());
            for b in journal.open_batches().await? {
                if b.state == "submitted" {
                    if let Err(e) = self.poll(&b).await {
                        tracing::warn!(batch = %b.id, error = %e, "batch worker: poll failed");
                    }
                }
            }
        }
        let counts = journal.counts().await?;
        metrics::gauge!(tm::BATCH_WAITING_GAMES).set(counts.waiting_games as f64);
        metrics::gauge!(tm::BATCH_OPEN).set(counts.open_batches as f64);
        for game in journal.ready_games().await? {
            let _ = self.queue.ready.send(game);
        }
        Ok(())
    }

    fn route_of(&self, model: &str) -> Option<Arc<Route>> {
        self.parts.router.route(model).cloned()
    }

    /// Batches recorded but never heard of as created: adopted when the provider has them, sent
    /// again when it does not.
    async fn reconcile(&self, open: &[BatchRow]) -> Result<(), BatchError> {
        let mut listed: HashMap<String, Vec<RemoteBatch>> = HashMap::new();
        for b in open.iter().filter(|b| b.state == "submitting") {
            let Some(route) = self.route_of(&b.model) else {
                continue;
            };
            let Some(api) = route.provider.batch_api() else {
                continue;
            };
            if !listed.contains_key(&b.route) {
                match api.list().await {
                    Ok(l) => {
                        listed.insert(b.route.clone(), l);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "batch worker: cannot list batches");
                        continue;
                    }
                }
            }
            let found = listed[&b.route]
                .iter()
                .find(|r| r.metadata.get(BATCH_TAG) == Some(&b.id))
                .cloned();
            let journal = self.queue.journal();
            match found {
                Some(r) => {
                    tracing::info!(batch = %b.id, remote = %r.id, "batch worker: found a batch submitted by an earlier run");
                    journal
                        .submitted(b.id.clone(), r.id.clone(), String::new(), r.status.clone())
                        .await?;
                }
                None => {
                    let lines = journal.lines_of(b.id.clone()).await?;
                    self.send(b, &lines, &*api).await;
                }
            }
        }
        Ok(())
    }

    /// Flushes every route whose queue is due.
    async fn flush_due(&self) -> Result<(), BatchError> {
        let s = self.queue.settings().clone();
        let idle = self.queue.is_idle();
        let now = now_secs();
        for (route_id, count, oldest) in self.queue.journal().queued_by_route().await? {
            let due = idle
                || count as usize >= s.flush_calls
                || now - oldest >= s.flush_after.as_secs_f64();
            if !due {
                continue;
            }
            let lines = self.queue.journal().queued_lines(route_id.clone()).await?;
            let Some(first) = lines.first() else { continue };
            let Some(route) = self.route_of(&first.model) else {
                tracing::warn!(model = %first.model, "batch worker: no route for a queued line's model");
                continue;
            };
            let Some(api) = route.provider.batch_api() else {
                continue;
            };
            for chunk in split(&lines, s.max_file_requests, s.max_file_bytes) {
                if !self.fits_budget(chunk) {
                    tracing::warn!(lines = chunk.len(), "batch worker: the budget has no room for this batch; its lines stay queued");
                    return Ok(());
                }
                let id = format!(
                    "sb-{}-{}",
                    chrono::Utc::now().format("%Y%m%dT%H%M%S%3f"),
                    self.seq.fetch_add(1, Ordering::Relaxed)
                );
                let row = BatchRow {
                    id,
                    route: route_id.clone(),
                    model: first.model.clone(),
                    remote: None,
                    state: "submitting".into(),
                    status: None,
                    lines: chunk.len() as u64,
                };
                let keys = chunk.iter().map(|l| l.key.clone()).collect();
                self.queue.journal().begin_batch(row.clone(), keys).await?;
                self.send(&row, chunk, &*api).await;
            }
        }
        Ok(())
    }

    /// Whether a batch of `lines` fits the budget at the batch price (its prompts counted by their
    /// bytes, its replies at their `max_tokens`): refused, the budget is marked exhausted.
    fn fits_budget(&self, lines: &[Line]) -> bool {
        let Some(budget) = &self.parts.budget else {
            return true;
        };
        let mut est = Spent::default();
        for l in lines {
            let max_tokens = serde_json::from_str::<LineMeta>(&l.meta).map_or(0, |m| m.max_tokens);
            let tokens = TokenUsage {
                prompt_tokens: l.body.len() as u64,
                completion_tokens: u64::from(max_tokens),
                cached_tokens: 0,
            };
            est.usd += self.parts.pricing.batch_cost(&l.model, &tokens);
            est.tokens += tokens.prompt_tokens + tokens.completion_tokens;
        }
        // Only a check: the batch's real cost is charged when it lands.
        budget.try_reserve(est).is_ok()
    }

    /// Uploads a batch's file and creates it; on failure it stays `submitting` and the next round
    /// looks for it and sends it again.
    async fn send(&self, row: &BatchRow, lines: &[Line], api: &dyn api::BatchEndpoint) {
        let mut file = String::new();
        for l in lines {
            file.push_str(&api::input_line(&l.key, &l.body));
            file.push('\n');
        }
        let name = format!("{}.jsonl", row.id);
        let sent = async {
            let input = api.upload(name, file.into_bytes()).await?;
            let meta = BTreeMap::from([(BATCH_TAG.to_string(), row.id.clone())]);
            let remote = api.create(&input, meta).await?;
            Ok::<_, crate::provider::ProviderError>((input, remote))
        }
        .await;
        match sent {
            Ok((input, remote)) => {
                tracing::info!(batch = %row.id, remote = %remote.id, lines = lines.len(), model = %row.model, "batch submitted");
                metrics::counter!(tm::BATCHES_SUBMITTED, "model" => row.model.clone()).increment(1);
                if let Err(e) = self
                    .queue
                    .journal()
                    .submitted(row.id.clone(), remote.id, input, remote.status)
                    .await
                {
                    tracing::warn!(batch = %row.id, error = %e, "batch worker: cannot record a submitted batch; the next round finds it by its metadata");
                }
            }
            Err(e) => {
                tracing::warn!(batch = %row.id, error = %e, "batch worker: cannot submit; trying again next round")
            }
        }
    }

    /// Asks the provider about one batch and lands it when it is over.
    async fn poll(&self, b: &BatchRow) -> Result<(), String> {
        let route = self
            .route_of(&b.model)
            .ok_or_else(|| format!("no route for model {}", b.model))?;
        let api = route
            .provider
            .batch_api()
            .ok_or_else(|| "the route has no batch interface".to_string())?;
        let remote_id = b.remote.clone().ok_or("no remote id")?;
        let remote = api.retrieve(&remote_id).await.map_err(|e| e.to_string())?;
        if b.status.as_deref() != Some(remote.status.as_str()) {
            self.queue
                .journal()
                .set_status(b.id.clone(), remote.status.clone())
                .await
                .map_err(|e| e.to_string())?;
        }
        if !remote.is_over() {
            return Ok(());
        }
        let mut outcomes: HashMap<String, LineOutcome> = HashMap::new();
        for file in [&remote.output_file_id, &remote.error_file_id]
            .into_iter()
            .flatten()
        {
            let bytes = api.content(file).await.map_err(|e| e.to_string())?;
            let (lines, unreadable) = api::read_output(&bytes);
            if unreadable > 0 {
                tracing::warn!(batch = %b.id, unreadable, "batch worker: unreadable lines in a result file");
            }
            outcomes.extend(lines);
        }
        self.land(b, &route, &remote, outcomes)
            .await
            .map_err(|e| e.to_string())
    }

    /// Every line of an ended batch: its answer into the cache and ledger, or its failure noted.
    async fn land(
        &self,
        b: &BatchRow,
        route: &Route,
        remote: &RemoteBatch,
        mut outcomes: HashMap<String, LineOutcome>,
    ) -> Result<(), BatchError> {
        let journal = self.queue.journal();
        let mut answered = 0u64;
        let mut failed = 0u64;
        for line in journal.lines_of(b.id.clone()).await? {
            let outcome = outcomes.remove(&line.key).unwrap_or_else(|| {
                LineOutcome::Failed(match &remote.errors {
                    Some(e) => format!("batch {}: {e}", remote.status),
                    None => format!("batch {} without an answer to this request", remote.status),
                })
            });
            let landed = match outcome {
                LineOutcome::Answer(body) => self.store_answer(&line, route, body).await,
                LineOutcome::Failed(reason) => Err(reason),
            };
            match landed {
                Ok(()) => {
                    journal.answered(line.key.clone()).await?;
                    answered += 1;
                }
                Err(reason) => {
                    journal.failed(line.key.clone(), reason).await?;
                    failed += 1;
                }
            }
        }
        metrics::counter!(tm::BATCH_LINES, "model" => b.model.clone(), "outcome" => "answered")
            .increment(answered);
        metrics::counter!(tm::BATCH_LINES, "model" => b.model.clone(), "outcome" => "failed")
            .increment(failed);
        tracing::info!(batch = %b.id, status = %remote.status, answered, failed, "batch landed");
        journal.end_batch(b.id.clone(), remote.status.clone()).await
    }

    /// One answer into the cache with its ledger entry at the batch price (`Err` with a reason when
    /// the answer cannot be read: the line then counts as failed).
    async fn store_answer(
        &self,
        line: &Line,
        route: &Route,
        body: serde_json::Value,
    ) -> Result<(), String> {
        let meta: LineMeta =
            serde_json::from_str(&line.meta).map_err(|e| format!("unreadable line meta: {e}"))?;
        let key: [u8; 32] = hex::decode(&line.key)
            .ok()
            .and_then(|k| k.try_into().ok())
            .ok_or("a line's key is not a cache key")?;
        let store = &self.parts.store;
        // Already cached while the line is still marked submitted: an earlier landing of this very
        // batch stored it (and its ledger entry) and died before marking it. Once is enough.
        if matches!(store.cache_get(&key).await, Ok(Some(_))) {
            return Ok(());
        }
        let resp = route
            .provider
            .batch_reply(meta.max_tokens, body)
            .map_err(|e| format!("unreadable answer: {e}"))?;
        let tokens = resp.usage.unwrap_or_else(|| TokenUsage {
            prompt_tokens: 0,
            completion_tokens: crate::tokens::count(&resp.content),
            cached_tokens: 0,
        });
        let cost = self.parts.pricing.batch_cost(&line.model, &tokens);
        let tags = CallTags {
            game: meta.game.clone(),
            agent: meta.agent.clone(),
            framework: meta.framework.clone(),
            phase: Phase::Evaluation,
            purpose: meta.purpose.clone(),
        };
        let scope = CallScope {
            sweep: meta.sweep.clone(),
            run: meta.run.clone(),
            arm: meta.arm.clone(),
        };
        let entry = scope.entry(
            &tags,
            &line.model,
            CallSource::Batch,
            tokens,
            cost,
            Some(&key),
        );
        let stored = StoredChat {
            content: resp.content,
            usage: tokens,
            logprobs: resp.logprobs,
            latency_ms: None,
        };
        store
            .cache_put(
                &key,
                CacheKind::Chat,
                &line.model,
                &stored.encode(),
                &[entry],
            )
            .await
            .map_err(|e| format!("store: {e}"))?;
        if let Some(b) = &self.parts.budget {
            b.charge(Spent {
                usd: cost,
                tokens: tokens.prompt_tokens + tokens.completion_tokens,
            });
        }
        crate::gateway::count_batch_answer(&line.model, &tags, &scope, tokens, cost);
        Ok(())
    }
}

/// `lines` cut into files of at most `max_requests` lines and about `max_bytes` bytes.
fn split(lines: &[Line], max_requests: usize, max_bytes: usize) -> Vec<&[Line]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, l) in lines.iter().enumerate() {
        // The body, the key twice over and the line's framing.
        let size = l.body.len() + l.key.len() + 80;
        if i > start && (i - start >= max_requests.max(1) || bytes + size > max_bytes) {
            out.push(&lines[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += size;
    }
    if start < lines.len() {
        out.push(&lines[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures::future::BoxFuture;

    use super::*;
    use crate::batch::{BatchEndpoint, BatchQueue, BatchSettings, LineState};
    use crate::provider::{EmbedResponse, Provider, ProviderError};
    use crate::types::{ChatRequest, ChatResponse};

    /// A provider's batch interface that remembers what it was asked.
    #[derive(Default)]
    struct Fake {
        creates: Mutex<u32>,
        batches: Mutex<Vec<RemoteBatch>>,
    }

    impl BatchEndpoint for Fake {
        fn upload<'a>(
            &'a self,
            _: String,
            _: Vec<u8>,
        ) -> BoxFuture<'a, Result<String, ProviderError>> {
            Box::pin(async { Ok("file-1".to_string()) })
        }
        fn create<'a>(
            &'a self,
            _: &'a str,
            metadata: BTreeMap<String, String>,
        ) -> BoxFuture<'a, Result<RemoteBatch, ProviderError>> {
            Box::pin(async move {
                let mut n = self.creates.lock().expect("lock");
                *n += 1;
                let b = RemoteBatch {
                    id: format!("remote-{n}"),
                    status: "in_progress".into(),
                    metadata,
                    ..RemoteBatch::default()
                };
                self.batches.lock().expect("lock").push(b.clone());
                Ok(b)
            })
        }
        fn retrieve<'a>(
            &'a self,
            id: &'a str,
        ) -> BoxFuture<'a, Result<RemoteBatch, ProviderError>> {
            Box::pin(async move {
                let found = self
                    .batches
                    .lock()
                    .expect("lock")
                    .iter()
                    .find(|b| b.id == id)
                    .cloned();
                found.ok_or_else(|| ProviderError::Decode("no such batch".into()))
            })
        }
        fn list(&self) -> BoxFuture<'_, Result<Vec<RemoteBatch>, ProviderError>> {
            Box::pin(async { Ok(self.batches.lock().expect("lock").clone()) })
        }
        fn content<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<u8>, ProviderError>> {
            Box::pin(async { Ok(Vec::new()) })
        }
    }

    struct FakeProvider(Arc<Fake>);

    impl Provider for FakeProvider {
        fn name(&self) -> &'static str {
            "openai"
        }
        fn chat<'a>(
            &'a self,
            _: &'a ChatRequest,
        ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
            Box::pin(async { Err(ProviderError::Decode("not live".into())) })
        }
        fn embed<'a>(
            &'a self,
            _: &'a str,
            _: &'a [String],
        ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>> {
            Box::pin(async { Err(ProviderError::Decode("not live".into())) })
        }
        fn batch_api(&self) -> Option<Arc<dyn BatchEndpoint>> {
            Some(self.0.clone())
        }
    }

    /// A journal with one line in a batch recorded as `submitting` — what a run killed between
    /// creating the batch and learning its id leaves — and a worker over `fake`.
    async fn killed_while_submitting(fake: Arc<Fake>, dir: &std::path::Path) -> (Worker, BatchRow) {
        let (queue, _ready) =
            BatchQueue::open(&dir.join("b.db"), BatchSettings::default()).expect("journal");
        let j = queue.journal();
        let line = Line {
            key: "ab".repeat(32),
            route: "openai||m".into(),
            model: "m".into(),
            body: "{}".into(),
            meta: "{}".into(),
            state: LineState::Queued,
            batch: None,
            attempts: 0,
        };
        j.enqueue(line.clone(), "g".into()).await.expect("enqueue");
        let row = BatchRow {
            id: "sb-1".into(),
            route: line.route.clone(),
            model: "m".into(),
            remote: None,
            state: "submitting".into(),
            status: None,
            lines: 1,
        };
        j.begin_batch(row.clone(), vec![line.key.clone()])
            .await
            .expect("begin");
        let mut router = Router::default();
        router.add(
            "m",
            Route::new(Arc::new(FakeProvider(fake)), Some("http://x/v1")),
        );
        let store: Arc<dyn Store> =
            Arc::new(sleuth_store::SqliteStore::open(&dir.join("s.db")).expect("store"));
        let worker = Worker {
            queue,
            parts: WorkerParts {
                router,
                pricing: Pricing::default(),
                store,
                budget: None,
            },
            last_poll: None,
            seq: AtomicU64::new(0),
        };
        (worker, row)
    }

    #[tokio::test]
    async fn a_batch_the_provider_has_is_adopted_not_sent_again() {
        let dir = tempfile::tempdir().expect("dir");
        let fake = Arc::new(Fake::default());
        // The provider got it before the kill.
        fake.batches.lock().expect("lock").push(RemoteBatch {
            id: "remote-0".into(),
            status: "in_progress".into(),
            metadata: BTreeMap::from([(BATCH_TAG.to_string(), "sb-1".to_string())]),
            ..RemoteBatch::default()
        });
        let (mut w, _) = killed_while_submitting(fake.clone(), dir.path()).await;
        w.round().await.expect("round");
        assert_eq!(*fake.creates.lock().expect("lock"), 0, "not created again");
        let open = w.queue.journal().open_batches().await.expect("open");
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].state, "submitted");
        assert_eq!(open[0].remote.as_deref(), Some("remote-0"));
    }

    #[tokio::test]
    async fn a_batch_the_provider_never_got_is_sent_once() {
        let dir = tempfile::tempdir().expect("dir");
        let fake = Arc::new(Fake::default());
        let (mut w, _) = killed_while_submitting(fake.clone(), dir.path()).await;
        w.round().await.expect("round");
        w.round().await.expect("round");
        assert_eq!(*fake.creates.lock().expect("lock"), 1);
        let open = w.queue.journal().open_batches().await.expect("open");
        assert_eq!(open[0].remote.as_deref(), Some("remote-1"));
        // The game still waits: its line is in the batch, not answered.
        assert!(w.queue.journal().waits("g".into()).await.expect("waits"));
        assert!(w
            .queue
            .journal()
            .ready_games()
            .await
            .expect("ready")
            .is_empty());
    }

    fn line(i: usize, body: usize) -> Line {
        Line {
            key: format!("{i:064}"),
            route: "r".into(),
            model: "m".into(),
            body: "x".repeat(body),
            meta: "{}".into(),
            state: LineState::Queued,
            batch: None,
            attempts: 0,
        }
    }

    #[test]
    fn files_are_split_by_requests_and_by_bytes() {
        let lines: Vec<Line> = (0..10).map(|i| line(i, 100)).collect();
        let by_count: Vec<usize> = split(&lines, 4, usize::MAX)
            .iter()
            .map(|c| c.len())
            .collect();
        assert_eq!(by_count, vec![4, 4, 2]);
        // 244 bytes a line: three fit in 800.
        let by_bytes: Vec<usize> = split(&lines, 100, 800).iter().map(|c| c.len()).collect();
        assert_eq!(by_bytes, vec![3, 3, 3, 1]);
        // A line larger than the limit still goes, alone.
        let big = vec![line(0, 5_000), line(1, 10)];
        assert_eq!(split(&big, 100, 800).len(), 2);
    }
}
