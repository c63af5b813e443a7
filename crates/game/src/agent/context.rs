//! What every framework does the same way: call the model through the gateway with the character's
//! system prompt and a reproducible sample index, recall memory, pick one of a list of options, and
//! record the turn's private steps.
//!
//! One `Context` per character, owned by the character actor and lent to its agent for each request.
//! It holds the character's [`CharacterView`], never the script.
//!
//! **Units of work run together.** Where a request makes calls that do not depend on one another (a
//! round's sensor readings, the checks of a Self-Verification attempt, the evaluation answers), the
//! agent [forks](Context::fork_calls) one context per unit, runs the units together and
//! [joins](Context::join) them back in a fixed order. A fork shares the character's view, system prompt
//! and handles, and has a turn record and a sample counter of its own: either the next indices of the
//! character's counter, reserved in the order a sequential run would draw them (a unit of known size),
//! or a sequence of its own (a unit whose size is not known beforehand, [`Context::fork_unit`]). Joining
//! replays the unit's steps and usage into the parent as if its calls had been made there, so the turn
//! — and the transcript — is the same whatever order the units' calls completed in.

use std::sync::Arc;

use minijinja::context;
use ractor::ActorRef;
use serde_json::{json, Value};

use super::bound::CallBound;
use super::config::{AgentConfig, AgentError, SamplePlanError};
use super::framework::Framework;
use super::prompts::{PromptError, Prompts};
use super::turn::{Turn, TurnBuilder};
use super::view::CharacterView;
use crate::memory::{MemoryError, MemoryMsg, Recalled};
use sleuth_llm::{
    window, CallTags, ChatRequest, Gateway, LlmError, Message, Phase, ResponseSchema,
    SampleCounter, TokenLogprob,
};
use sleuth_script::rules::{HostLines, ProtocolSettings};

/// Token budget of a vote's reason ([`Context::pick_vote`]).
const VOTE_TOKENS: u32 = 150;

/// The handles a context is built from.
pub(super) struct ContextArgs {
    pub framework: Framework,
    pub protocol: ProtocolSettings,
    pub view: CharacterView,
    pub config: AgentConfig,
    pub gateway: Gateway,
    pub memory: ActorRef<MemoryMsg>,
    pub prompts: Arc<Prompts>,
    pub game_id: String,
    pub seed: u64,
    /// The game's bound on model calls in flight.
    pub bound: CallBound,
}

/// A character's shared machinery (see the module documentation).
pub struct Context {
    framework: Framework,
    protocol: ProtocolSettings,
    /// Shared with the context's forks; copied only when an act is released.
    view: Arc<CharacterView>,
    config: AgentConfig,
    gateway: Gateway,
    memory: ActorRef<MemoryMsg>,
    prompts: Arc<Prompts>,
    game_id: String,
    /// Whether recall returns nothing: ThinkThrice without MR, and the no-play references.
    memoryless: bool,
    /// The system prompt: the framework's persona and the character's script as released so far.
    system: Arc<str>,
    /// This character's sample indices: (game seed, its name, its own call counter), or a fork's.
    samples: SampleCounter,
    /// For a fork of known size: where its indices start and how many calls it was given.
    plan: Option<Plan>,
    bound: CallBound,
    turn: TurnBuilder,
    /// The provider's prompt-cache key of this character's calls ([`prompt_cache_key`]).
    cache_key: Arc<str>,
    /// A system prompt built on the script's summary (MIRAGE's), sent in place of the script when a
    /// call would not fit the model's window otherwise ([`Context::set_brief`]).
    brief: Option<Arc<str>>,
    /// The model's context window, asked of the gateway once per character (shared with forks).
    window: Arc<tokio::sync::OnceCell<Option<u32>>>,
}

/// The indices reserved for a fork of known size.
#[derive(Debug, Clone, Copy)]
struct Plan {
    start: u64,
    calls: u64,
}

