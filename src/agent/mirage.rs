//! The MIRAGE agent (MIRAGE §2.3 and Appendix H): every output in `### THOUGHT:` / `### RESPONSE:` form,
//! and the paper's auxiliary modules, identical for every model.
//!
//! - **Summarization.** When the character's script (the system prompt) is longer than
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

use super::context::Context;
use super::interface::{Agent, AgentFuture, ClueChoice};
use super::{together, AgentError};
use crate::llm::{
    sections_schema_line, split_sections, tokens, window, LlmError, Phase, ResponseSchema, Usage,
};
use crate::memory::Recalled;

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
const SCORE_MAX: u32 = 10;
/// Budget of a choice with a short reason (an accusation, a vote, an interaction).
const CHOICE_TOKENS: u32 = 200;
/// A running history summary is never given less than this, whatever the cap.
const MIN_HISTORY_SUMMARY_TOKENS: u64 = 64;
/// With a model's context window known, the script summary and the verbatim history each get at most
/// this share of it (1/4), so that the brief, the history, the instructions and the reply fit together.
const WINDOW_SHARE: u32 = 4;
/// Tokens kept free in a summarizing call for its instructions and the format paragraph.
const INSTRUCTION_TOKENS: u64 = 600;
/// A part of a script too long for the window is summarized in no fewer tokens than this.
const MIN_PART_TOKENS: u32 = 150;

/// A summary cap (script or history) for a model with a context window of `window`: the setting, or a
/// quarter of the window if that is smaller. A cap of 0 (summaries off) stays off.
fn capped(cap: u32, window: Option<u32>) -> u32 {
    match window {
        Some(w) if cap > 0 => cap.min(w / WINDOW_SHARE).max(1),
        _ => cap,
    }
}

