//! `sleuth play`: one game from flags or from a recorded spec, its files and its summary.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;

use crate::llm::{self, LlmArgs};

/// `--human`: a character given to a person.
pub mod seat;
use sleuth_game::agent::{AgentConfig, Framework, Modules};
use sleuth_game::game::{
    self, EmbedderChoice, GameConfig, GameSpec, JudgeChoice, MirageSettings, Protocol,
    ProtocolSettings, ScriptRef, ThinkThriceSettings, WellPlaySettings,
};
use sleuth_script::{Language, Script};

/// Flags of `sleuth play`.
#[derive(Debug, Args)]
pub struct PlayArgs {
    /// The script file (TOML; see docs/script-format.md).
    #[arg(required_unless_present = "spec")]
    pub script: Option<PathBuf>,
    /// Replay a recorded game: a result.json (its `spec`) or a bare spec file. Only --out and
    /// --api-key-env may be given with it; the script is read from the recorded path and must be
    /// unchanged.
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// Game protocol: `thinkthrice`, `wellplay` or `mirage`. Default: the protocol of the dataset the
    /// script was imported from (WellPlay, MIRAGE), else `thinkthrice`.
    #[arg(long)]
    pub protocol: Option<String>,
    /// Agent framework: `thinkthrice`, `player`, `werewolf`, `ocot`, `pp`, `op` (under the thinkthrice
    /// and wellplay protocols) or `mirage` (under the mirage protocol). Default: `mirage` under the mirage
    /// protocol, else `thinkthrice`.
    #[arg(long)]
    pub framework: Option<String>,
    /// The murderers' framework, if different (PLAYER* keeps it fixed across the arms it compares).
    #[arg(long)]
    pub murderer_framework: Option<String>,
    /// WellPlay: rounds of questioning per act (n).
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// WellPlay: questions each player asks per round (m).
    #[arg(long, default_value_t = 1)]
    pub questions_per_round: u32,
    /// MIRAGE: alternations of open conversation and interaction.
    #[arg(long, default_value_t = 5)]
    pub iterations: u32,
    /// MIRAGE: culprits announce themselves at the start (the paper's forced-exposure setting).
    #[arg(long)]
    pub force_expose: bool,
    /// MIRAGE: token cap of the script summary.
    #[arg(long, default_value_t = 1500)]
    pub script_summary_tokens: u32,
    /// MIRAGE: conversation history past this many tokens is summarized.
    #[arg(long, default_value_t = 3000)]
    pub history_tokens: u32,
    /// MIRAGE: release the next stage of a multi-stage script after every this many iterations (0 = spread
    /// the stages evenly).
    #[arg(long, default_value_t = 0)]
    pub stage_every: u32,
    /// ThinkThrice modules: comma-separated mr, sr, sv or sv=N, or `none`.
    #[arg(long, default_value = "mr,sr,sv=3")]
    pub modules: String,
    /// Game seed: the same seed, script and flags replay the same game.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Output directory for transcript.jsonl and result.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Open-questioning rounds before the clue cards.
    #[arg(long, default_value_t = 2)]
    pub rounds_before_clues: u32,
    /// Open-questioning rounds after the clue cards.
    #[arg(long, default_value_t = 3)]
    pub rounds_after_clues: u32,
    /// Skip initial questioning after each self-introduction.
    #[arg(long)]
    pub no_initial_questioning: bool,
    /// Records recalled per prompt with MR.
    #[arg(long, default_value_t = 8)]
    pub top_k: usize,
    #[arg(long, default_value_t = 0.8)]
    pub temperature: f32,
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// Token budget of in-game answers.
    #[arg(long, default_value_t = 300)]
    pub max_tokens: u32,
    /// Grade factual answers with this LLM instead of the lexical judge.
    #[arg(long)]
    pub judge_model: Option<String>,
    /// A judge model for one metric, overriding --judge-model for it: `factual=M`, `rationale=M` or
    /// `mirage=M` (MIRAGE's ICI and SCI, which need an LLM judge). Repeatable.
    #[arg(long = "judge", value_name = "METRIC=MODEL")]
    pub judge_for: Vec<String>,
    /// Times each WellPlay multiple-choice question is asked (PLAYER* reports mean ± std of 3).
    #[arg(long, default_value_t = 3)]
    pub eval_repeats: u32,
    /// Minimum judge score (1-5) of an inferential rationale for informed accuracy.
    #[arg(long, default_value_t = sleuth_game::eval::formulas::DEFAULT_RATIONALE_THRESHOLD)]
    pub rationale_threshold: u8,
    /// Pass mark of the lexical judge (window token-F1).
    #[arg(long, default_value_t = sleuth_game::eval::DEFAULT_LEXICAL_THRESHOLD)]
    pub judge_threshold: f64,
    /// Memory embedder: `hashing` (local) or `openai:MODEL` (through the gateway).
    #[arg(long, default_value = "hashing")]
    pub embedder: String,
    /// Serve Prometheus metrics at http://ADDR/metrics while the game runs.
    #[arg(long)]
    pub metrics_addr: Option<SocketAddr>,
    /// Prompt language (`en`, `zh`); the script's language by default.
    #[arg(long)]
    pub lang: Option<String>,
    /// Directory of prompt templates replacing the built-in ones.
    #[arg(long)]
    pub prompts_dir: Option<PathBuf>,
    /// Model calls of this game in flight at once (independent calls — sensors, ballots, evaluation
    /// questions — go out together up to this bound; 1 plays one call at a time). Changes no answer.
    #[arg(long, default_value_t = sleuth_game::agent::DEFAULT_CALL_CONCURRENCY)]
    pub call_concurrency: usize,
    /// Keep the last run's metrics endpoint up this many seconds after the game (for a final scrape).
    #[arg(long, default_value_t = 0, hide = true)]
    pub linger_secs: u64,
    /// Send the evaluation's calls through the endpoint's Batch API at its discount (openai
    /// provider): the game waits for each batch, then replays from the cache in --out
    /// (docs/sweeps.md, *Batch evaluation*).
    #[arg(long)]
    pub batch_eval: bool,
    /// With --batch-eval: seconds between polls of an open batch.
    #[arg(long, default_value_t = 30.0)]
    pub batch_poll_secs: f64,
    /// Give this character to a person: the command prints a link to the character's seat page
    /// and serves it while the game runs (docs/seat.md). `CHARACTER=NAME` names its player; repeat
    /// for several seats, each with its own link.
    #[arg(long, value_name = "CHARACTER[=NAME]")]
    pub human: Vec<String>,
    /// With --human: the name of the player of a seat given without `=NAME`, as the result shows
    /// the seat (`human:NAME`).
    #[arg(long, value_name = "NAME", default_value = "player")]
    pub human_name: String,
    /// With --human: where the seat page is served (loopback only; port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub seat_addr: SocketAddr,
    #[command(flatten)]
    pub llm: LlmArgs,
    /// The flags typed on the command line (not defaulted), filled by `sleuth::cli::Cli::parse_args` (the root crate).
    #[arg(skip)]
    pub typed: Vec<String>,
}

