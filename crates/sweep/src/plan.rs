//! The plan: a sweep file expanded into arms and games, every game a complete [`GameSpec`].
//!
//! Arms are the cross product of the explicit `[[arms]]` (or one empty arm) and every `[axes]` list,
//! each laid over `[game]`; games are arms × scripts × repeats. A game's id is a hash of its spec and
//! repeat, so the same game has the same id in every run of the sweep (resume, `--retry-failed`,
//! another node of a cluster) and writing its result is idempotent. Every game's spec is built and
//! checked here — frameworks against protocols, models against the models table, settings against
//! their ranges — so a sweep that cannot run fails before any token is spent, naming the arm and the
//! keys that make it impossible.
//! A `[tournament]` crosses the arms with every pairing of its models ([`super::tournament`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::file::{LoadedSweep, ModelEntry, Settings};
use super::SweepError;
use sleuth_game::agent::{AgentConfig, Framework, Modules};
use sleuth_game::game::{
    EmbedderChoice, EndpointSpec, GameSpec, JudgeChoice, Protocol, ProtocolSettings, ProviderSpec,
    ScriptRef, JUDGED_METRICS,
};
use sleuth_script::{Language, Script};
use sleuth_store::{GameRow, GameState, SweepRecord, SweepStatus};

pub use crate::file::DEFAULT_MODEL;

/// One arm: a combination of settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Arm {
    /// A hash of its settings (12 hex digits).
    pub id: String,
    /// The settings that vary between arms, `key=value` joined by spaces (`base` when none do).
    pub label: String,
    /// `[game]` with the arm's own settings laid over it.
    pub settings: Settings,
}

/// One script of the sweep.
#[derive(Debug, Clone)]
pub struct PlanScript {
    pub path: PathBuf,
    pub script: Arc<Script>,
}

/// One game.
#[derive(Debug, Clone)]
pub struct PlannedGame {
    /// A hash of its spec and repeat (32 hex digits).
    pub id: String,
    /// Index into [`Plan::arms`] and [`Plan::scripts`].
    pub arm: usize,
    pub script: usize,
    pub repeat: u32,
    pub spec: GameSpec,
}

/// A sweep expanded.
#[derive(Debug, Clone)]
pub struct Plan {
    pub sweep: LoadedSweep,
    pub arms: Vec<Arm>,
    pub scripts: Vec<PlanScript>,
    pub games: Vec<PlannedGame>,
    /// The models table, with the simulated default model added when the file does not list it.
    pub models: BTreeMap<String, ModelEntry>,
}

fn sha_hex(bytes: &[u8], digits: usize) -> String {
    let h = hex::encode(Sha256::digest(bytes));
    h[..digits].to_string()
}

/// The id of repeat `repeat` of the game `spec` describes.
pub fn game_id(spec: &GameSpec, repeat: u32) -> String {
    sha_hex(format!("{}#{repeat}", spec.digest()).as_bytes(), 32)
}

impl Plan {
    /// Expands and checks `sweep` (see the module documentation).
    pub fn build(sweep: LoadedSweep) -> Result<Plan, SweepError> {
        Plan::build_from(sweep, &ScriptFiles::Disk)
    }

    /// [`Plan::build`] with the scripts read from `files`.
    pub fn build_from(sweep: LoadedSweep, files: &ScriptFiles) -> Result<Plan, SweepError> {
        let mut models = sweep.file.models.clone();
        models
            .entry(DEFAULT_MODEL.to_string())
            .or_insert(ModelEntry {
                provider: "simulated".into(),
                ..ModelEntry::default()
            });
        let scripts = load_scripts(&sweep, files)?;
        check_tournament_scripts(&sweep, &scripts)?;
        let arms = arms(&sweep);
        let seeds = sweep.seeds();
        let mut games = Vec::new();
        for (ai, arm) in arms.iter().enumerate() {
            for (si, s) in scripts.iter().enumerate() {
                for (repeat, &seed) in seeds.iter().enumerate() {
                    let spec =
                        spec_of(&sweep, &models, &arm.settings, s, seed).map_err(|message| {
                            SweepError::Arm {
                                path: sweep.path.clone(),
                                arm: arm.label.clone(),
                                script: s.path.display().to_string(),
                                message,
                            }
                        })?;
                    let repeat = repeat as u32;
                    games.push(PlannedGame {
                        id: game_id(&spec, repeat),
                        arm: ai,
                        script: si,
                        repeat,
                        spec,
                    });
                }
            }
        }
        Ok(Plan {
            sweep,
            arms,
            scripts,
            games,
            models,
        })
    }

