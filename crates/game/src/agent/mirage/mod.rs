//! The MIRAGE agent (MIRAGE §2.3 and Appendix H): every output in `### THOUGHT:` / `### RESPONSE:` form,
//! and the paper's auxiliary modules, identical for every model.
//!
//! - **Summarization** (`summary.rs`). When the character's script (the system prompt) is longer than
//!   `script_summary_tokens`, the agent summarizes it once — again whenever a stage is released — and
//!   plays from the summary. When what it has seen since its last summary is longer than
//!   `history_tokens`, the older part (whole events) is folded into a running summary and only the newest
//!   events, up to half the budget, stay verbatim. Both summaries are private `summary` events. A cap of
//!   0 turns that summary off.
//! - **Trust and Suspicion.** After each open conversation the agent scores every other character with
//!   two separate calls, as integers from 0 (none) to 10 (complete), normalised to 0..=1 (divided by 10)
//!   in the turn's data. The paper's 0-1-2 scale is too coarse to be useful here: most judgements land
//!   on 0, and a character whom nobody scores above 0 has no TII at all.
//! - **Rerun.** The gateway re-asks unparseable replies with the format restated and counts every parse
//!   failure in the usage (`parse_failures`); nothing is repaired here.
//!
//! The agent reads the whole conversation it may see, in order (the memory's history), not a top-k: that
//! is how the paper feeds `{history}` to every prompt. Each reply's THOUGHT becomes a private `thought`
//! event carrying that call's usage.
//!
//! Gameplay calls use the summary in place of the script when there is one; evaluation (shared with the
//! other frameworks, `answers.rs`) still sees the full script, so arms are compared on what they
//! learned in play, not on how their scripts were compressed.

use minijinja::context;
use serde_json::{json, Map, Value};

mod summary;

use super::context::Context;
use super::interface::{Agent, ClueChoice};
use super::{together, AgentError};
use sleuth_llm::{sections_schema_line, split_sections, LlmError, Phase, ResponseSchema, Usage};

/// Gameplay prompts of this framework.
pub const PURPOSES: &[&str] = &[
    "system",
    "system_summary",
    "summarize_script",
    "summarize_history",
    "history",
    "format",
    "introduce",
    "converse",
    "interact",
    "answer",
    "trust",
    "suspicion",
    "accuse",
    "vote",
];

/// Tokens a reply may spend on its THOUGHT on top of the budget of what it says.
const THOUGHT_TOKENS: u32 = 200;
/// The top of the trust and suspicion scale (integers 0..=10).
pub(crate) const SCORE_MAX: u32 = 10;
/// Budget of a choice with a short reason (an accusation, a vote, an interaction).
const CHOICE_TOKENS: u32 = 200;
/// The MIRAGE agent and its state.
#[derive(Debug, Default)]
pub struct Mirage {
    /// The system prompt built on the script summary, used by gameplay calls instead of the full script;
    /// `None` while the script fits under the cap.
    brief: Option<String>,
    /// Acts the script was last measured (and perhaps summarized) for.
    prepared_for: Option<u32>,
    /// The running summary of the history up to `summarized_until`.
    history_summary: Option<String>,
    /// The last event folded into `history_summary`.
    summarized_until: Option<u64>,
    /// What the character did in its last interaction (the paper's `last_action`).
    last_action: Option<Value>,
}

/// The RESPONSE schema of free text (speech, answers, summaries).
fn text_schema() -> Value {
    json!({"type": "string"})
}

/// An error for a structured reply the gateway accepted but that cannot be used.
fn unusable(purpose: &str, reason: String) -> AgentError {
    AgentError::Llm(LlmError::Unparseable {
        purpose: purpose.to_string(),
        schema: purpose.to_string(),
        attempts: 1,
        reason,
        usage: Usage::default(),
    })
}

/// The text of a free-text RESPONSE.
fn text_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().trim().to_string()
}

impl Mirage {
    /// One gameplay call in the two-section format: the prompt, then the format paragraph with the
    /// RESPONSE's schema line (the gateway's re-ask and the simulated model both find it there). The
    /// THOUGHT is recorded as a private step; the checked RESPONSE value is returned.
    async fn sections_call(
        &self,
        cx: &mut Context,
        purpose: &str,
        prompt: String,
        schema: Value,
        max_tokens: u32,
    ) -> Result<Value, AgentError> {
        let system = self.brief.clone();
        Self::sections_call_with(cx, system.as_deref(), purpose, prompt, schema, max_tokens).await
    }