/// `text` cut into parts of at most `budget` tokens: whole paragraphs where they fit, else whole
/// sentences, else token boundaries. What a script too long for the model's window is summarized in.
fn parts_of(text: &str, budget: u64) -> Vec<String> {
    let budget = budget.max(1);
    let mut pieces: Vec<String> = Vec::new();
    for para in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
        if tokens::count(para) <= budget {
            pieces.push(para.to_string());
            continue;
        }
        for sentence in crate::text::sentences(para) {
            let mut rest = sentence.as_str();
            while tokens::count(rest) > budget {
                let head = tokens::truncate(rest, budget);
                if head.is_empty() {
                    break;
                }
                pieces.push(head.clone());
                rest = &rest[head.len().min(rest.len())..];
            }
            if !rest.trim().is_empty() {
                pieces.push(rest.to_string());
            }
        }
    }
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    for piece in pieces {
        let joined = if current.is_empty() {
            piece.clone()
        } else {
            format!("{current}\n\n{piece}")
        };
        if !current.is_empty() && tokens::count(&joined) > budget {
            parts.push(std::mem::replace(&mut current, piece));
        } else {
            current = joined;
        }
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

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

/// `text` cut to at most `cap` tokens at a sentence boundary, so a summary never ends in half a sentence
/// (which the next prompt would read as part of whatever follows); a first sentence longer than the cap
/// is cut at a token boundary.
fn fit(text: &str, cap: u64) -> String {
    if tokens::count(text) <= cap {
        return text.to_string();
    }
    let mut out = String::new();
    for s in crate::text::sentences(text) {
        let next = if out.is_empty() {
            s.clone()
        } else {
            format!("{out} {s}")
        };
        if tokens::count(&next) > cap {
            break;
        }
        out = next;
    }
    if out.is_empty() {
        tokens::truncate(text, cap)
    } else {
        out
    }
}

/// Where to cut `records` so that the newest whole events after the cut fit in `keep` tokens: the
/// index of the first record kept (`records.len()` when even the newest event does not fit).
fn split_point(records: &[Recalled], sizes: &[u64], keep: u64) -> usize {
    let mut kept = 0;
    let mut cut = records.len();
    while cut > 0 {
        let event = records[cut - 1].event;
        let mut start = cut;
        let mut group = 0;
        while start > 0 && records[start - 1].event == event {
            group += sizes[start - 1];
            start -= 1;
        }
        if kept + group > keep {
            break;
        }
        kept += group;
        cut = start;
    }
    cut
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

    /// Summarization of the script: measures the released script and, when it is over the cap, summarizes
    /// it and switches gameplay calls to a system prompt built on the summary. Runs once per release.
    async fn prepare(&mut self, cx: &mut Context) -> Result<(), AgentError> {
        let acts = cx.view().acts_released();
        if self.prepared_for == Some(acts) {
            return Ok(());
        }
        self.prepared_for = Some(acts);
        self.brief = None;
        cx.set_brief(None);
        let window = cx.context_window().await;
        let cap = capped(cx.protocol().mirage.script_summary_tokens, window);
        let length = tokens::count(cx.system());
        if cap == 0 || length <= u64::from(cap) {
            return Ok(());
        }
        let summary = self.summarize_script(cx, cap, window).await?;
        cx.step(
            "summary",
            summary.clone(),
            Some(json!({
                "of": "script",
                "acts": acts,
                "script_tokens": length,
                "summary_tokens": tokens::count(&summary),
            })),
        );
        let view = cx.view();
        let victims: Vec<&str> = view.victims().iter().map(|v| v.name.as_str()).collect();
        let brief = cx.prompts().render(
        "system_summary",
        context! {
            name => view.name(), title => view.title(), murderer => view.is_murderer(),
            premise => view.premise(), victims => victims, cast => view.cast(), summary => summary,
            suspects => view.suspects(),
            force_expose => cx.protocol().mirage.force_expose,
        },
    )?;
        self.brief = Some(brief.clone());
        cx.set_brief(Some(brief));
        Ok(())
    }

    /// The script (the released system prompt) summarized in at most `cap` tokens: in one call, as
    /// the paper does; or, when the script does not fit the model's window, part by part, each part
    /// in its share of the cap, and the parts' notes joined in one more call if together they pass it.
    async fn summarize_script(
        &self,
        cx: &mut Context,
        cap: u32,
        window: Option<u32>,
    ) -> Result<String, AgentError> {
        let others: Vec<String> = cx.view().others().map(str::to_string).collect();
        let (name, victims) = (cx.name().to_string(), cx.victim_names());
        let max = cap + THOUGHT_TOKENS;
        let room = window.map(|w| {
            ((f64::from(w) * crate::llm::window::TARGET_SHARE) as u64)
                .saturating_sub(INSTRUCTION_TOKENS + u64::from(max))
        });
        let script = cx.system().to_string();
        if room.is_none_or(|r| tokens::count(&script) <= r) {
            let prompt = cx.prompts().render(
                "summarize_script",
                context! {
                    name => name, cap => cap, victims => victims, others => others,
                    notes => false, parts => 0,
                },
            )?;
            let v = self
                .sections_call(cx, "summarize_script", prompt, text_schema(), max)
                .await?;
            return Ok(fit(&text_of(&v), u64::from(cap)));
        }
        let parts = parts_of(&script, room.unwrap_or(0).max(256));
        let n = parts.len();
        let part_cap = (cap / n as u32).max(MIN_PART_TOKENS).min(cap);
        let mut notes = Vec::with_capacity(n);
        for (i, part) in parts.iter().enumerate() {
            let prompt = cx.prompts().render(
                "summarize_script",
                context! {
                    name => name, cap => part_cap, victims => victims, others => others,
                    part => i + 1, parts => n, notes => false,
                },
            )?;
            let v = Self::sections_call_with(
                cx,
                Some(part),
                "summarize_script",
                prompt,
                text_schema(),
                part_cap + THOUGHT_TOKENS,
            )
            .await?;
            notes.push(fit(&text_of(&v), u64::from(part_cap)));
        }
        let joined = notes.join("\n\n");
        if tokens::count(&joined) <= u64::from(cap) {
            return Ok(joined);
        }
        let prompt = cx.prompts().render(
            "summarize_script",
            context! { name => name, cap => cap, victims => victims, others => others, notes => true, parts => 0 },
        )?;
        let v = Self::sections_call_with(
            cx,
            Some(&joined),
            "summarize_script",
            prompt,
            text_schema(),
            max,
        )
        .await?;
        Ok(fit(&text_of(&v), u64::from(cap)))
    }

    /// The history block of a prompt: the running summary, then everything seen since, in order —
    /// summarizing the older part first when it is over the cap.
    async fn history_block(&mut self, cx: &mut Context) -> Result<String, AgentError> {
        let records = cx.history(self.summarized_until).await?;
        let window = cx.context_window().await;
        let cap = u64::from(capped(cx.protocol().mirage.history_tokens, window));
        let sizes: Vec<u64> = records.iter().map(|r| tokens::count(&r.text)).collect();
        let total: u64 = sizes.iter().sum();
        let mut from = 0;
        if cap > 0 && total > cap {
            let budget = (cap / 2).max(MIN_HISTORY_SUMMARY_TOKENS);
            let cut = split_point(&records, &sizes, cap / 2);
            if cut > 0 {
                self.summarize_history(cx, &records[..cut], budget).await?;
                from = cut;
            }
        }
        // Marked as dialogue: a prompt still too long for the window loses the oldest lines first.
        let texts: Vec<String> = records[from..]
            .iter()
            .map(|r| window::dialogue(&r.text))
            .collect();
        Ok(cx.prompts().render(
            "history",
            context! { summary => self.history_summary, records => texts },
        )?)
    }

    /// Folds `old` (and the previous summary) into a new running summary of at most `budget` tokens.
    async fn summarize_history(
        &mut self,
        cx: &mut Context,
        old: &[Recalled],
        budget: u64,
    ) -> Result<(), AgentError> {
        let texts: Vec<String> = old.iter().map(|r| window::dialogue(&r.text)).collect();
        let players: Vec<&str> = cx.view().cast().iter().map(|c| c.name.as_str()).collect();
        // The part to fold, rendered exactly as the history block of the calls before it: the prompt
        // then starts with what those calls sent, and a provider's prefix cache serves all of it.
        let history = cx.prompts().render(
            "history",
            context! { summary => self.history_summary, records => texts },
        )?;
        let prompt = cx.prompts().render(
            "summarize_history",
            context! {
                history => history, previous => self.history_summary, cap => budget,
                players => players, victims => cx.victim_names(),
            },
        )?;
        let max = u32::try_from(budget)
            .unwrap_or(u32::MAX)
            .saturating_add(THOUGHT_TOKENS);
        let v = self
            .sections_call(cx, "summarize_history", prompt, text_schema(), max)
            .await?;
        let summary = fit(&text_of(&v), budget);
        let until = old.last().map(|r| r.event);
        self.history_summary = Some(summary.clone());
        self.summarized_until = until.or(self.summarized_until);
        cx.step(
            "summary",
            summary,
            Some(json!({ "of": "history", "until": until, "records": old.len() })),
        );
        Ok(())
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
        let mut work = Vec::with_capacity(asks.len());
        for (module, prompt, schema, budget, unit) in asks {
            work.push(self.scored(unit, module, prompt, schema, budget));
        }
        let answered = together(work).await;
        let mut data = Map::new();
        for (module, unit, r) in answered {
            let v = r?;
            cx.join(unit)?;
            let mut scores = Map::new();
            for o in others {
                let raw = v[o.as_str()]
                    .as_f64()
                    .ok_or_else(|| unusable(module, format!("no score for {o}")))?;
                scores.insert(
                    o.clone(),
                    json!((raw / f64::from(SCORE_MAX)).clamp(0.0, 1.0)),
                );
            }
            data.insert(module.to_string(), Value::Object(scores));
        }
        data.insert("scale".into(), json!(SCORE_MAX));
        let lines = cx.lines();
        let text: Vec<String> = others
            .iter()
            .map(|o| {
                let t = data["trust"][o.as_str()].as_f64().unwrap_or_default();
                let s = data["suspicion"][o.as_str()].as_f64().unwrap_or_default();
                lines.mirage_scores(o, t, s)
            })
            .collect();
        Ok((text.join("\n"), Value::Object(data)))
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
    async fn released(&mut self, cx: &mut Context) -> Result<(), AgentError> {
        self.prepared_for = None;
        self.prepare(cx).await
    }
}

impl Agent for Mirage {
    fn introduce<'a>(
        &'a mut self,
        cx: &'a mut Context,
        host_line: &'a str,
    ) -> AgentFuture<'a, String> {
        Box::pin(self.converse(cx, host_line, 0))
    }

    fn answer<'a>(
        &'a mut self,
        cx: &'a mut Context,
        asker: &'a str,
        question: &'a str,
    ) -> AgentFuture<'a, String> {
        Box::pin(self.answer(cx, asker, question))
    }

    fn vote<'a>(
        &'a mut self,
        cx: &'a mut Context,
        vote_call: &'a str,
        candidates: &'a [String],
    ) -> AgentFuture<'a, (String, String)> {
        Box::pin(self.vote(cx, vote_call, candidates))
    }

    /// The script is measured again and, when it is over the cap, summarized again now, so the cost
    /// lands on the hand-over.
    fn released<'a>(&'a mut self, cx: &'a mut Context, _act: u32) -> AgentFuture<'a, ()> {
        Box::pin(self.released(cx))
    }

    fn converse<'a>(
        &'a mut self,
        cx: &'a mut Context,
        host_line: &'a str,
        iteration: u32,
    ) -> AgentFuture<'a, String> {
        Box::pin(self.converse(cx, host_line, iteration))
    }

    fn interact<'a>(
        &'a mut self,
        cx: &'a mut Context,
        candidates: &'a [String],
        clues: &'a [ClueChoice],
    ) -> AgentFuture<'a, (String, Value)> {
        Box::pin(self.interact(cx, candidates, clues))
    }

    fn score<'a>(
        &'a mut self,
        cx: &'a mut Context,
        others: &'a [String],
    ) -> AgentFuture<'a, (String, Value)> {
        Box::pin(self.score(cx, others))
    }

    fn accuse<'a>(
        &'a mut self,
        cx: &'a mut Context,
        candidates: &'a [String],
    ) -> AgentFuture<'a, (String, String)> {
        Box::pin(self.accuse(cx, candidates))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(event: u64) -> Recalled {
        Recalled {
            text: format!("record of event {event}"),
            score: 0.0,
            event,
        }
    }

    #[test]
    fn summaries_are_cut_between_sentences() {
        let text = "Ada left at nine. Ben stayed in the saloon until midnight. The cook slept.";
        assert_eq!(fit(text, 100), text);
        let two = "Ada left at nine. Ben stayed in the saloon until midnight.";
        let cap = tokens::count(two);
        assert_eq!(fit(text, cap), two);
        assert_eq!(fit(text, cap + 1), two, "not a half of the third sentence");
        assert_eq!(fit(text, 2), tokens::truncate(text, 2), "one long sentence");
    }

    #[test]
    fn the_history_is_cut_between_whole_events() {
        // Events 1 (two chunks), 2, 3 (two chunks): sizes 5+5, 4, 3+3.
        let records = vec![rec(1), rec(1), rec(2), rec(3), rec(3)];
        let sizes = vec![5, 5, 4, 3, 3];
        assert_eq!(
            split_point(&records, &sizes, 6),
            3,
            "event 3 fits, 2 does not"
        );
        assert_eq!(split_point(&records, &sizes, 10), 2, "events 2 and 3");
        assert_eq!(split_point(&records, &sizes, 5), 5, "not even event 3");
        assert_eq!(split_point(&records, &sizes, 100), 0, "everything fits");
        assert_eq!(split_point(&[], &[], 10), 0);
    }
}