/// Plays the game the flags or the `--spec` file describe, writes `transcript.jsonl` and
/// `result.json`, and prints the summary.
pub(super) async fn run(a: PlayArgs) -> Result<()> {
    let (spec, script) = match &a.spec {
        Some(file) => crate::replay::load(file, &a.typed)?,
        None => spec_from_flags(&a)?,
    };
    let pricing = llm::pricing(&a.llm)?;
    let provider = llm::provider(&spec.provider, &a.llm)?;
    let arm = if spec.framework == Framework::ThinkThrice {
        format!(
            "{}-{}",
            spec.protocol.protocol,
            slug(&spec.agent.modules.to_string())
        )
    } else {
        format!("{}-{}", spec.protocol.protocol, spec.framework)
    };
    let out = a.out.clone().unwrap_or_else(|| {
        let stem = spec
            .script
            .path
            .as_deref()
            .and_then(|p| Path::new(p).file_stem())
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| slug(&script.title));
        PathBuf::from("runs").join(format!("{}-{arm}-s{}", slug(&stem), spec.seed))
    });
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create output directory {}", out.display()))?;
    let progress = std::io::stderr().is_terminal().then(|| {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed} {pos} events · {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        pb.enable_steady_tick(Duration::from_millis(120));
        pb
    });
    let config = GameConfig {
        game_id: format!("{}-{arm}-s{}", slug(&script.title), spec.seed),
        transcript_path: Some(sleuth_store::rundir::GameFiles::in_dir(&out).transcript),
        progress: progress.clone(),
        call_concurrency: a.call_concurrency.max(1),
        ..spec.config()
    };
    config.check()?;
    game::load_all_prompts(&script, &config)?;
    if let Some(addr) = a.metrics_addr {
        sleuth_base::telemetry::serve_metrics(addr)?;
    }
    let (batch, mut ready) = match a.batch_eval {
        true => {
            let (b, r) = batch_parts(&a, &spec, &out)?;
            (Some(b), Some(r))
        }
        false => (None, None),
    };
    let queue = batch.as_ref().map(|b| b.queue.clone());
    let gateway = llm::start_gateway_with(&a.llm, &spec.provider, provider, pricing, batch).await?;
    let mut config = config;
    let seat = match a.human.is_empty() {
        false => Some(seat::open(&a, &script, &out, &mut config).await?),
        true => None,
    };
    let result = loop {
        let Some(queue) = &queue else {
            break game::play(script.clone(), config.clone(), gateway.clone()).await;
        };
        queue.journal().clear_waits(config.game_id.clone()).await?;
        let played = game::play(script.clone(), config.clone(), gateway.clone()).await;
        if !queue.journal().waits(config.game_id.clone()).await? {
            break played;
        }
        // Its evaluation waits on a batch: nothing else will join it, so it goes now.
        eprintln!(
            "evaluation waits on a batch (polled every {}s)…",
            a.batch_poll_secs
        );
        queue.set_idle(true);
        let ready = ready
            .as_mut()
            .ok_or_else(|| anyhow!("the batch queue has no ready channel"))?;
        loop {
            match ready.recv().await {
                Some(id) if id == config.game_id => break,
                Some(_) => continue,
                None => bail!("the batch worker stopped"),
            }
        }
        queue.set_idle(false);
    };
    if let Some(pb) = &progress {
        pb.finish_and_clear();
    }
    if let Some(finish) = seat {
        finish().await;
    }
    gateway.stop();
    let result = result.with_context(|| {
        format!(
            "game failed (the transcript so far is in {})",
            sleuth_store::rundir::GameFiles::in_dir(&out)
                .transcript
                .display()
        )
    })?;
    let path = sleuth_store::rundir::GameFiles::in_dir(&out).result;
    std::fs::write(&path, serde_json::to_string_pretty(&result)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    crate::summary::print_summary(&result, &out);
    if a.linger_secs > 0 {
        tokio::time::sleep(Duration::from_secs(a.linger_secs)).await;
    }
    Ok(())
}