    /// [`Mirage::sections_call`] with `system` in place of the character's system prompt (if given).
    async fn sections_call_with(
        cx: &mut Context,
        system: Option<&str>,
        purpose: &str,
        prompt: String,
        schema: Value,
        max_tokens: u32,
    ) -> Result<Value, AgentError> {
        let format = cx.prompts().render(
        "format",
        context! { text => schema == text_schema(), schema_line => sections_schema_line(&schema) },
    )?;
        // The format must stay one paragraph: the re-ask and the simulated model split prompts at blank
        // lines.
        let format: Vec<&str> = format.lines().filter(|l| !l.trim().is_empty()).collect();
        let user = format!("{prompt}\n\n{}", format.join("\n"));
        let request_schema = ResponseSchema::sections(purpose, schema);
        let (content, value, _) = cx
            .call_full(
                system,
                purpose,
                user,
                max_tokens,
                Some(request_schema),
                Phase::Gameplay,
                false,
            )
            .await?;
        let thought = split_sections(&content)
            .map(|s| s.thought)
            .unwrap_or_default();
        if !thought.is_empty() {
            cx.step("thought", thought, Some(json!({ "purpose": purpose })));
        }
        value.ok_or_else(|| unusable(purpose, "the reply carried no RESPONSE value".into()))
    }

    /// One module's scoring call in a unit of its own, handed back with its result for joining.
    async fn scored(
        &self,
        mut unit: Context,
        module: &'static str,
        prompt: String,
        schema: Value,
        budget: u32,
    ) -> (&'static str, Context, Result<Value, AgentError>) {
        let r = self
            .sections_call(&mut unit, module, prompt, schema, budget)
            .await;
        (module, unit, r)
    }

    /// A structured choice among `choices` with a reason, in sections form.
    async fn choose(
        &self,
        cx: &mut Context,
        purpose: &str,
        prompt: String,
        (key, choices): (&str, &[String]),
        reason_key: &str,
    ) -> Result<(String, String), AgentError> {
        let schema = json!({"type": "object", "properties": {
        key: {"type": "string", "enum": choices},
        reason_key: {"type": "string"},
    }, "required": [key, reason_key], "additionalProperties": false});
        let v = self
            .sections_call(cx, purpose, prompt, schema, CHOICE_TOKENS + THOUGHT_TOKENS)
            .await?;
        let chosen = v[key]
            .as_str()
            .filter(|c| choices.iter().any(|x| x == c))
            .ok_or_else(|| unusable(purpose, format!("`{key}` is none of the options")))?;
        Ok((
            chosen.to_string(),
            v[reason_key]
                .as_str()
                .unwrap_or_default()
                .trim()
                .to_string(),
        ))
    }
}

impl Agent for Mirage {
    async fn introduce(&mut self, cx: &mut Context, host_line: &str) -> Result<String, AgentError> {
        self.converse(cx, host_line, 0).await
    }

    /// A speech: the self-introduction (iteration 0) or one turn of an open conversation.
    async fn converse(
        &mut self,
        cx: &mut Context,
        host_line: &str,
        iteration: u32,
    ) -> Result<String, AgentError> {
        self.prepare(cx).await?;
        let history = self.history_block(cx).await?;
        let purpose = if iteration == 0 {
            "introduce"
        } else {
            "converse"
        };
        let prompt = cx.prompts().render(
            purpose,
            context! {
                history => history, host_line => host_line, iteration => iteration,
                name => cx.name(), victims => cx.victim_names(), murderer => cx.murderer(),
            },
        )?;
        let budget = cx.config().max_tokens + THOUGHT_TOKENS;
        let v = self
            .sections_call(cx, purpose, prompt, text_schema(), budget)
            .await?;
        Ok(text_of(&v))
    }