    /// Whether a model the games use sends its evaluation through batches (`batch = true`).
    pub fn uses_batch(&self) -> bool {
        self.used_models()
            .iter()
            .any(|m| self.models.get(m).is_some_and(|e| e.batch == Some(true)))
    }

    /// The models the games use, each once, in name order.
    pub fn used_models(&self) -> Vec<String> {
        let mut used = std::collections::BTreeSet::new();
        for g in &self.games {
            used.extend(g.spec.endpoints.keys().cloned());
        }
        used.into_iter().collect()
    }
}

/// Where a plan reads its scripts from.
#[derive(Debug, Clone, Default)]
pub enum ScriptFiles {
    /// The disk, beside the sweep file (a run on this node).
    #[default]
    Disk,
    /// The files a client sent with the sweep file (`sleuth submit`): for each entry of the file's
    /// `scripts` list, in order, the entry and its files as (path, text). A cluster has no shared
    /// disk, so the coordinator and the workers plan from these; the paths are the ones the client
    /// resolved, so the games' specs — and ids — are those a run on the client's machine would have.
    Given(Vec<(String, Vec<(PathBuf, String)>)>),
}

/// The files entry `i` of the sweep's `scripts` list stands for: the file, or a directory's `*.toml`
/// files in name order.
pub fn entry_paths(sweep: &LoadedSweep, i: usize) -> Result<Vec<PathBuf>, SweepError> {
    let entry = &sweep.file.scripts[i];
    let p = sweep.resolve(entry);
    if p.is_dir() {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&p)
            .map_err(|e| SweepError::Key {
                path: sweep.path.clone(),
                key: format!("scripts[{i}]"),
                message: format!("cannot read directory {}: {e}", p.display()),
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.extension().is_some_and(|x| x == "toml") && f.is_file())
            .collect();
        found.sort();
        if found.is_empty() {
            return Err(SweepError::Key {
                path: sweep.path.clone(),
                key: format!("scripts[{i}]"),
                message: format!("directory {} holds no .toml script", p.display()),
            });
        }
        Ok(found)
    } else if p.is_file() {
        Ok(vec![p])
    } else {
        Err(SweepError::Key {
            path: sweep.path.clone(),
            key: format!("scripts[{i}]"),
            message: format!("no such file or directory: {}", p.display()),
        })
    }
}

/// The sweep's scripts: files as listed, directories as their `*.toml` files in name order; each
/// loaded and validated, each once.
fn load_scripts(sweep: &LoadedSweep, files: &ScriptFiles) -> Result<Vec<PlanScript>, SweepError> {
    // (path, text when given)
    let mut listed: Vec<(PathBuf, Option<&str>)> = Vec::new();
    match files {
        ScriptFiles::Disk => {
            for i in 0..sweep.file.scripts.len() {
                listed.extend(entry_paths(sweep, i)?.into_iter().map(|p| (p, None)));
            }
        }
        ScriptFiles::Given(given) => {
            for (i, entry) in sweep.file.scripts.iter().enumerate() {
                let bad = |message: String| SweepError::Key {
                    path: sweep.path.clone(),
                    key: format!("scripts[{i}]"),
                    message,
                };
                let (sent, files) = given
                    .get(i)
                    .ok_or_else(|| bad(format!("`{entry}` came without its script files")))?;
                if sent != entry {
                    return Err(bad(format!(
                        "the files sent for entry {i} are for `{sent}`, not `{entry}`"
                    )));
                }
                if files.is_empty() {
                    return Err(bad(format!("`{entry}` came without its script files")));
                }
                listed.extend(files.iter().map(|(p, t)| (p.clone(), Some(t.as_str()))));
            }
        }
    }
    let mut out: Vec<PlanScript> = Vec::new();
    for (path, text) in listed {
        if out.iter().any(|s| s.path == path) {
            continue;
        }
        let script = match text {
            Some(t) => Script::parse(t, &path),
            None => Script::load(&path),
        }
        .map_err(|e| SweepError::Script {
            path: path.clone(),
            message: e.to_string(),
        })?;
        out.push(PlanScript {
            path,
            script: Arc::new(script),
        });
    }
    Ok(out)
}

