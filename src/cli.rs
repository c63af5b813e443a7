//! The command line: flag definitions and one function per subcommand.
//!
//! Everything a run needs is checked before the first LLM call (script, framework, modules, provider
//! key, pricing table, prompts), so bad input costs nothing. Library errors become one-line messages at
//! this edge (anyhow).

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::agent::{AgentConfig, Framework, Modules};
use crate::game::{
    self, EmbedderChoice, GameConfig, GameResult, JudgeChoice, MirageSettings, Protocol,
    ProtocolSettings, ThinkThriceSettings, WellPlaySettings,
};
use crate::llm::{
    Gateway, GatewayConfig, OpenAiProvider, OpenAiSettings, Pricing, SharedProvider,
    SimulatedProvider,
};
use crate::mockllm::{self, MockConfig};
use crate::script::{Category, Language, Script, Severity};

/// sleuth: plays LLM murder-mystery games (Jubensha) and evaluates the agents.
#[derive(Debug, Parser)]
#[command(name = "sleuth", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play one game end to end and evaluate the agents.
    Play(Box<PlayArgs>),
    /// Serve the simulated model over an OpenAI-compatible HTTP API (for tests and load tests).
    MockLlm(MockArgs),
    /// Work with script files.
    #[command(subcommand)]
    Script(ScriptCommand),
    /// Evaluation questions.
    #[command(subcommand)]
    Questions(QuestionsCommand),
    /// Convert a public dataset's script into sleuth's format.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Tables and figures of the papers (Markdown, HTML, CSV, PNG, SVG) from finished games.
    Report(ReportArgs),
}

/// `sleuth script …`
#[derive(Debug, Subcommand)]
pub enum ScriptCommand {
    /// Check a script file and list every problem (errors and warnings) with its field path.
    Validate { path: PathBuf },
    /// Summarise a script: characters, roles, acts, clues and questions by kind.
    Show { path: PathBuf },
}

/// Which model to reach and how: shared by every command that calls a model.
#[derive(Debug, Args)]
pub struct LlmArgs {
    /// `simulated` (in-process, no key) or `openai` (any OpenAI-compatible endpoint).
    #[arg(long, default_value = "simulated")]
    pub provider: String,
    /// Model name; default `sim-1` for simulated, `gpt-4o-mini` for openai.
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of the OpenAI-compatible API.
    #[arg(long, default_value = "https://api.openai.com/v1")]
    pub base_url: String,
    /// Environment variable that holds the API key (never pass the key itself on the command line).
    #[arg(long, default_value = crate::llm::DEFAULT_KEY_ENV)]
    pub api_key_env: String,
    /// Pricing table (USD per million tokens per model); the built-in one otherwise.
    #[arg(long)]
    pub pricing: Option<PathBuf>,
    /// Added latency of the simulated provider, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub sim_latency_ms: u64,
    /// Retries of a failed call (429, 5xx, timeout) before the game fails.
    #[arg(long, default_value_t = 8)]
    pub max_retries: u32,
    /// First retry backoff in milliseconds (doubles per retry, with jitter; Retry-After wins if longer).
    #[arg(long, default_value_t = 500)]
    pub retry_base_ms: u64,
    /// Per-attempt timeout in seconds.
    #[arg(long, default_value_t = 120)]
    pub timeout_secs: u64,
}