    /// Ask or Investigate. Returns what the character says (its question, or its words as it searches) and
    /// `{"action": "ask", "target", "question"}` or `{"action": "investigate", "clue"}`.
    async fn interact(
        &mut self,
        cx: &mut Context,
        candidates: &[String],
        clues: &[ClueChoice],
    ) -> Result<(String, Value), AgentError> {
        self.prepare(cx).await?;
        let history = self.history_block(cx).await?;
        // A clue is offered by its id and where it is found: the id keeps the choice exact, the place is
        // what a player chooses by.
        let offers: Vec<String> = clues
            .iter()
            .map(|c| format!("{}: {}", c.id, c.place))
            .collect();
        let mut actions = vec!["ask"];
        if !clues.is_empty() {
            actions.push("investigate");
        }
        let mut props = Map::new();
        props.insert("action".into(), json!({"type": "string", "enum": actions}));
        props.insert(
            "target".into(),
            json!({"type": "string", "enum": candidates, "description": "whom to ask"}),
        );
        if !clues.is_empty() {
            props.insert(
            "clue".into(),
            json!({"type": "string", "enum": offers, "description": "which clue to investigate"}),
        );
        }
        props.insert(
        "content".into(),
        json!({"type": "string", "description": "the question, or what you say as you investigate"}),
    );
        let required: Vec<&String> = props.keys().collect();
        let schema = json!({"type": "object", "properties": props, "required": required, "additionalProperties": false});
        let prompt = cx.prompts().render(
            "interact",
            context! {
                history => history, candidates => candidates, clues => offers,
                last_action => self.last_action, victims => cx.victim_names(),
            },
        )?;
        let v = self
            .sections_call(
                cx,
                "interact",
                prompt,
                schema,
                CHOICE_TOKENS + THOUGHT_TOKENS,
            )
            .await?;
        let content = v["content"].as_str().unwrap_or_default().trim().to_string();
        match v["action"].as_str() {
            Some("investigate") => {
                let chosen = v["clue"].as_str().unwrap_or_default();
                let clue = offers
                    .iter()
                    .position(|o| o == chosen)
                    .map(|i| clues[i].id.clone())
                    .ok_or_else(|| unusable("interact", format!("no clue `{chosen}` on offer")))?;
                self.last_action =
                    Some(json!({"action": "investigate", "clue": chosen, "content": content}));
                Ok((content, json!({"action": "investigate", "clue": clue})))
            }
            Some("ask") => {
                let target = v["target"]
                    .as_str()
                    .filter(|t| candidates.iter().any(|c| c == t))
                    .ok_or_else(|| unusable("interact", "asked nobody on offer".into()))?
                    .to_string();
                self.last_action =
                    Some(json!({"action": "ask", "target": target, "content": content}));
                Ok((
                    content.clone(),
                    json!({"action": "ask", "target": target, "question": content}),
                ))
            }
            other => Err(unusable("interact", format!("unknown action {other:?}"))),
        }
    }

    /// The Trust and Suspicion modules: two calls, each scoring every one of `others` from 0 to 10. Returns
    /// one line per character and `{"trust": {name: score}, "suspicion": {name: score}, "scale": 10}` with
    /// scores normalised to 0..=1.
    async fn score(
        &mut self,
        cx: &mut Context,
        others: &[String],
    ) -> Result<(String, Value), AgentError> {
        self.prepare(cx).await?;
        let history = self.history_block(cx).await?;
        // The two modules read the same history and not each other's scores: their calls run together,
        // with the indices the trust-then-suspicion order drew, and are joined in that order.
        let mut asks = Vec::new();
        for module in ["trust", "suspicion"] {
            let mut props = Map::new();
            for o in others {
                props.insert(
                    o.clone(),
                    json!({"type": "integer", "minimum": 0, "maximum": SCORE_MAX}),
                );
            }
            let schema = json!({"type": "object", "properties": props, "required": others, "additionalProperties": false});
            let prompt = cx.prompts().render(
            module,
            context! { history => history, others => others, victims => cx.victim_names(), top => SCORE_MAX },
        )?;
            let budget = 40 + 12 * others.len() as u32 + THOUGHT_TOKENS;
            asks.push((module, prompt, schema, budget, cx.fork_calls(1)));
        }
        let bound = cx.bound().clone();
        let mut work = Vec::with_capacity(asks.len());
        for (module, prompt, schema, budget, unit) in asks {
            work.push(self.scored(unit, module, prompt, schema, budget));
        }
        let answered = together(&bound, work).await;
        let mut raw: Vec<Vec<f64>> = Vec::with_capacity(2);
        for (module, unit, r) in answered {
            let v = r?;
            cx.join(unit)?;
            let mut row = Vec::with_capacity(others.len());
            for o in others {
                let score = v[o.as_str()]
                    .as_f64()
                    .ok_or_else(|| unusable(module, format!("no score for {o}")))?;
                row.push(score);
            }
            raw.push(row);
        }
        let suspicion = raw.pop().unwrap_or_default();
        let trust = raw.pop().unwrap_or_default();
        Ok(scores_turn(cx, others, &trust, &suspicion))
    }