/// The arms: explicit arms × axes, over `[game]`.
fn arms(sweep: &LoadedSweep) -> Vec<Arm> {
    let explicit = if sweep.file.arms.is_empty() {
        vec![Settings::default()]
    } else {
        sweep.file.arms.clone()
    };
    // Cross product, axes in key order.
    let mut combos: Vec<Settings> = explicit;
    for (_, values) in &sweep.axes {
        combos = combos
            .iter()
            .flat_map(|c| values.iter().map(move |v| c.overlay(v)))
            .collect();
    }
    if let Some(t) = &sweep.file.tournament {
        combos = t.cross(&combos);
    }
    combos
        .into_iter()
        .map(|own| {
            let settings = sweep.file.game.overlay(&own);
            let label = own
                .set_keys()
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ");
            let canonical = serde_json::to_vec(&settings).unwrap_or_default();
            Arm {
                id: sha_hex(&canonical, 12),
                label: if label.is_empty() {
                    "base".into()
                } else {
                    label
                },
                settings,
            }
        })
        .collect()
}

/// The endpoint record of a models-table entry.
fn endpoint(entry: &ModelEntry) -> EndpointSpec {
    EndpointSpec {
        provider: entry.provider.clone(),
        // Recorded without credentials (`sleuth_base::redact`); the gateway gets the URL as given.
        base_url: match entry.provider.as_str() {
            "openai" => Some(sleuth_base::redact::url(
                entry
                    .base_url
                    .as_deref()
                    .unwrap_or("https://api.openai.com/v1"),
            )),
            _ => None,
        },
        model: entry.model.clone(),
        api_key_env: entry.api_key_env.clone(),
    }
}