/// The variables of every system prompt, from what the character may know and the protocol's settings.
/// A function of its own so that a test can render every framework's system template with exactly them.
pub(super) fn system_vars(v: &CharacterView, protocol: &ProtocolSettings) -> minijinja::Value {
    context! {
        name => v.name(), title => v.title(), murderer => v.is_murderer(),
        premise => v.premise(), victims => v.victims(), cast => v.cast(),
        suspects => v.suspects(),
        story => v.story(), acts => v.acts(), act_count => v.act_count(),
        performance => v.performance(),
        abilities => v.abilities(), timeline => v.timeline(),
        relationships => v.relationships(), goals => v.goals(), secrets => v.secrets(),
        protocol => protocol.protocol.as_str(),
        force_expose => protocol.mirage.force_expose,
    }
}

/// The prompt-cache key of a character's calls: one per (framework, script, character), so that a
/// provider routes the calls that share the character's long system prompt — in every game of a sweep
/// that plays the same script and arm — to the same cache. A digest, so it names nothing.
pub(super) fn prompt_cache_key(framework: Framework, title: &str, name: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [framework.as_str(), title, name] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("sleuth-{}", hex::encode(&h.finalize()[..8]))
}

/// A JSON response schema with a name (the call purpose).
pub(super) fn schema(name: &str, schema: Value) -> ResponseSchema {
    ResponseSchema::json(name, schema)
}

impl Context {
    pub(super) fn new(a: ContextArgs) -> Context {
        let memoryless = match a.framework {
            Framework::ThinkThrice => !a.config.modules.mr,
            f => !f.plays(),
        };
        let samples = SampleCounter::new(a.seed, a.view.name());
        let cache_key = prompt_cache_key(a.framework, a.view.title(), a.view.name()).into();
        Context {
            framework: a.framework,
            protocol: a.protocol,
            view: Arc::new(a.view),
            config: a.config,
            gateway: a.gateway,
            memory: a.memory,
            prompts: a.prompts,
            game_id: a.game_id,
            memoryless,
            system: Arc::from(""),
            samples,
            plan: None,
            bound: a.bound,
            turn: TurnBuilder::default(),
            cache_key,
            brief: None,
            window: Arc::default(),
        }
    }

    /// A context for a unit of work that makes exactly `calls` model calls, run alongside other units
    /// of this request: it takes this character's next `calls` sample indices, so units forked in the
    /// order a sequential run would make their calls get the indices that run drew. [`Context::join`]
    /// checks the unit made exactly that many calls.
    pub fn fork_calls(&mut self, calls: u64) -> Context {
        let start = self.samples.calls();
        let samples = self.samples.reserve(calls);
        self.fork_with(samples, Some(Plan { start, calls }))
    }

    /// A context for a unit of work whose number of calls is not known beforehand, run alongside other
    /// units: a sample sequence of its own, `{name}#{unit}` (`unit` unique within the character).
    pub fn fork_unit(&self, unit: &str) -> Context {
        self.fork_with(self.samples.fork(unit), None)
    }

    fn fork_with(&self, samples: SampleCounter, plan: Option<Plan>) -> Context {
        Context {
            framework: self.framework,
            protocol: self.protocol,
            view: Arc::clone(&self.view),
            config: self.config.clone(),
            gateway: self.gateway.clone(),
            memory: self.memory.clone(),
            prompts: Arc::clone(&self.prompts),
            game_id: self.game_id.clone(),
            memoryless: self.memoryless,
            system: Arc::clone(&self.system),
            samples,
            plan,
            bound: self.bound.clone(),
            turn: TurnBuilder::default(),
            cache_key: Arc::clone(&self.cache_key),
            brief: self.brief.clone(),
            window: Arc::clone(&self.window),
        }
    }

    /// Takes a finished unit back: its steps and usage are recorded in this context's turn as if its
    /// calls had been made here, after everything recorded so far. Units are joined in a fixed order
    /// (the order a sequential run would make them), never in the order they finished.
    pub fn join(&mut self, unit: Context) -> Result<(), SamplePlanError> {
        unit.check_plan()?;
        self.turn.absorb(unit.turn);
        Ok(())
    }