    /// The accusation before the vote: one of `candidates` and the reasons, said aloud.
    async fn accuse(
        &mut self,
        cx: &mut Context,
        candidates: &[String],
    ) -> Result<(String, String), AgentError> {
        self.prepare(cx).await?;
        let history = self.history_block(cx).await?;
        let prompt = cx.prompts().render(
            "accuse",
            context! {
                history => history, candidates => candidates, victims => cx.victim_names(),
                murderer => cx.murderer(), suspects => cx.view().suspects(),
            },
        )?;
        self.choose(cx, "accuse", prompt, ("accused", candidates), "reason")
            .await
    }

    /// The answer to a question put by `asker` (the asked character must answer).
    async fn answer(
        &mut self,
        cx: &mut Context,
        asker: &str,
        question: &str,
    ) -> Result<String, AgentError> {
        self.prepare(cx).await?;
        let history = self.history_block(cx).await?;
        let prompt = cx.prompts().render(
        "answer",
        context! { history => history, asker => asker, question => question, murderer => cx.murderer() },
    )?;
        let budget = cx.config().max_tokens + THOUGHT_TOKENS;
        let v = self
            .sections_call(cx, "answer", prompt, text_schema(), budget)
            .await?;
        Ok(text_of(&v))
    }

    /// The vote among `candidates` (the accused).
    async fn vote(
        &mut self,
        cx: &mut Context,
        vote_call: &str,
        candidates: &[String],
    ) -> Result<(String, String), AgentError> {
        self.prepare(cx).await?;
        let history = self.history_block(cx).await?;
        let prompt = cx.prompts().render(
        "vote",
        context! { history => history, vote_call => vote_call, candidates => candidates, victims => cx.victim_names() },
    )?;
        self.choose(cx, "vote", prompt, ("vote", candidates), "reason")
            .await
    }

    /// A stage was released (the system prompt already holds it): the script is measured again and, when
    /// it is over the cap, summarized again now, so the cost lands on the hand-over.
    async fn released(&mut self, cx: &mut Context, _act: u32) -> Result<(), AgentError> {
        self.prepared_for = None;
        self.prepare(cx).await
    }
}

/// A scorer's turn from its raw scores (0 to [`SCORE_MAX`], in the order of `others`): one line per
/// character, and `{"trust": {name: score}, "suspicion": {name: score}, "scale": 10}` with the
/// scores normalised to 0..=1. Shared by the MIRAGE agent and a person's seat, so the two score
/// the same way.
pub(crate) fn scores_turn(
    cx: &Context,
    others: &[String],
    trust: &[f64],
    suspicion: &[f64],
) -> (String, Value) {
    let norm = |raw: f64| (raw / f64::from(SCORE_MAX)).clamp(0.0, 1.0);
    let mut data = Map::new();
    for (module, raw) in [("trust", trust), ("suspicion", suspicion)] {
        let scores: Map<String, Value> = others
            .iter()
            .zip(raw)
            .map(|(o, r)| (o.clone(), json!(norm(*r))))
            .collect();
        data.insert(module.to_string(), Value::Object(scores));
    }
    data.insert("scale".into(), json!(SCORE_MAX));
    let lines = cx.lines();
    let text: Vec<String> = others
        .iter()
        .zip(trust.iter().zip(suspicion))
        .map(|(o, (t, s))| lines.mirage_scores(o, norm(*t), norm(*s)))
        .collect();
    (text.join("\n"), Value::Object(data))
}
