//! The local scheduler: plays a run's games, up to a number in flight, and decides what each
//! outcome means for the sweep.
//!
//! One actor, its mailbox the only place the queue changes. Each game plays in its own task (under
//! its own actor tree, `game::play`) and reports back with [`SchedulerMsg::Finished`]; the scheduler
//! then starts the next. What it decides:
//!
//! - a game whose actors **crashed** is played again once (it replays from the cache at no cost up to
//!   where it crashed); a second crash fails it;
//! - a game whose calls failed after their retries (or that failed otherwise) is **failed**, with its
//!   reason and stage, and the sweep goes on;
//! - a game stopped by the **budget** is interrupted, and the scheduler starts no new game from the
//!   moment the budget is exhausted; games in flight go on until their own calls are refused;
//! - **Ctrl-C** ([`SchedulerMsg::Stop`]): the first stops new games and lets those in flight finish;
//!   the second marks those in flight interrupted at once, and the run ends;
//! - a game whose evaluation **waits on a batch** (`llm::batch`) leaves its slot to the next game
//!   and is remembered by index only; when the batch worker says its calls are back
//!   ([`SchedulerMsg::Ready`]) it goes to the front of the queue and replays from the cache. The run
//!   ends when nothing is queued, playing or waiting; while no game plays, the batch queue is told
//!   it is idle, so what is queued goes out at once.
//!
//! Every state change is written to the store by the game's task or here, before the next decision
//! relies on it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::{oneshot, watch};

use sleuth_store::{GameState, Store};

/// How a game ended, as the game's task saw it.
#[derive(Debug, Clone, PartialEq)]
pub enum GameOutcome {
    /// Its result is written.
    Done,
    /// Given up on.
    Failed {
        reason: String,
        stage: Option<String>,
    },
    /// Its evaluation waits on a batch: no result yet, nothing wrong.
    Waiting,
    /// Its actors crashed.
    Crashed {
        reason: String,
        stage: Option<String>,
    },
    /// Stopped before the end (the budget); the next run continues it.
    Interrupted {
        reason: String,
        stage: Option<String>,
    },
    /// The store could not record the game (its state or its result): nothing the game did is
    /// wrong, so a cluster worker plays it again once the store answers (a Redis restart), while a
    /// node — whose SQLite file fails only for lasting reasons, a full disk — gives up on it.
    Unrecorded { reason: String },
}

/// Plays one game of the plan (by index) to an outcome, writing its state as it goes.
pub trait GamePlayer: Send + Sync + 'static {
    fn play(&self, game: usize) -> BoxFuture<'static, GameOutcome>;
    /// The game's id in the store.
    fn id(&self, game: usize) -> &str;
}

/// Why the scheduler stops starting games.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The user asked (Ctrl-C).
    User,
    /// The budget is exhausted.
    Budget,
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// Every queued game was played to an end (done or failed).
    Finished,
    /// Stopped before the queue was empty.
    Stopped(StopReason),
}

/// Live counters of the run, read by the progress display.
#[derive(Debug, Default)]
pub struct Counters {
    pub queued: AtomicU64,
    pub in_flight: AtomicU64,
    pub done: AtomicU64,
    pub failed: AtomicU64,
    pub interrupted: AtomicU64,
    pub crashes: AtomicU64,
    /// Games waiting on a batch now.
    pub waiting: AtomicU64,
}

/// Messages to the scheduler.
pub enum SchedulerMsg {
    /// Start games up to the concurrency.
    Fill,
    /// A game's task ended.
    Finished { game: usize, outcome: GameOutcome },
    /// Stop starting games; with `now`, also give up on those in flight (marked interrupted).
    Stop { reason: StopReason, now: bool },
    /// A waiting game's batch calls are back: play it again.
    Ready { game: usize },
}