    /// A unit of known size that made more or fewer calls than it was given would share indices with
    /// the next unit or skip some: a bug in the unit's plan, reported rather than played on.
    pub(super) fn check_plan(&self) -> Result<(), SamplePlanError> {
        match self.plan {
            Some(p) if self.samples.calls() - p.start != p.calls => Err(SamplePlanError {
                agent: self.name().to_string(),
                planned: p.calls,
                made: self.samples.calls() - p.start,
            }),
            _ => Ok(()),
        }
    }

    pub fn name(&self) -> &str {
        self.view.name()
    }

    /// What this character may know.
    pub fn view(&self) -> &CharacterView {
        &self.view
    }

    pub fn murderer(&self) -> bool {
        self.view.is_murderer()
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    pub fn protocol(&self) -> &ProtocolSettings {
        &self.protocol
    }

    pub fn prompts(&self) -> &Prompts {
        &self.prompts
    }

    /// The current system prompt.
    pub fn system(&self) -> &str {
        &self.system
    }

    /// The error for a request this character's framework does not handle.
    pub fn unsupported(&self, request: &'static str) -> AgentError {
        AgentError::Unsupported {
            framework: self.framework.as_str(),
            request,
        }
    }

    /// The character actor's side: the view released up to `act`, with the system prompt to match.
    pub(super) fn release(&mut self, act: u32) {
        Arc::make_mut(&mut self.view).release(act);
    }

    pub(super) fn release_all(&mut self) {
        Arc::make_mut(&mut self.view).release_all();
    }

    /// The games of a sweep build equal prompts for equal characters: one copy is kept for all of them
    /// ([`sleuth_base::memo::shared_text`]).
    pub(super) fn set_system(&mut self, system: String) {
        self.system = sleuth_base::memo::shared_text(system);
    }

    /// Starts a request's turn afresh: steps and usage of a failed request are not carried over.
    pub(super) fn begin_turn(&mut self) {
        self.turn = TurnBuilder::default();
    }

    pub(super) fn finish_turn(&mut self, text: String) -> Turn {
        self.turn.finish(text)
    }

    /// Records a private module step of this character, carrying the usage accrued since the last step.
    /// Window marks (`llm/window.rs`) in the text are taken out: they are for the gateway only.
    pub fn step(&mut self, kind: &str, text: String, data: Option<Value>) {
        let name = self.view.name().to_string();
        self.turn.step(kind, &name, window::strip(&text), data);
    }

    /// The context window of this character's model, if it has one (configured, reported by the
    /// endpoint, or known): asked of the gateway once per character.
    pub async fn context_window(&self) -> Option<u32> {
        *self
            .window
            .get_or_init(|| async {
                self.gateway
                    .context_window(&self.config.model)
                    .await
                    .ok()
                    .flatten()
            })
            .await
    }

    /// A system prompt built on a summary of the script, for calls that would not fit the model's
    /// window with the script itself (`None`: there is none). Only MIRAGE's agent writes one: the other
    /// papers give their agents no summary, so their calls keep the script and fail if it cannot fit.
    pub fn set_brief(&mut self, brief: Option<String>) {
        self.brief = brief.map(Arc::from);
    }

    /// The system prompt a call with `user` and `max_tokens` is sent: the script's, or the brief when
    /// the script would not fit the window even with every dialogue line and memory chunk left out.
    async fn system_for(&self, user: &str, max_tokens: u32) -> (Arc<str>, bool) {
        let Some(brief) = &self.brief else {
            return (Arc::clone(&self.system), false);
        };
        let Some(w) = self.context_window().await else {
            return (Arc::clone(&self.system), false);
        };
        let least = window::least_tokens(&[
            Message::system(Arc::clone(&self.system)),
            Message::user(user),
        ]);
        let target = (f64::from(w) * window::TARGET_SHARE) as u64;
        if least + u64::from(max_tokens) > target {
            (Arc::clone(brief), true)
        } else {
            (Arc::clone(&self.system), false)
        }
    }

    /// Renders the framework's system prompt from the view: persona, rules, the cast and the suspects who
    /// do not play, and the character's script as released. Every framework's `system.j2` gets the same
    /// variables ([`system_vars`]), plus `extra` (the omniscient reference adds every character's script).
    pub fn render_system(&self, extra: minijinja::Value) -> Result<String, PromptError> {
        self.prompts.render(
            "system",
            context! { ..system_vars(&self.view, &self.protocol), ..extra },
        )
    }

    fn tags(&self, phase: Phase, purpose: &str) -> CallTags {
        CallTags {
            game: self.game_id.clone(),
            agent: self.name().to_string(),
            framework: self.framework.as_str().to_string(),
            phase,
            purpose: purpose.to_string(),
        }
    }

    /// The sample index of the next call (the scheme of `llm::SampleCounter`).
    fn next_sample(&mut self) -> u64 {
        self.samples.next_index()
    }

    /// One call with the character's system prompt: the reply's text and its parsed JSON, if any.
    pub async fn call(
        &mut self,
        purpose: &str,
        user: String,
        max_tokens: u32,
        schema: Option<ResponseSchema>,
        phase: Phase,
    ) -> Result<(String, Option<Value>), AgentError> {
        self.call_full(None, purpose, user, max_tokens, schema, phase, false)
            .await
            .map(|(text, json, _)| (text, json))
    }

    /// The game's bound on model calls in flight, for batching this character's independent work
    /// ([`super::together`]).
    pub fn bound(&self) -> &CallBound {
        &self.bound
    }

    /// One call through the gateway, with `system` in place of the character's system prompt if given;
    /// with `logprobs`, the token log-probabilities come back too when the provider reports them.
    #[allow(clippy::too_many_arguments)]
    pub async fn call_full(
        &mut self,
        system: Option<&str>,
        purpose: &str,
        user: String,
        max_tokens: u32,
        schema: Option<ResponseSchema>,
        phase: Phase,
        logprobs: bool,
    ) -> Result<(String, Option<Value>, Option<Vec<TokenLogprob>>), AgentError> {
        // The character's own system prompt is shared with the request (a reference count), not
        // copied: many of its calls may wait for an endpoint's slot at once.
        let (system, summarized): (Arc<str>, bool) = match system {
            Some(s) => (s.into(), false),
            None => self.system_for(&user, max_tokens).await,
        };
        let c = &self.config;
        let (model, temperature, top_p) = (c.model.clone(), c.temperature, c.top_p);
        let req = ChatRequest {
            model,
            messages: vec![Message::system(system), Message::user(user)],
            temperature,
            top_p,
            max_tokens,
            schema,
            logprobs,
            sample: self.next_sample(),
            cache_key: Some(self.cache_key.to_string()),
        };
        let tags = self.tags(phase, purpose);
        let permit = self.bound.enter().await;
        let answer = self.gateway.chat(req, tags).await;
        drop(permit);
        let noted = |mut u: sleuth_llm::Usage| {
            if summarized {
                u.shortened.script_summaries += 1;
                u.shortened.calls = u.shortened.calls.max(1);
            }
            u
        };
        match answer {
            Ok(out) => {
                self.turn.spend(noted(out.usage));
                Ok((out.response.content, out.json, out.response.logprobs))
            }
            Err(e) => {
                self.turn.spend(noted(e.usage()));
                Err(match e {
                    e @ LlmError::ContextWindow { .. } => AgentError::ContextWindow {
                        script: self.view.title().to_string(),
                        character: self.name().to_string(),
                        source: e,
                    },
                    e => e.into(),
                })
            }
        }
    }

    /// The agent's top-k records for `query` as plain texts, recorded as a private `memory_recall` step.
    /// Empty for a memoryless agent: ThinkThrice without MR, and the no-play references.
    pub async fn recall_texts(
        &mut self,
        query: &str,
        phase: Phase,
    ) -> Result<Vec<String>, AgentError> {
        if self.memoryless {
            return Ok(Vec::new());
        }
        let tags = self.tags(phase, "memory_query");
        let name = self.name().to_string();
        let k = self.config.top_k;
        let text = query.to_string();
        let r = self
            .memory
            .call(
                |reply| MemoryMsg::Query {
                    agent: name,
                    text,
                    k,
                    tags,
                    reply,
                },
                None,
            )
            .await;
        let (records, usage) = match r {
            Ok(ractor::rpc::CallResult::Success(x)) => x?,
            _ => return Err(MemoryError::Unavailable.into()),
        };
        self.turn.spend(usage);
        let texts: Vec<&str> = records.iter().map(|r| r.text.as_str()).collect();
        let events: Vec<u64> = records.iter().map(|r| r.event).collect();
        self.step(
            "memory_recall",
            texts.join("\n"),
            Some(json!({ "query": query, "events": events })),
        );
        // Marked, so that a prompt too long for the model's window loses these chunks (the least
        // relevant first) before anything else that is not dialogue.
        Ok(texts.iter().map(|t| window::recalled(t)).collect())
    }

    /// Everything this character has seen since event `after`, in order (MIRAGE reads the whole
    /// conversation rather than a top-k).
    pub async fn history(&self, after: Option<u64>) -> Result<Vec<Recalled>, AgentError> {
        let agent = self.name().to_string();
        match self
            .memory
            .call(
                |reply| MemoryMsg::History {
                    agent,
                    after,
                    reply,
                },
                None,
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(x)) => Ok(x),
            _ => Err(MemoryError::Unavailable.into()),
        }
    }

