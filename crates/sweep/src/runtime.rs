//! Playing one game of a planned sweep on this node, whoever decides which game is next: the local
//! scheduler of `sleuth sweep run`, or a cluster worker reading the work queue. Both build one
//! [`SweepRuntime`] per sweep and call [`SweepRuntime::play`]; what a game's outcome means for the
//! sweep ([`GameOutcome`]) is decided here, once.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sleuth_game::agent::{AgentError, Prompts};
use sleuth_game::game::{self, GameConfig, GameError, GameResult};
use sleuth_llm::batch::BatchQueue;
use sleuth_llm::{CallScope, Gateway, LlmError};
use sleuth_store::{GameState, Store};

use super::plan::Plan;
use super::scheduler::GameOutcome;
use super::SweepError;

/// A game's prompt templates, by framework.
pub type GamePrompts = Arc<BTreeMap<&'static str, Arc<Prompts>>>;

/// The prompts of every distinct (script, frameworks, language, templates) of the plan, loaded before
/// anything runs so a broken template fails first; by game.
pub fn load_prompts(plan: &Plan) -> Result<Vec<GamePrompts>, SweepError> {
    let mut loaded: HashMap<String, GamePrompts> = HashMap::new();
    let mut out = Vec::with_capacity(plan.games.len());
    for g in &plan.games {
        let script = &plan.scripts[g.script].script;
        let config = g.spec.config();
        let key = format!(
            "{}|{:?}|{:?}|{:?}",
            g.script,
            config.frameworks(),
            config.language,
            config.prompts_dir
        );
        let p = match loaded.get(&key) {
            Some(p) => p.clone(),
            None => {
                let p = Arc::new(game::load_all_prompts(script, &config).map_err(|e| {
                    SweepError::Setup(format!(
                        "{}: prompts for {}: {e}",
                        plan.sweep.path.display(),
                        plan.scripts[g.script].path.display()
                    ))
                })?);
                loaded.insert(key, p.clone());
                p
            }
        };
        out.push(p);
    }
    Ok(out)
}

/// What a [`SweepRuntime`] is made of.
pub struct RuntimeParts {
    pub plan: Arc<Plan>,
    /// By game, from [`load_prompts`].
    pub prompts: Vec<GamePrompts>,
    /// Where game states and results are recorded (and, if it [keeps
    /// transcripts](Store::keeps_transcripts), transcripts).
    pub store: Arc<dyn Store>,
    /// The node's gateway; each game's calls are scoped to its sweep, run and arm.
    pub gateway: Gateway,
    /// Where games write their transcript and result (`games/<id>/`).
    pub out: PathBuf,
    pub sweep: String,
    pub run: String,
    /// Model calls one game may have in flight (`gateway.game_concurrency`, or the runner's choice
    /// from the endpoints' slots); `None`: the game's default.
    pub call_concurrency: Option<usize>,
    /// The run's batch queue, when a model's evaluation goes through batches.
    pub batch: Option<Arc<BatchQueue>>,
    /// How this node seats people (`seats.rs`), when it can.
    pub seating: Option<crate::seats::Seating>,
}

/// A planned sweep, ready to play any of its games on this node.
pub struct SweepRuntime {
    parts: RuntimeParts,
    /// Game id → index in the plan.
    index: HashMap<String, usize>,
}

impl SweepRuntime {
    pub fn new(parts: RuntimeParts) -> Self {
        let index = parts
            .plan
            .games
            .iter()
            .enumerate()
            .map(|(i, g)| (g.id.clone(), i))
            .collect();
        Self { parts, index }
    }

    pub fn plan(&self) -> &Arc<Plan> {
        &self.parts.plan
    }

    /// The plan's index of the game with this id.
    pub fn game_index(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// The directory of a game's transcript and result.
    pub fn game_dir(&self, id: &str) -> PathBuf {
        sleuth_store::RunDir::new(&self.parts.out).game(id).dir
    }

    /// Plays the plan's game `index`: marks it running, plays it, and records its result (the result
    /// file, written whole, then the store). Never fails: what went wrong is the outcome.
    pub async fn play(&self, index: usize) -> GameOutcome {
        let p = &self.parts;
        let g = &p.plan.games[index];
        let dir = self.game_dir(&g.id);
        let transcript = sleuth_store::rundir::GameFiles::in_dir(&dir).transcript;
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return failed(format!("cannot create {}: {e}", dir.display()));
        }
        if let Err(e) = p
            .store
            .set_game_state(&g.id, GameState::Running, None, None)
            .await
        {
            return GameOutcome::Unrecorded {
                reason: format!("store: {e}"),
            };
        }
        let mut config = GameConfig {
            game_id: g.id.clone(),
            transcript_path: Some(transcript.clone()),
            ..g.spec.config()
        };
        if let Some(n) = p.call_concurrency {
            config.call_concurrency = n;
        }
        let gateway = p.gateway.scoped(Arc::new(CallScope {
            sweep: p.sweep.clone(),
            run: p.run.clone(),
            arm: p.plan.arms[g.arm].id.clone(),
        }));
        let finish = match self.seat(g, &mut config).await {
            Ok(finish) => finish,
            Err(reason) => return failed(reason),
        };
        let script = p.plan.scripts[g.script].script.clone();
        let prompts = (*p.prompts[index]).clone();
        if let Some(b) = &p.batch {
            // What the game waited on, it asks for again as it replays.
            if let Err(e) = b.journal().clear_waits(g.id.clone()).await {
                return failed(e.to_string());
            }
        }
        let played = game::play_with_prompts(script, config, gateway, prompts).await;
        if let Some(finish) = finish {
            finish().await;
        }
        if let Some(b) = &p.batch {
            // A game that deferred a call has no result yet, whatever its evaluation made of the
            // missing answer.
            match b.journal().waits(g.id.clone()).await {
                Ok(true) => return GameOutcome::Waiting,
                Ok(false) => {}
                Err(e) => return failed(e.to_string()),
            }
        }
        match played {
            Ok(result) => self.record(index, result, &dir, &transcript).await,
            Err(e) => classify(&e, last_stage(&transcript)),
        }
    }