/// What the scheduler starts from.
pub struct SchedulerArgs {
    /// Games to play, by plan index, in order.
    pub queue: VecDeque<usize>,
    pub concurrency: usize,
    pub player: Arc<dyn GamePlayer>,
    pub store: Arc<dyn Store>,
    pub counters: Arc<Counters>,
    /// Whether the budget is exhausted: checked before every game starts, so that no game starts
    /// after a call was refused.
    pub budget: Option<watch::Receiver<bool>>,
    /// Told how the run ended, once.
    pub done: oneshot::Sender<RunEnd>,
    /// Games already waiting on a batch when the run starts (a run started over).
    pub waiting: Vec<usize>,
    /// The run's batch queue, told when the run is idle.
    pub batch: Option<Arc<sleuth_llm::batch::BatchQueue>>,
}

/// The scheduler's state.
pub struct SchedulerState {
    args: SchedulerArgs,
    in_flight: std::collections::BTreeSet<usize>,
    waiting: std::collections::BTreeSet<usize>,
    stopping: Option<StopReason>,
    done: Option<oneshot::Sender<RunEnd>>,
}

/// The scheduler actor.
pub struct Scheduler;

impl Actor for Scheduler {
    type Msg = SchedulerMsg;
    type State = SchedulerState;
    type Arguments = SchedulerArgs;

    async fn pre_start(
        &self,
        me: ActorRef<Self::Msg>,
        mut args: SchedulerArgs,
    ) -> Result<SchedulerState, ActorProcessingErr> {
        args.counters
            .queued
            .store(args.queue.len() as u64, Ordering::Relaxed);
        let done = Some(std::mem::replace(&mut args.done, oneshot::channel().0));
        let waiting: std::collections::BTreeSet<usize> =
            std::mem::take(&mut args.waiting).into_iter().collect();
        args.counters
            .waiting
            .store(waiting.len() as u64, Ordering::Relaxed);
        me.send_message(SchedulerMsg::Fill)?;
        Ok(SchedulerState {
            args,
            in_flight: Default::default(),
            waiting,
            stopping: None,
            done,
        })
    }

    async fn handle(
        &self,
        me: ActorRef<Self::Msg>,
        msg: SchedulerMsg,
        st: &mut SchedulerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SchedulerMsg::Fill => fill(&me, st),
            SchedulerMsg::Finished { game, outcome } => {
                st.in_flight.remove(&game);
                st.args.counters.in_flight.fetch_sub(1, Ordering::Relaxed);
                settle(st, game, outcome).await;
                fill(&me, st);
            }
            SchedulerMsg::Stop { reason, now } => {
                if st.stopping.is_none() || now {
                    tracing::info!(?reason, now, "scheduler: starting no new games");
                }
                st.stopping.get_or_insert(reason);
                if now {
                    for &g in &st.in_flight {
                        let id = st.args.player.id(g).to_string();
                        if let Err(e) = st
                            .args
                            .store
                            .set_game_state(
                                &id,
                                GameState::Interrupted,
                                Some("stopped by the user".into()),
                                None,
                            )
                            .await
                        {
                            tracing::warn!(game = %id, error = %e, "could not mark a game interrupted");
                        }
                        st.args.counters.interrupted.fetch_add(1, Ordering::Relaxed);
                    }
                    st.in_flight.clear();
                }
                fill(&me, st);
            }
            SchedulerMsg::Ready { game } => {
                // Ignored unless the game waits: a batch can land while the game that deferred
                // the call is still playing; its own end asks again.
                if st.waiting.remove(&game) {
                    st.args.counters.waiting.fetch_sub(1, Ordering::Relaxed);
                    st.args.queue.push_front(game);
                    st.args.counters.queued.fetch_add(1, Ordering::Relaxed);
                    fill(&me, st);
                }
            }
        }
        if st.done.is_none() {
            me.stop(None);
        }
        Ok(())
    }
}