    /// One structured call that chooses one of `choices` (field `key`) and says why (field `text_key`):
    /// the shape of asking, voting and multiple choice. The gateway has already checked the choice is one
    /// of the allowed values.
    pub async fn pick(
        &mut self,
        purpose: &str,
        user: String,
        (key, choices): (&str, &[String]),
        text_key: &str,
        max_tokens: u32,
        phase: Phase,
    ) -> Result<(String, String), AgentError> {
        let s = schema(
            purpose,
            json!({"type": "object", "properties": {key: {"type": "string", "enum": choices}, text_key: {"type": "string"}}, "required": [key, text_key], "additionalProperties": false}),
        );
        let (_, v) = self.call(purpose, user, max_tokens, Some(s), phase).await?;
        let v = v.unwrap_or(Value::Null);
        let chosen = v[key]
            .as_str()
            .map(str::to_string)
            .or_else(|| choices.first().cloned())
            .unwrap_or_default();
        Ok((chosen, v[text_key].as_str().unwrap_or_default().to_string()))
    }

    /// The vote's one structured call: one of `candidates` (field `vote`) and the reason, from the
    /// framework's rendered `vote` prompt. ThinkThrice, PLAYER* and the baselines vote through it, so
    /// their votes have the same form and budget whatever their prompts hold.
    pub async fn pick_vote(
        &mut self,
        user: String,
        candidates: &[String],
    ) -> Result<(String, String), AgentError> {
        self.pick(
            "vote",
            user,
            ("vote", candidates),
            "reason",
            VOTE_TOKENS,
            Phase::Gameplay,
        )
        .await
    }