    /// Opens the seats of a game that gives characters to people (none for most games), into
    /// `config`; what ends them once the game is over.
    async fn seat(
        &self,
        g: &crate::plan::PlannedGame,
        config: &mut GameConfig,
    ) -> Result<Option<crate::seats::FinishSeats>, String> {
        if g.spec.human_seats.is_empty() {
            return Ok(None);
        }
        if self.parts.batch.is_some() {
            return Err(
                "a game with a person at the table cannot be evaluated in batches yet".into(),
            );
        }
        let seating = self.parts.seating.ok_or(crate::seats::NO_SEATING)?;
        let script = &self.parts.plan.scripts[g.script].script;
        let lang = g.spec.language.unwrap_or(script.language);
        let (opened, finish) = seating
            .open(&self.parts.out, &g.id, &g.spec.human_seats, lang)
            .await
            .map_err(|e| format!("cannot open the game's seats: {e}"))?;
        for (character, seat, _) in opened {
            config.seats.insert(character, seat);
        }
        Ok(Some(finish))
    }

    /// Writes a played game's `result.json` and then its result in the store.
    async fn record(
        &self,
        index: usize,
        mut result: GameResult,
        dir: &Path,
        transcript: &Path,
    ) -> GameOutcome {
        let p = &self.parts;
        let g = &p.plan.games[index];
        result.spec = Some(g.spec.clone());
        let json = match serde_json::to_string_pretty(&result) {
            Ok(j) => j + "\n",
            Err(e) => return failed(format!("cannot serialise the result: {e}")),
        };
        let file = sleuth_store::rundir::GameFiles::in_dir(dir).result;
        if let Err(e) = sleuth_base::fs::write_atomic(&file, json.as_bytes()) {
            return failed(format!("cannot write {}: {e}", file.display()));
        }
        let written = if p.store.keeps_transcripts() {
            let text = match std::fs::read_to_string(transcript) {
                Ok(t) => t,
                Err(e) => return failed(format!("cannot read {}: {e}", transcript.display())),
            };
            p.store
                .put_result_with_transcript(&g.id, &json, &text)
                .await
        } else {
            p.store.put_result(&g.id, &json).await
        };
        match written {
            Ok(_) => GameOutcome::Done,
            Err(e) => GameOutcome::Unrecorded {
                reason: format!("store: {e}"),
            },
        }
    }
}

fn failed(reason: String) -> GameOutcome {
    GameOutcome::Failed {
        reason,
        stage: None,
    }
}

/// The stage of the transcript's last event: where a failed game was.
fn last_stage(transcript: &Path) -> Option<String> {
    let text = std::fs::read_to_string(transcript).ok()?;
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let v: serde_json::Value = serde_json::from_str(last).ok()?;
    v.get("stage")?.as_str().map(str::to_string)
}

/// What a failed game's error means for the sweep.
pub fn classify(e: &GameError, stage: Option<String>) -> GameOutcome {
    let reason = e.to_string();
    match e {
        GameError::ActorLost(_) | GameError::ChildFailed { .. } => {
            GameOutcome::Crashed { reason, stage }
        }
        GameError::Agent { error, .. } => match error.as_ref() {
            AgentError::Llm(LlmError::Budget { .. }) => GameOutcome::Interrupted { reason, stage },
            // The gateway was gone longer than a restart takes: play the game again.
            AgentError::Llm(LlmError::Unavailable) => GameOutcome::Crashed { reason, stage },
            // The cluster's shared limits were unreachable through every retry (a Redis outage):
            // nothing is wrong with the game, so it is played again (its calls replay from the cache).
            AgentError::Llm(LlmError::Shared { .. }) => GameOutcome::Crashed { reason, stage },
            _ => GameOutcome::Failed { reason, stage },
        },
        _ => GameOutcome::Failed { reason, stage },
    }
}