/// `sleuth import …`
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Import one WellPlay (PLAYER*) script folder: json/script_info.json, json/<Character>.json, final_result/*.csv.
    Wellplay {
        dir: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Import one MIRAGE script folder: script.json and clues.json.
    Mirage {
        dir: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// The culprit (repeatable); overrides the built-in table of the eight English titles.
        #[arg(long = "culprit")]
        culprits: Vec<String>,
        /// MIRAGE's Truth.json (title → true account); by default looked for in DIR's parent.
        #[arg(long)]
        truth: Option<PathBuf>,
    },
}

/// `sleuth questions …`
#[derive(Debug, Subcommand)]
pub enum QuestionsCommand {
    /// Ask an LLM for factual question/answer/source triples per character (ThinkThrice §5.1); keep those
    /// whose source sentence occurs in the character's script, drop near-duplicates, append them to the file.
    Generate(Box<GenerateArgs>),
}

/// Flags of `sleuth questions generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The script file; the questions are appended to it (comments and layout kept).
    pub script: PathBuf,
    /// Questions wanted per character.
    #[arg(long, default_value_t = 40)]
    pub per_character: usize,
    /// Questions asked for per call.
    #[arg(long, default_value_t = 10)]
    pub batch: usize,
    #[arg(long, default_value_t = 0.8)]
    pub temperature: f32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Directory of prompt templates replacing the built-in ones.
    #[arg(long)]
    pub prompts_dir: Option<PathBuf>,
    /// Print what would be added without writing the file.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// Flags of `sleuth report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A game directory (`sleuth play --out DIR`), a run directory holding game directories at any
    /// depth, or one result.json.
    pub path: PathBuf,
    /// Output directory; default PATH/report/ (beside the file when PATH is a result.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Bootstrap resamples per confidence interval.
    #[arg(long, default_value_t = crate::eval::stats::DEFAULT_RESAMPLES)]
    pub resamples: usize,
    /// Bootstrap seed: the same games and seed give the same intervals.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// Flags of `sleuth play`.
#[derive(Debug, Args)]
pub struct PlayArgs {
    /// The script file (TOML; see docs/script-format.md).
    pub script: PathBuf,
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
    #[arg(long, default_value_t = crate::eval::formulas::DEFAULT_RATIONALE_THRESHOLD)]
    pub rationale_threshold: u8,
    /// Pass mark of the lexical judge (window token-F1).
    #[arg(long, default_value_t = crate::eval::DEFAULT_LEXICAL_THRESHOLD)]
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
    /// Keep the last run's metrics endpoint up this many seconds after the game (for a final scrape).
    #[arg(long, default_value_t = 0, hide = true)]
    pub linger_secs: u64,
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// Flags of `sleuth mock-llm`.
#[derive(Debug, Args)]
pub struct MockArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8089")]
    pub listen: SocketAddr,
    /// Latency added to every request.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Share of requests answered with an injected 429 or 500 (with Retry-After).
    #[arg(long, default_value_t = 0.0)]
    pub error_rate: f64,
    /// Requests beyond this many at once get 429.
    #[arg(long)]
    pub max_concurrency: Option<usize>,
    /// Seed of the fault injector.
    #[arg(long, default_value_t = 0)]
    pub fault_seed: u64,
    /// Retry-After sent with injected errors, in milliseconds.
    #[arg(long, default_value_t = 50)]
    pub retry_after_ms: u64,
    /// Model names served (repeatable).
    #[arg(long = "model", default_value = crate::llm::simulated::MODEL)]
    pub models: Vec<String>,
    /// Answer the first N chat completions with malformed output (tests the re-asking of unparseable
    /// structured replies).
    #[arg(long, default_value_t = 0)]
    pub malformed_first: u64,
}

/// Runs the parsed command.
pub async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Play(args) => play(*args).await,
        Command::MockLlm(args) => mock_llm(args).await,
        Command::Script(ScriptCommand::Validate { path }) => validate(&path),
        Command::Questions(QuestionsCommand::Generate(args)) => generate_questions(*args).await,
        Command::Import(cmd) => import(cmd),
        Command::Report(args) => report(&args),
        Command::Script(ScriptCommand::Show { path }) => show(&path),
    }
}

/// Prints every problem, errors first; fails if there are errors.
fn report_problems(path: &Path, script: &Script) -> Result<()> {
    let problems = script.problems();
    let (errors, warnings): (Vec<_>, Vec<_>) =
        problems.iter().partition(|p| p.severity == Severity::Error);
    for p in &errors {
        println!("error: {}: {p}", path.display());
    }
    for p in &warnings {
        println!("warning: {}: {p}", path.display());
    }
    if !errors.is_empty() {
        bail!(
            "{}: {} errors, {} warnings",
            path.display(),
            errors.len(),
            warnings.len()
        );
    }
    Ok(())
}

fn validate(path: &Path) -> Result<()> {
    let s = Script::load_unchecked(path)?;
    report_problems(path, &s)?;
    println!(
        "{}: ok — \"{}\", {} characters, {} clues, {} factual, {} inferential and {} multiple-choice questions",
        path.display(),
        s.title,
        s.characters.len(),
        s.clues.len(),
        s.factual.len(),
        s.inferential.len(),
        s.choice.len()
    );
    Ok(())
}

fn show(path: &Path) -> Result<()> {
    let s = Script::load_unchecked(path)?;
    print!("{}", summary(&s));
    Ok(())
}

/// A readable summary of a script.
pub fn summary(s: &Script) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} ({}{})",
        s.title,
        s.language.code(),
        s.source
            .as_deref()
            .map(|x| format!(", from {x}"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        o,
        "acts: {}   victims: {}",
        s.acts,
        s.victims
            .iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(o, "characters:");
    for c in &s.characters {
        let role = if c.is_murderer() {
            "murderer"
        } else {
            "civilian"
        };
        let killed = if c.killed.is_empty() {
            String::new()
        } else {
            format!(", killed {}", c.killed.join(", "))
        };
        let factual = s.factual.iter().filter(|q| q.character == c.name).count();
        let choice = s
            .choice
            .iter()
            .filter(|q| q.character.as_deref() == Some(c.name.as_str()))
            .count();
        let _ = writeln!(
            o,
            "  {:<28} {role:<9} acts {}  secrets {}  factual {factual}  multiple-choice {choice}{killed}",
            c.name,
            c.acts.len(),
            c.secrets.len()
        );
    }
    let key = s.clues.iter().filter(|c| c.key).count();
    let located = s.clues.iter().filter(|c| c.location.is_some()).count();
    let _ = writeln!(
        o,
        "clues: {} ({key} key, {located} by location)",
        s.clues.len()
    );
    let count = |cat: Category, multi: bool| {
        s.choice
            .iter()
            .filter(|q| q.category == cat && q.multiple == multi)
            .count()
    };
    let _ = writeln!(
        o,
        "questions: {} factual, {} inferential, {} multiple-choice",
        s.factual.len(),
        s.inferential.len(),
        s.choice.len()
    );
    if !s.choice.is_empty() {
        for (label, cat) in [
            ("A objective (10)", Category::Objective),
            ("B reasoning (5)", Category::Reasoning),
            ("C relations (2)", Category::Relations),
        ] {
            let _ = writeln!(
                o,
                "  {label:<18} single {:>3}  multiple {:>3}",
                count(cat, false),
                count(cat, true)
            );
        }
        let fsa = s.choice.iter().filter(|q| q.character.is_none()).count();
        let _ = writeln!(o, "  full script access {fsa:>3}");
    }
    o
}

fn import(cmd: ImportCommand) -> Result<()> {
    let (script, out) = match cmd {
        ImportCommand::Wellplay { dir, out } => {
            (crate::script::import::wellplay::import(&dir)?, out)
        }
        ImportCommand::Mirage {
            dir,
            out,
            culprits,
            truth,
        } => {
            let opts = crate::script::import::mirage::MirageOptions { culprits, truth };
            (crate::script::import::mirage::import(&dir, &opts)?, out)
        }
    };
    // Written before it is judged: nothing converted is lost, and the file can be fixed by hand.
    script.save(&out)?;
    report_problems(&out, &script)?;
    println!(
        "wrote {}: {} characters, {} clues, {} multiple-choice questions",
        out.display(),
        script.characters.len(),
        script.clues.len(),
        script.choice.len()
    );
    Ok(())
}

async fn generate_questions(a: GenerateArgs) -> Result<()> {
    let script = Script::load(&a.script)?;
    if a.per_character == 0 || a.batch == 0 {
        bail!("--per-character and --batch must be at least 1");
    }
    let (provider, model, pricing) = provider_from(&a.llm)?;
    let opts = crate::questions::GenerateOptions {
        per_character: a.per_character,
        model,
        batch: a.batch,
        temperature: a.temperature,
        seed: a.seed,
        prompts_dir: a.prompts_dir.clone(),
    };
    // Templates are checked before the first call.
    crate::agent::Prompts::load(
        crate::questions::FRAMEWORK,
        script.language,
        a.prompts_dir.as_deref(),
        &[crate::questions::PURPOSE],
    )?;
    let gateway = Gateway::start(provider, pricing, gateway_config(&a.llm)).await?;
    let report = crate::questions::generate(&script, &gateway, &opts).await;
    gateway.stop();
    let report = report?;
    println!(
        "{:<28} {:>5} {:>8} {:>5} {:>10} {:>10} {:>6}",
        "character", "calls", "proposed", "kept", "unsourced", "duplicate", "empty"
    );
    for c in &report.per_character {
        println!(
            "{:<28} {:>5} {:>8} {:>5} {:>10} {:>10} {:>6}",
            c.character,
            c.calls,
            c.proposed,
            c.kept,
            c.dropped_unsourced,
            c.dropped_duplicates,
            c.dropped_empty
        );
    }
    let u = &report.usage;
    println!(
        "usage: {} calls, {} prompt + {} completion tokens, ${:.4}",
        u.calls, u.prompt_tokens, u.completion_tokens, u.cost_usd
    );
    if a.dry_run {
        for q in &report.questions {
            println!(
                "[{}] {} → {}  (source: {})",
                q.character, q.question, q.answer, q.source
            );
        }
        return Ok(());
    }
    crate::questions::append_to_file(&a.script, &report.questions)?;
    println!(
        "appended {} questions to {}",
        report.questions.len(),
        a.script.display()
    );
    Ok(())
}

async fn mock_llm(a: MockArgs) -> Result<()> {
    if !(0.0..=1.0).contains(&a.error_rate) {
        bail!("--error-rate must be between 0 and 1, got {}", a.error_rate);
    }
    let config = MockConfig {
        latency: Duration::from_millis(a.latency_ms),
        error_rate: a.error_rate,
        max_concurrency: a.max_concurrency,
        fault_seed: a.fault_seed,
        retry_after_ms: a.retry_after_ms,
        models: a.models,
        malformed_first: a.malformed_first,
    };
    let models = config.models.clone();
    let server = mockllm::MockServer::start(a.listen, config).await?;
    // The bound address, not the requested one: with port 0 the OS picks it and scripts read it here.
    println!(
        "sleuth mock-llm: serving {models:?} on {} (ctrl-c to stop)",
        server.base_url()
    );
    tokio::signal::ctrl_c()
        .await
        .context("cannot wait for ctrl-c")?;
    server.shutdown().await;
    Ok(())
}

/// The provider, the model name and the pricing table the flags ask for. Everything is checked here —
/// the key's presence too — so that bad flags fail before any call.
fn provider_from(a: &LlmArgs) -> Result<(SharedProvider, String, Pricing)> {
    let pricing = match &a.pricing {
        Some(p) => Pricing::load(p)?,
        None => Pricing::builtin(),
    };
    let (provider, model): (SharedProvider, String) = match a.provider.as_str() {
        "simulated" => (
            Arc::new(SimulatedProvider {
                latency: Duration::from_millis(a.sim_latency_ms),
            }),
            a.model
                .clone()
                .unwrap_or_else(|| crate::llm::simulated::MODEL.to_string()),
        ),
        "openai" => {
            let key = std::env::var(&a.api_key_env).map_err(|_| {
                anyhow!(
                    "--provider openai needs an API key in the environment variable {} (set it, or name another with --api-key-env)",
                    a.api_key_env
                )
            })?;
            let settings = OpenAiSettings {
                base_url: a.base_url.clone(),
                api_key: key,
                timeout: Duration::from_secs(a.timeout_secs),
            };
            (
                Arc::new(OpenAiProvider::new(&settings)?),
                a.model.clone().unwrap_or_else(|| "gpt-4o-mini".to_string()),
            )
        }
        other => {
            bail!("unknown provider `{other}` in --provider (expected `simulated` or `openai`)")
        }
    };
    Ok((provider, model, pricing))
}

fn gateway_config(a: &LlmArgs) -> GatewayConfig {
    GatewayConfig {
        max_retries: a.max_retries,
        backoff_base: Duration::from_millis(a.retry_base_ms),
        timeout: Duration::from_secs(a.timeout_secs),
        ..GatewayConfig::default()
    }
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

async fn play(a: PlayArgs) -> Result<()> {
    // Everything that can be wrong with the input is checked here, before any token is spent.
    let modules: Modules = a.modules.parse()?;
    let language = a
        .lang
        .as_deref()
        .map(str::parse::<Language>)
        .transpose()
        .map_err(|e| anyhow!("--lang: {e}"))?;
    let script = Arc::new(Script::load(&a.script)?);
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
    if a.questions_per_round == 0 {
        bail!("--questions-per-round must be at least 1");
    }
    if a.eval_repeats == 0 {
        bail!("--eval-repeats must be at least 1");
    }
    if !(1..=5).contains(&a.rationale_threshold) {
        bail!(
            "--rationale-threshold must be between 1 and 5, got {}",
            a.rationale_threshold
        );
    }
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
    let embedder = match a.embedder.as_str() {
        "hashing" => EmbedderChoice::Hashing,
        e if e.starts_with("openai:") && e.len() > 7 => EmbedderChoice::Remote(e[7..].to_string()),
        other => {
            bail!("unknown embedder `{other}` in --embedder (expected `hashing` or `openai:MODEL`)")
        }
    };
    if !(0.0..=1.0).contains(&a.judge_threshold) {
        bail!(
            "--judge-threshold must be between 0 and 1, got {}",
            a.judge_threshold
        );
    }
    let (provider, model, pricing) = provider_from(&a.llm)?;
    let arm = if framework == Framework::ThinkThrice {
        format!("{protocol}-{}", slug(&modules.to_string()))
    } else {
        format!("{protocol}-{framework}")
    };
    let out = a.out.clone().unwrap_or_else(|| {
        let stem = a
            .script
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| slug(&script.title));
        PathBuf::from("runs").join(format!("{}-{arm}-s{}", slug(&stem), a.seed))
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
        game_id: format!("{}-{arm}-s{}", slug(&script.title), a.seed),
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
            model: model.clone(),
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
        transcript_path: Some(out.join("transcript.jsonl")),
        prompts_dir: a.prompts_dir.clone(),
        language,
        progress: progress.clone(),
        inject_panic: None,
    };
    config.check()?;
    game::load_all_prompts(&script, &config)?;
    if let Some(addr) = a.metrics_addr {
        crate::telemetry::serve_metrics(addr)?;
    }
    let gateway_config = gateway_config(&a.llm);
    let gateway = Gateway::start(provider, pricing, gateway_config).await?;
    let result = game::play(script, config, gateway.clone()).await;
    if let Some(pb) = &progress {
        pb.finish_and_clear();
    }
    gateway.stop();
    let result = result.with_context(|| {
        format!(
            "game failed (the transcript so far is in {})",
            out.join("transcript.jsonl").display()
        )
    })?;
    let path = out.join("result.json");
    std::fs::write(&path, serde_json::to_string_pretty(&result)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    print_summary(&result, &out);
    if a.linger_secs > 0 {
        tokio::time::sleep(Duration::from_secs(a.linger_secs)).await;
    }
    Ok(())
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:5.1}%", v * 100.0))
        .unwrap_or_else(|| "    —".into())
}

fn print_summary(r: &GameResult, out: &Path) {
    let framework = match (&r.murderer_framework, r.modules.is_empty()) {
        (Some(m), _) => format!("{} (murderers: {m})", r.framework),
        (None, false) => format!("{} ({})", r.framework, r.modules),
        (None, true) => r.framework.clone(),
    };
    println!(
        "{} · {} · {} · seed {} · {}/{}",
        r.script, r.protocol, framework, r.seed, r.provider, r.model
    );
    if let Some(winner) = r.winner {
        let got: u32 = r
            .murderers
            .iter()
            .filter_map(|m| r.vote_counts.get(m))
            .sum();
        println!(
            "Winner: {}   (murderer {} got {} of {} votes; detection accuracy {:.2})",
            winner.as_str(),
            r.murderers.join(" and "),
            got,
            r.votes.len(),
            r.murderer_detection_accuracy
        );
        let votes: Vec<String> = r.votes.iter().map(|(v, t)| format!("{v} → {t}")).collect();
        println!("Votes: {}", votes.join("; "));
    } else {
        println!("No game was played ({}): evaluation only.", r.framework);
    }
    if let Some(m) = &r.majority {
        println!(
            "Elimination rule: eliminated {} → {}; plurality rule → {}",
            if m.eliminated.is_empty() {
                "nobody".to_string()
            } else {
                m.eliminated.join(" and ")
            },
            m.majority_winner.as_str(),
            m.plurality_winner.as_str()
        );
    }
    if let Some(m) = &r.mirage {
        let investigated: usize = m.investigated.values().map(Vec::len).sum();
        println!(
            "MIRAGE: Victory (reciprocal rank of the culprit) {:.3}; {} clues investigated of {}",
            m.victory, investigated, m.clues_available
        );
    }
    println!();
    println!("Factual QA ({})", r.factual.judge);
    println!("  {:<8} {:>7} {:>6}", "", "acc", "n");
    for (label, key, v) in [
        ("Own", "own", r.factual.own),
        ("CQ", "cq", r.factual.cq),
        ("MQ", "mq", r.factual.mq),
        ("Others", "", r.factual.others),
    ] {
        let n = if key.is_empty() {
            r.factual.counts.get("cq").copied().unwrap_or(0)
                + r.factual.counts.get("mq").copied().unwrap_or(0)
        } else {
            r.factual.counts.get(key).copied().unwrap_or(0)
        };
        println!("  {label:<8} {:>7} {n:>6}", pct(v));
    }
    println!(
        "Inferential accuracy: {}   informed: {}   (rationales judged by {})",
        pct(r.inferential_accuracy).trim(),
        pct(r.informed_accuracy).trim(),
        r.judges.get("rationale").map(String::as_str).unwrap_or("—")
    );
    if let Some(c) = &r.choice {
        println!();
        println!("Multiple choice (10/5/2 points)");
        println!(
            "  {:<10} {:>7} {:>6} {:>9}",
            "category", "acc", "n", "points"
        );
        for (cat, t) in &c.by_category {
            println!(
                "  {cat:<10} {:>7} {:>6} {:>4}/{:<4}",
                pct(t.accuracy()),
                t.questions,
                t.points,
                t.possible
            );
        }
        println!(
            "  {:<10} {:>7} {:>6} {:>4}/{:<4}  score {}",
            "overall",
            pct(c.overall.accuracy()),
            c.overall.questions,
            c.overall.points,
            c.overall.possible,
            pct(c.overall.score()).trim()
        );
        if let Some((m, sd)) = c.score_mean_std() {
            println!(
                "  score over {} repeats: {:.3} ± {:.3} (mean ± std)",
                c.repeats, m, sd
            );
        }
    }
    if let Some(m) = &r.mirage_scores {
        let f = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "—".into());
        println!();
        println!(
            "MIRAGE metrics: TII {}  CIC {}  CIC (key) {}  ICI {}  SCI {}   (ICI/SCI judge: {})",
            f(m.tii),
            f(m.cic),
            f(m.cic_key),
            f(m.ici),
            f(m.sci),
            r.judges.get("mirage").map(String::as_str).unwrap_or("—")
        );
    }
    let u = &r.usage;
    println!();
    println!(
        "Usage: {} calls, {} prompt + {} completion tokens, ${:.4}, {} retries, {} parse failures",
        u.calls, u.prompt_tokens, u.completion_tokens, u.cost_usd, u.retries, u.parse_failures
    );
    println!(
        "Wrote {} and {}",
        out.join("transcript.jsonl").display(),
        out.join("result.json").display()
    );
}

/// Writes the report and says where, and what it holds.
fn report(a: &ReportArgs) -> Result<()> {
    if a.resamples == 0 {
        bail!("--resamples must be at least 1");
    }
    let bootstrap = crate::report::Bootstrap {
        resamples: a.resamples,
        seed: a.seed,
        ..crate::report::Bootstrap::default()
    };
    let (report, written) = crate::report::generate(&a.path, a.out.as_deref(), bootstrap)?;
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    if let Some(why) = &written.png_skipped {
        eprintln!("note: figures written as SVG only: {why}");
    }
    println!("{}", report.summary());
    for s in &report.sections {
        let title = match s {
            crate::report::Section::Table(t) => &t.title,
            crate::report::Section::Figure(f) => &f.title,
        };
        println!("  {title}");
    }
    println!(
        "Wrote {} files to {} (open report.html or report.md)",
        written.files.len(),
        written.dir.display()
    );
    Ok(())
}