    /// The host's phrasing in the script's language (queries, name lists).
    pub fn lines(&self) -> HostLines {
        HostLines(self.view.language())
    }

    /// The victims' names joined as a sentence would ("A and B").
    pub fn victim_names(&self) -> String {
        let names: Vec<&str> = self
            .view
            .victims()
            .iter()
            .map(|v| v.name.as_str())
            .collect();
        self.lines().join(&names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::view::tests::example;
    use crate::agent::view::OmniscientView;
    use sleuth_script::{Language, Script};

    /// The system prompt of every framework, in both languages, as `render_system` renders it.
    fn systems(script: &Script, who: &str) -> Vec<(String, String)> {
        let mut view = CharacterView::of(script, who).expect("character exists");
        view.release_all();
        let everyone = OmniscientView::of(script);
        let mut out = Vec::new();
        for f in Framework::ALL {
            for lang in [Language::En, Language::Zh] {
                let p = Prompts::load(f.as_str(), lang, None, &["system"])
                    .unwrap_or_else(|e| panic!("{e}"));
                let vars = context! {
                    ..system_vars(&view, &ProtocolSettings::default()),
                    ..context! { everyone => everyone.everyone() }
                };
                let label = format!("{f} ({})", lang.code());
                let text = p
                    .render("system", vars)
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                out.push((label, text));
            }
        }
        out
    }

    /// The system prompt of `who` in every framework but OP (which shows every script, released or
    /// not), both languages, with the script's acts handed out up to `act`.
    fn systems_at(script: &Script, who: &str, act: u32) -> Vec<(String, String)> {
        let mut view = CharacterView::of(script, who).expect("character exists");
        view.release(act);
        let mut out = Vec::new();
        for f in Framework::ALL.into_iter().filter(|f| *f != Framework::Op) {
            for lang in [Language::En, Language::Zh] {
                let p = Prompts::load(f.as_str(), lang, None, &["system"])
                    .unwrap_or_else(|e| panic!("{e}"));
                let label = format!("{f} ({})", lang.code());
                let text = p
                    .render("system", system_vars(&view, &ProtocolSettings::default()))
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                out.push((label, text));
            }
        }
        out
    }

    /// Prompts are laid out for providers' prefix caches (issue 19): what every character shares comes
    /// first, then the character, and a released act is appended at the end, so the prompt before the
    /// release is a prefix of the one after it.
    #[test]
    fn system_prompts_put_the_shared_part_first_and_append_released_acts() {
        let mut script = example("night-ferry.toml");
        script.acts = 2;
        for c in &mut script.characters {
            let first = c.acts.first().cloned().unwrap_or_default();
            c.acts = vec![first, format!("Later, {} saw the lantern go out.", c.name)];
        }
        let (a, b) = (&script.characters[0].name, &script.characters[1].name);
        let before = systems_at(&script, a, 1);
        let after = systems_at(&script, a, 2);
        for ((label, one), (_, two)) in before.iter().zip(&after) {
            assert!(
                two.starts_with(one.as_str()),
                "{label}: releasing act 2 rewrote the prompt instead of appending to it"
            );
            assert!(
                two.len() > one.len() && two.contains("lantern go out"),
                "{label}"
            );
        }
        let other = systems_at(&script, b, 1);
        let everyone = example("night-ferry.toml");
        let op = systems(&everyone, a)
            .into_iter()
            .zip(systems(&everyone, b))
            .filter(|((l, _), _)| l.starts_with("op"))
            .map(|((l, x), (_, y))| ((l.clone(), x), (l, y)));
        for ((label, mine), (_, theirs)) in before.into_iter().zip(other).chain(op) {
            let persona = ["### Who you are", "### 你的身份"]
                .iter()
                .find_map(|h| mine.find(h))
                .unwrap_or_else(|| panic!("{label}: no persona heading"));
            assert!(persona > 0, "{label}: the persona comes first");
            assert_eq!(
                mine[..persona],
                theirs[..persona],
                "{label}: two characters' prompts differ before their persona"
            );
        }
    }

    /// Every system prompt lists the suspects who do not play, with their descriptions, for a script that
    /// has them, and says nothing of suspects for a script without a list.
    #[test]
    fn every_system_prompt_lists_the_suspects_who_do_not_play() {
        let script = example("orchard-press.toml");
        for (label, text) in systems(&script, "Tom Ashby") {
            for s in script.non_player_suspects() {
                assert!(text.contains(&s.name), "{label}: {} missing", s.name);
                assert!(text.contains(&s.description), "{label}: {}", s.name);
            }
            assert!(!text.contains("culprit = "), "{label}");
        }
        let ferry = example("night-ferry.toml");
        for (label, text) in systems(&ferry, &ferry.characters[0].name) {
            for header in [
                "Suspects who are not",
                "不是玩家的嫌疑人",
                "不是角色的嫌疑人",
            ] {
                assert!(!text.contains(header), "{label}: {header}");
            }
        }
    }
}