/// The cache and batch queue of `sleuth play --batch-eval`, in the game's output directory.
fn batch_parts(
    a: &PlayArgs,
    spec: &GameSpec,
    out: &Path,
) -> Result<(llm::BatchParts, sleuth_llm::batch::ReadyGames)> {
    if spec.provider.name != "openai" {
        bail!("--batch-eval needs --provider openai (an endpoint with OpenAI's Batch API)");
    }
    if !(a.batch_poll_secs > 0.0 && a.batch_poll_secs.is_finite()) {
        bail!(
            "--batch-poll-secs must be a number of seconds > 0, got {}",
            a.batch_poll_secs
        );
    }
    let store: Arc<dyn sleuth_store::Store> = Arc::new(sleuth_store::SqliteStore::open(
        &sleuth_store::RunDir::new(out).store(),
    )?);
    let settings = sleuth_llm::batch::BatchSettings {
        poll_every: Duration::from_secs_f64(a.batch_poll_secs),
        ..Default::default()
    };
    let (queue, ready) =
        sleuth_llm::batch::BatchQueue::open(&sleuth_store::RunDir::new(out).journal(), settings)?;
    Ok((llm::BatchParts { store, queue }, ready))
}

/// The spec the flags describe, and the script it names. Everything that can be wrong with the
/// flags is found here, before any token is spent (the provider and its key right after).
fn spec_from_flags(a: &PlayArgs) -> Result<(GameSpec, Arc<Script>)> {
    let path = a
        .script
        .as_deref()
        .ok_or_else(|| anyhow!("sleuth play needs a SCRIPT file or --spec FILE"))?;
    let modules: Modules = a.modules.parse()?;
    let language = a
        .lang
        .as_deref()
        .map(str::parse::<Language>)
        .transpose()
        .map_err(|e| anyhow!("--lang: {e}"))?;
    let script = Script::load(path)?;
    let protocol: Protocol = match &a.protocol {
        Some(p) => p.parse()?,
        None => match script.source.as_deref() {
            Some("wellplay") => Protocol::WellPlay,
            Some("mirage") => Protocol::Mirage,
            _ => Protocol::ThinkThrice,
        },
    };
    let framework: Framework = match &a.framework {
        Some(f) => f.parse().map_err(|e| anyhow!("--framework: {e}"))?,
        None if protocol == Protocol::Mirage => Framework::Mirage,
        None => Framework::ThinkThrice,
    };
    let murderer_framework: Option<Framework> = a
        .murderer_framework
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| anyhow!("--murderer-framework: {e}"))?;
    let mut judge_overrides = std::collections::BTreeMap::new();
    for j in &a.judge_for {
        match j.split_once('=') {
            Some((metric, model))
                if game::JUDGED_METRICS.contains(&metric.trim()) && !model.trim().is_empty() =>
            {
                judge_overrides.insert(metric.trim().to_string(), model.trim().to_string());
            }
            _ => bail!(
                "--judge `{j}`: expected METRIC=MODEL with METRIC one of {}",
                game::JUDGED_METRICS.join(", ")
            ),
        }
    }
    if !(0.0..=1.0).contains(&a.judge_threshold) {
        bail!(
            "--judge-threshold must be between 0 and 1, got {}",
            a.judge_threshold
        );
    }
    let embedder = match a.embedder.as_str() {
        "hashing" => EmbedderChoice::Hashing,
        e if e.starts_with("openai:") && e.len() > 7 => EmbedderChoice::Remote(e[7..].to_string()),
        other => {
            bail!("unknown embedder `{other}` in --embedder (expected `hashing` or `openai:MODEL`)")
        }
    };
    let spec = GameSpec {
        script: ScriptRef::new(&script, Some(path)),
        seed: a.seed,
        protocol: ProtocolSettings {
            protocol,
            thinkthrice: ThinkThriceSettings {
                rounds_before_clues: a.rounds_before_clues,
                rounds_after_clues: a.rounds_after_clues,
                initial_questioning: !a.no_initial_questioning,
            },
            wellplay: WellPlaySettings {
                rounds: a.rounds,
                questions_per_round: a.questions_per_round,
            },
            mirage: MirageSettings {
                iterations: a.iterations,
                force_expose: a.force_expose,
                script_summary_tokens: a.script_summary_tokens,
                history_tokens: a.history_tokens,
                stage_every: a.stage_every,
            },
        },
        framework,
        murderer_framework,
        agent: AgentConfig {
            modules,
            top_k: a.top_k,
            model: a.llm.model(),
            temperature: a.temperature,
            top_p: a.top_p,
            max_tokens: a.max_tokens,
            ..AgentConfig::default()
        },
        judge: match &a.judge_model {
            Some(m) => JudgeChoice::Llm(m.clone()),
            None => JudgeChoice::Lexical {
                threshold: a.judge_threshold,
            },
        },
        judge_overrides,
        eval_repeats: a.eval_repeats,
        rationale_threshold: a.rationale_threshold,
        embedder,
        language,
        prompts_dir: a
            .prompts_dir
            .as_deref()
            .map(|p| p.to_string_lossy().into_owned()),
        provider: a.llm.endpoint(),
        murderer_model: None,
        endpoints: Default::default(),
        // Opened after the spec, from --human (`seat.rs`); the result's spec records them.
        human_seats: Default::default(),
    };
    crate::check_ranges(&spec)?;
    Ok((spec, Arc::new(script)))
}

/// A file-system friendly form of a title.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}