/// The complete spec of one game, or why this arm cannot be played on this script.
fn spec_of(
    sweep: &LoadedSweep,
    models: &BTreeMap<String, ModelEntry>,
    s: &Settings,
    ps: &PlanScript,
    seed: u64,
) -> Result<GameSpec, String> {
    let script = &ps.script;
    let protocol: Protocol = match &s.protocol {
        Some(p) => p.parse().map_err(|e| format!("protocol: {e}"))?,
        None => match script.source.as_deref() {
            Some("wellplay") => Protocol::WellPlay,
            Some("mirage") => Protocol::Mirage,
            _ => Protocol::ThinkThrice,
        },
    };
    let framework: Framework = match &s.framework {
        Some(f) => f.parse().map_err(|e| format!("framework: {e}"))?,
        None if protocol == Protocol::Mirage => Framework::Mirage,
        None => Framework::ThinkThrice,
    };
    let murderer_framework = s
        .murderer_framework
        .as_deref()
        .map(str::parse::<Framework>)
        .transpose()
        .map_err(|e| format!("murderer_framework: {e}"))?;
    let modules: Modules = match &s.modules {
        Some(m) => m.parse().map_err(|e| format!("modules: {e}"))?,
        None => AgentConfig::default().modules,
    };
    let language = s
        .language
        .as_deref()
        .map(str::parse::<Language>)
        .transpose()
        .map_err(|e| format!("language: {e}"))?;
    let eval = &sweep.file.evaluation;
    let mut endpoints = BTreeMap::new();
    let mut use_model = |what: &str, name: &str| -> Result<(), String> {
        let entry = models.get(name).ok_or_else(|| {
            format!(
                "{what} `{name}` is not in the models table (it lists: {})",
                models.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        })?;
        endpoints.insert(name.to_string(), endpoint(entry));
        Ok(())
    };
    let model = s.model.clone().unwrap_or_else(|| DEFAULT_MODEL.to_string());
    use_model("model", &model)?;
    if let Some(m) = &s.murderer_model {
        use_model("murderer_model", m)?;
    }
    // An arm's own judge (`judge_model` as a setting, e.g. an axis) over the sweep's default. With
    // `[evaluation] judges` as well, the per-metric judges would silently outrank the arm's, so the
    // two are refused together.
    if s.judge_model.is_some() && !eval.judges.is_empty() {
        return Err(
            "judge_model is set per arm and [evaluation] judges names per-metric judges: set the \
             judge in one place"
                .into(),
        );
    }
    let judge_model = s.judge_model.as_ref().map(|m| ("judge_model", m));
    let judge_model = judge_model.or(eval
        .judge_model
        .as_ref()
        .map(|m| ("evaluation.judge_model", m)));
    let judge = match judge_model {
        Some((what, m)) => {
            use_model(what, m)?;
            JudgeChoice::Llm(m.clone())
        }
        None => JudgeChoice::Lexical {
            threshold: eval
                .judge_threshold
                .unwrap_or(sleuth_game::eval::DEFAULT_LEXICAL_THRESHOLD),
        },
    };
    let mut judge_overrides = BTreeMap::new();
    for (metric, m) in &eval.judges {
        if !JUDGED_METRICS.contains(&metric.as_str()) {
            return Err(format!(
                "evaluation.judges.{metric}: unknown metric (expected one of {})",
                JUDGED_METRICS.join(", ")
            ));
        }
        use_model(&format!("evaluation.judges.{metric}"), m)?;
        judge_overrides.insert(metric.clone(), m.clone());
    }
    let embedder = match eval.embedder.as_deref() {
        None | Some("hashing") => EmbedderChoice::Hashing,
        Some(m) => {
            use_model("evaluation.embedder", m)?;
            EmbedderChoice::Remote(m.to_string())
        }
    };
    let civilian = endpoint(&models[&model]);
    let agent_defaults = AgentConfig::default();
    let spec = GameSpec {
        script: ScriptRef::new(script, Some(&ps.path)),
        seed,
        protocol: protocol_settings(protocol, s),
        framework,
        murderer_framework,
        agent: AgentConfig {
            modules,
            top_k: s.top_k.unwrap_or(agent_defaults.top_k),
            model,
            temperature: s.temperature.unwrap_or(agent_defaults.temperature),
            top_p: s.top_p.unwrap_or(agent_defaults.top_p),
            max_tokens: s.max_tokens.unwrap_or(agent_defaults.max_tokens),
            ..agent_defaults
        },
        judge,
        judge_overrides,
        eval_repeats: eval.repeats.unwrap_or(3),
        rationale_threshold: eval
            .rationale_threshold
            .unwrap_or(sleuth_game::eval::formulas::DEFAULT_RATIONALE_THRESHOLD),
        embedder,
        language,
        prompts_dir: s
            .prompts_dir
            .as_deref()
            .map(|p| sweep.resolve(p).to_string_lossy().into_owned()),
        provider: ProviderSpec {
            name: civilian.provider.clone(),
            base_url: civilian.base_url.as_deref().map(sleuth_base::redact::url),
        },
        murderer_model: s.murderer_model.clone(),
        endpoints,
        human_seats: human_seats(s, script)?,
    };
    check(&spec)?;
    let config = spec.config();
    if spec
        .human_seats
        .keys()
        .any(|c| !config.framework_of(script, c).plays())
    {
        return Err("human: the no-play references (pp, op) have no game to sit at".into());
    }
    Ok(spec)
}

/// The protocol's settings of an arm: each one the arm sets, the protocol's default otherwise.
fn protocol_settings(protocol: Protocol, s: &Settings) -> ProtocolSettings {
    let d = ProtocolSettings::default();
    ProtocolSettings {
        protocol,
        thinkthrice: sleuth_game::game::ThinkThriceSettings {
            rounds_before_clues: s
                .rounds_before_clues
                .unwrap_or(d.thinkthrice.rounds_before_clues),
            rounds_after_clues: s
                .rounds_after_clues
                .unwrap_or(d.thinkthrice.rounds_after_clues),
            initial_questioning: s
                .initial_questioning
                .unwrap_or(d.thinkthrice.initial_questioning),
        },
        wellplay: sleuth_game::game::WellPlaySettings {
            rounds: s.rounds.unwrap_or(d.wellplay.rounds),
            questions_per_round: s
                .questions_per_round
                .unwrap_or(d.wellplay.questions_per_round),
        },
        mirage: sleuth_game::game::MirageSettings {
            iterations: s.iterations.unwrap_or(d.mirage.iterations),
            force_expose: s.force_expose.unwrap_or(d.mirage.force_expose),
            script_summary_tokens: s
                .script_summary_tokens
                .unwrap_or(d.mirage.script_summary_tokens),
            history_tokens: s.history_tokens.unwrap_or(d.mirage.history_tokens),
            stage_every: s.stage_every.unwrap_or(d.mirage.stage_every),
        },
    }
}

/// The people at an arm's table, from its `human` setting (`CHARACTER=NAME;…`, see
/// [`Settings::human`]): each a character of the script (a bare name is played by `player`).
fn human_seats(s: &Settings, script: &Script) -> Result<BTreeMap<String, String>, String> {
    let mut seats = BTreeMap::new();
    let Some(text) = s.human.as_deref() else {
        return Ok(seats);
    };
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (character, name) = match entry.rsplit_once('=') {
            Some((c, n)) => (c.trim(), n.trim()),
            None => (entry, "player"),
        };
        if !script.characters.iter().any(|c| c.name == character) {
            let cast: Vec<&str> = script.characters.iter().map(|c| c.name.as_str()).collect();
            return Err(format!(
                "human: `{character}` is not a character of {} (its characters: {})",
                script.title,
                cast.join(", ")
            ));
        }
        if name.is_empty() || name.chars().any(|c| c.is_control() || c == ';') {
            return Err(format!(
                "human: the name of `{character}`'s player must be non-empty, without control \
                 characters (`CHARACTER=NAME`)"
            ));
        }
        if seats
            .insert(character.to_string(), name.to_string())
            .is_some()
        {
            return Err(format!("human: `{character}` is given to a person twice"));
        }
    }
    Ok(seats)
}