/// Starts games up to the concurrency, unless stopping; ends the run when nothing is left.
fn fill(me: &ActorRef<SchedulerMsg>, st: &mut SchedulerState) {
    if st.stopping.is_none() && st.args.budget.as_ref().is_some_and(|b| *b.borrow()) {
        tracing::info!("scheduler: the budget is exhausted; starting no new games");
        st.stopping = Some(StopReason::Budget);
    }
    if st.stopping.is_none() {
        while st.in_flight.len() < st.args.concurrency {
            let Some(game) = st.args.queue.pop_front() else {
                break;
            };
            st.in_flight.insert(game);
            st.args.counters.queued.fetch_sub(1, Ordering::Relaxed);
            st.args.counters.in_flight.fetch_add(1, Ordering::Relaxed);
            let player = st.args.player.clone();
            let me = me.clone();
            tokio::spawn(async move {
                let outcome = player.play(game).await;
                let _ = me.send_message(SchedulerMsg::Finished { game, outcome });
            });
        }
    }
    let idle = st.in_flight.is_empty();
    if let Some(b) = &st.args.batch {
        // No game playing and none to start: nothing will add to the batches' queue.
        b.set_idle(idle && (st.args.queue.is_empty() || st.stopping.is_some()));
    }
    let end = match st.stopping {
        Some(reason) if idle => Some(RunEnd::Stopped(reason)),
        None if idle && st.args.queue.is_empty() && st.waiting.is_empty() => Some(RunEnd::Finished),
        _ => None,
    };
    if let Some(end) = end {
        if let Some(done) = st.done.take() {
            let _ = done.send(end);
        }
    }
}

/// What an outcome means: counters, the store, and a second chance for a first crash.
async fn settle(st: &mut SchedulerState, game: usize, outcome: GameOutcome) {
    let c = &st.args.counters;
    let id = st.args.player.id(game).to_string();
    let store = &st.args.store;
    let write = |r: Result<(), sleuth_store::StoreError>| {
        if let Err(e) = r {
            tracing::warn!(game = %id, error = %e, "could not record a game's state");
        }
    };
    match outcome {
        GameOutcome::Done => {
            c.done.fetch_add(1, Ordering::Relaxed);
        }
        GameOutcome::Waiting => {
            write(
                store
                    .set_game_state(
                        &id,
                        GameState::EvaluatingBatch,
                        None,
                        Some("evaluation".into()),
                    )
                    .await,
            );
            st.waiting.insert(game);
            c.waiting.fetch_add(1, Ordering::Relaxed);
            if let Some(b) = &st.args.batch {
                // Its calls may all be back already.
                b.nudge();
            }
        }
        GameOutcome::Unrecorded { reason } => {
            c.failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(game = %id, %reason, "game could not be recorded");
            write(
                store
                    .set_game_state(&id, GameState::Failed, Some(reason), None)
                    .await,
            );
        }
        GameOutcome::Failed { reason, stage } => {
            c.failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(game = %id, %reason, stage = stage.as_deref().unwrap_or("-"), "game failed");
            write(
                store
                    .set_game_state(&id, GameState::Failed, Some(reason), stage)
                    .await,
            );
        }
        GameOutcome::Interrupted { reason, stage } => {
            c.interrupted.fetch_add(1, Ordering::Relaxed);
            write(
                store
                    .set_game_state(&id, GameState::Interrupted, Some(reason), stage)
                    .await,
            );
        }
        GameOutcome::Crashed { reason, stage } => {
            c.crashes.fetch_add(1, Ordering::Relaxed);
            let crashes = store.count_crash(&id).await.unwrap_or(u32::MAX);
            if crashes >= 2 {
                c.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(game = %id, %reason, "game crashed twice; failed");
                write(
                    store
                        .set_game_state(
                            &id,
                            GameState::Failed,
                            Some(format!("crashed twice: {reason}")),
                            stage,
                        )
                        .await,
                );
            } else if st.stopping.is_some() {
                c.interrupted.fetch_add(1, Ordering::Relaxed);
                write(
                    store
                        .set_game_state(&id, GameState::Interrupted, Some(reason), stage)
                        .await,
                );
            } else {
                tracing::info!(game = %id, %reason, "game crashed; playing it again from the cache");
                write(
                    store
                        .set_game_state(&id, GameState::Pending, Some(reason), stage)
                        .await,
                );
                st.args.queue.push_front(game);
                c.queued.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use sleuth_store::{GameRow, SqliteStore};

    /// Plays from a script of outcomes per game, recording the order of plays.
    struct Scripted {
        ids: Vec<String>,
        outcomes: Mutex<Vec<VecDeque<GameOutcome>>>,
        plays: Mutex<Vec<usize>>,
    }

    impl GamePlayer for Scripted {
        fn play(&self, game: usize) -> BoxFuture<'static, GameOutcome> {
            self.plays.lock().expect("lock").push(game);
            let o = self.outcomes.lock().expect("lock")[game]
                .pop_front()
                .unwrap_or(GameOutcome::Done);
            Box::pin(async move { o })
        }
        fn id(&self, game: usize) -> &str {
            &self.ids[game]
        }
    }

    fn crash() -> GameOutcome {
        GameOutcome::Crashed {
            reason: "character Ada stopped unexpectedly".into(),
            stage: Some("introduction".into()),
        }
    }

    async fn schedule(
        outcomes: Vec<Vec<GameOutcome>>,
    ) -> (Arc<dyn Store>, Arc<Scripted>, RunEnd, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("dir");
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(&dir.path().join("s.db")).expect("store"));
        let ids: Vec<String> = (0..outcomes.len()).map(|i| format!("g{i}")).collect();
        let rows: Vec<GameRow> = ids
            .iter()
            .map(|id| GameRow {
                id: id.clone(),
                sweep: "s".into(),
                arm: "a".into(),
                arm_label: "base".into(),
                script: "x".into(),
                repeat: 0,
                seed: 1,
                spec: "{}".into(),
                state: GameState::Pending,
                attempts: 0,
                crashes: 0,
                reason: None,
                stage: None,
                updated_at: String::new(),
            })
            .collect();
        store.add_games(&rows).await.expect("add");
        let player = Arc::new(Scripted {
            ids,
            outcomes: Mutex::new(outcomes.into_iter().map(VecDeque::from).collect()),
            plays: Mutex::new(Vec::new()),
        });
        let (tx, rx) = oneshot::channel();
        let queue = (0..player.ids.len()).collect();
        Actor::spawn(
            None,
            Scheduler,
            SchedulerArgs {
                queue,
                concurrency: 1,
                player: player.clone(),
                store: store.clone(),
                counters: Arc::default(),
                budget: None,
                done: tx,
                waiting: Vec::new(),
                batch: None,
            },
        )
        .await
        .expect("scheduler");
        let end = rx.await.expect("the run ends");
        (store, player, end, dir)
    }

    #[tokio::test]
    async fn a_game_that_crashes_once_is_played_again_and_twice_fails() {
        let (store, player, end, _dir) = schedule(vec![
            vec![crash(), GameOutcome::Done],
            vec![crash(), crash()],
            vec![GameOutcome::Failed {
                reason: "gave up".into(),
                stage: Some("vote".into()),
            }],
        ])
        .await;
        assert_eq!(end, RunEnd::Finished, "failures do not stop the run");
        // The crashed game goes back to the front of the queue.
        assert_eq!(*player.plays.lock().expect("lock"), vec![0, 0, 1, 1, 2]);
        let g1 = store.game("g1").await.expect("read").expect("g1");
        assert_eq!(g1.state, GameState::Failed);
        assert!(g1
            .reason
            .as_deref()
            .unwrap_or("")
            .starts_with("crashed twice"));
        assert_eq!(g1.crashes, 2);
        let g2 = store.game("g2").await.expect("read").expect("g2");
        assert_eq!(
            (g2.state, g2.stage.as_deref()),
            (GameState::Failed, Some("vote"))
        );
        // Game 0's state is written by the game's own task (here: none), but its crash is counted.
        assert_eq!(
            store.game("g0").await.expect("read").expect("g0").crashes,
            1
        );
    }
}