/// What `sleuth play` refuses, refused for a sweep's game.
fn check(spec: &GameSpec) -> Result<(), String> {
    spec.config().check().map_err(|e| e.to_string())?;
    if spec.protocol.wellplay.questions_per_round == 0 {
        return Err("questions_per_round must be at least 1".into());
    }
    if spec.protocol.protocol == Protocol::Mirage && spec.protocol.mirage.iterations == 0 {
        return Err("iterations must be at least 1".into());
    }
    if spec.eval_repeats == 0 {
        return Err("evaluation.repeats must be at least 1".into());
    }
    if !(1..=5).contains(&spec.rationale_threshold) {
        return Err(format!(
            "evaluation.rationale_threshold must be between 1 and 5, got {}",
            spec.rationale_threshold
        ));
    }
    if let JudgeChoice::Lexical { threshold } = spec.judge {
        if !(0.0..=1.0).contains(&threshold) {
            return Err(format!(
                "evaluation.judge_threshold must be between 0 and 1, got {threshold}"
            ));
        }
    }
    if !(0.0..=2.0).contains(&spec.agent.temperature) {
        return Err(format!(
            "temperature must be between 0 and 2, got {}",
            spec.agent.temperature
        ));
    }
    if !(spec.agent.top_p > 0.0 && spec.agent.top_p <= 1.0) {
        return Err(format!("top_p must be in (0, 1], got {}", spec.agent.top_p));
    }
    if spec.agent.max_tokens == 0 {
        return Err("max_tokens must be at least 1".into());
    }
    Ok(())
}

/// The plan as the store records it.
impl Plan {
    /// The sweep's record, as first recorded (running).
    pub fn sweep_record(&self) -> SweepRecord {
        let file = &self.sweep.file;
        SweepRecord {
            id: file.name.clone(),
            name: file.name.clone(),
            file: self.sweep.path.display().to_string(),
            // Any user and password in its base URLs taken out (`sleuth_base::redact`).
            text: sleuth_base::redact::urls_in_text(&self.sweep.text),
            created_at: sleuth_base::clock::now(),
            status: SweepStatus::Running,
            note: None,
            max_usd: file.budget.max_usd,
            max_tokens: file.budget.max_tokens,
        }
    }

    /// The plan's games as the store's rows (pending).
    pub fn game_rows(&self, sweep_id: &str) -> Vec<GameRow> {
        self.games
            .iter()
            .map(|g| GameRow {
                id: g.id.clone(),
                sweep: sweep_id.to_string(),
                arm: self.arms[g.arm].id.clone(),
                arm_label: self.arms[g.arm].label.clone(),
                script: self.scripts[g.script].script.title.clone(),
                repeat: g.repeat,
                seed: g.spec.seed,
                spec: serde_json::to_string(&g.spec).unwrap_or_default(),
                state: GameState::Pending,
                attempts: 0,
                crashes: 0,
                reason: None,
                stage: None,
                updated_at: String::new(),
            })
            .collect()
    }
}

/// With a tournament, every script must give the culprit's side a player: a script whose culprit is
/// no player (a suspect who never speaks) would let the culprit's model play nothing.
fn check_tournament_scripts(sweep: &LoadedSweep, scripts: &[PlanScript]) -> Result<(), SweepError> {
    if sweep.file.tournament.is_none() {
        return Ok(());
    }
    for s in scripts {
        if s.script.murderers().is_empty() {
            return Err(SweepError::Key {
                path: sweep.path.clone(),
                key: "tournament".into(),
                message: format!(
                    "script {} has no murderer among its players, so nobody would play the \
                     culprit's side (expected scripts with a player whose role is `murderer`)",
                    s.path.display()
                ),
            });
        }
    }
    Ok(())
}
