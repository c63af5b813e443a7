//! PLAYER* (WellPlay paper §2.3, Algorithm 1, Appendix C.5; PROTOCOLS.md §3): sensors, a suspicion
//! state per victim, questioning driven by a suspect list, and a pruner that refines that list.
//!
//! ## A round
//!
//! Nothing tells a character that a round has begun except the round number of the host's `Ask`
//! requests, so the first `ask` of a new round (WellPlay rounds and ThinkThrice open rounds count from
//! 1) runs the round's planning before it asks anything:
//!
//! 1. **Sensors.** For every other player (and every suspect who does not play, when the script lists
//!    some), one structured call per sensor of `prompts/player/sensors.toml` (one per victim for sensors
//!    marked `per_victim`: a motive or an opportunity is about one crime), from the agent's script
//!    sentences about that player (BM25) and its recalled dialog about them (top-k memory). The options
//!    are lettered; the reading is the distribution over the letters read from the token
//!    log-probabilities when the provider reports them (the reference implementation's way), else the
//!    parsed answer as a certainty. Each reading is a private `sensor` event (target, sensor, value,
//!    method `logprobs`|`parsed`, probabilities).
//! 2. **Pruner.** Each victim's suspicion state and suspect list are updated from the readings (formula
//!    below) and published as a private `suspects` event (victim, before, after, reasons per player).
//!
//! Every `ask` then questions one player: the forced target during ThinkThrice's initial questioning
//! (round 0, before any sensing), else the best player on the suspect lists, or the best player at all
//! when the lists hold only suspects who do not play and cannot be asked (a private `target` event
//! says why), with a question written from the script, the dialog and a summary of the sensor readings
//! about that player. Before the vote the agent senses and prunes once more, so the last round's answers
//! count; the vote is chosen from the suspicion state and the recalled dialog.
//!
//! ## The pruner
//!
//! For this agent, victim k and another player j:
//!
//! - a sensor reading is a distribution p over the sensor's options, each option scored c ∈ [0, 1] in
//!   `sensors.toml`; its value is the expectation E = Σₒ p(o)·c(o);
//! - evidence x_kj = Σₛ wₛ·Eₛ(j, k) / Σₛ wₛ over the suspicion sensors (emotion 0.2, motive 0.4,
//!   opportunity 0.4 — the weights are in `sensors.toml`);
//! - suspicion s_kj ← (1 − α)·s_kj + α·x_kj with α = 0.6, starting from s = 0.5. The readings already
//!   draw on all dialog so far, so smoothing only damps retrieval noise; one round of strong evidence
//!   still overturns a belief (0.2 → 0.68 on a full reading);
//! - P_informative(j) = v_j / (1 + q_j), where v_j is the information-value sensor's expectation and q_j
//!   the number of questions this agent has already asked j: the expected reward of asking the same
//!   player again falls in proportion to what was already asked (paper §2.3, "Action Space
//!   Refinement");
//! - priority π_kj = s_kj · (1 − β + β·P_informative(j)) with β = 0.5: suspicion leads, and a player
//!   with nothing more to give loses at most half of it;
//! - suspect list_k = { j : π_kj ≥ mean over j′ of π_kj′ }, ordered by priority: the players at or above
//!   the average priority. A relative cut, because what matters is who stands out, and models differ in
//!   how far their probabilities spread (the simulated model's stay close to uniform); a fixed threshold
//!   would keep everyone under one model and no one under another. The list shrinks to one when someone
//!   stands out, grows when the evidence evens out and changes hands as questions use up a player's
//!   information value (the paper puts no hard limit on refinement); it is never empty, and with no
//!   evidence at all it keeps everyone.
//!
//! When choosing whom to ask, π is recomputed with the questions asked so far in the round, so with m > 1
//! questions per round a second question goes to the same player only if they still lead.

mod options;
mod pruner;
mod sensors;
mod suspicion;
mod vars;

use std::collections::BTreeMap;

use serde_json::{json, Map};

use super::context::{schema, Context};
use super::interface::Agent;
use super::view::CharacterView;
use super::AgentError;
use sensors::{sensors, Reading};
use sleuth_base::text::Bm25;
use sleuth_llm::{Phase, ResponseSchema};
use sleuth_script::Language;
use suspicion::{percent, VictimState, PRIOR};
use vars::{
    AnswerPrompt, IntroducePrompt, QuestionPrompt, ReadingLine, SuspectLine, VictimNotes,
    VotePrompt,
};

/// Gameplay prompts of this framework (`prompts/player/<lang>/<purpose>.j2`).
pub const PURPOSES: &[&str] = &[
    "system",
    "introduce",
    "sensor",
    "question",
    "answer",
    "vote",
];

/// Script sentences shown per sensor call and per question (the paper retrieves the script about the
/// player and the victim).
const SCRIPT_FACTS: usize = 6;
/// Script sentences shown when answering.
const ANSWER_FACTS: usize = 8;
/// A sensor answer is a letter and a sentence or two.
const SENSOR_TOKENS: u32 = 120;
const QUESTION_TOKENS: u32 = 150;

/// The PLAYER* agent. Its state: the suspicion per victim, the questions asked and the latest sensor
/// readings.
#[derive(Debug, Default)]
pub struct Player {
    /// One per victim (a single pseudo-victim when the script names none), in script order; empty until
    /// the agent first needs it.
    victims: Vec<VictimState>,
    /// Questions this agent has asked each player so far.
    asked: BTreeMap<String, u32>,
    /// The last questioning round whose sensing and pruning ran (0: none yet).
    last_round: u32,
    /// The latest reading per (sensor, player, victim); the victim is empty for sensors read once per
    /// player.
    readings: BTreeMap<(String, String, String), Reading>,
}

/// The language of the agent's prompts (the script's, or `--lang`).
fn lang(cx: &Context) -> Language {
    cx.prompts().lang().parse().unwrap_or(cx.view().language())
}

fn joined(cx: &Context, names: &[String]) -> String {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    cx.lines().join(&refs)
}

/// Whether this agent killed `victim` (a murderer whose script lists no victims killed them all).
fn killed(view: &CharacterView, victim: &str) -> bool {
    if !view.is_murderer() {
        return false;
    }
    match view.killed() {
        [] => true,
        killed => killed.iter().any(|k| k == victim),
    }
}

/// The `n` sentences of the agent's script handed out so far (a murderer's secrets left out) most
/// relevant to `query` (BM25), best first.
fn script_about(view: &CharacterView, query: &str, n: usize) -> Vec<String> {
    let facts = view.facts();
    let scores = Bm25::new(facts).scores(query);
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order
        .into_iter()
        .take(n)
        .map(|i| facts[i].clone())
        .collect()
}

/// A question of last resort, for a reply whose question came back empty.
fn fallback_question(lang: Language, target: &str, victim: &str) -> String {
    match lang {
        Language::En => {
            format!("{target}, where were you when {victim} died, and who can confirm it?")
        }
        Language::Zh => format!("{target}，{victim}遇害的时候你在哪里？有谁能证明？"),
    }
}

/// One question for the chosen player.
fn question_schema() -> ResponseSchema {
    schema(
        "question",
        json!({"type": "object", "properties": {
            "question": {"type": "string"}
        }, "required": ["question"], "additionalProperties": false}),
    )
}

impl Agent for Player {
    /// Self-introduction from the script (in the system prompt): civilians share what helps, murderers
    /// may lie. Also loads the sensors, so that a broken sensor file fails the game before any
    /// questioning.
    async fn introduce(&mut self, cx: &mut Context, host_line: &str) -> Result<String, AgentError> {
        sensors()?;
        let user = cx.prompts().render(
            "introduce",
            &IntroducePrompt {
                host_line,
                murderer: cx.murderer(),
            },
        )?;
        let budget = cx.config().max_tokens;
        let (text, _) = cx
            .call("introduce", user, budget, None, Phase::Gameplay)
            .await?;
        Ok(text)
    }

    /// One question per call. A new `round` first runs the sensors and the pruner; then the target is the
    /// forced one or the best on the suspect lists.
    async fn ask(
        &mut self,
        cx: &mut Context,
        target: Option<String>,
        candidates: &[String],
        round: u32,
    ) -> Result<(String, String), AgentError> {
        let sensors = sensors()?;
        self.ensure_state(cx);
        if round > self.last_round {
            self.sense_and_prune(cx, Some(round)).await?;
            self.last_round = round;
        }
        let lang = lang(cx);
        let (target, k, forced, scores) = match target {
            Some(t) => {
                let k = self.likeliest_victim(&t);
                (t, k, true, Map::new())
            }
            None => match self.choose_target(sensors, candidates) {
                Some((t, k, scores)) => (t, k, false, scores),
                None => {
                    return Err(AgentError::Unsupported {
                        framework: "player",
                        request: "ask a question when there is nobody to ask",
                    })
                }
            },
        };
        let victim = self.victims[k].name.clone();
        cx.step(
            "target",
            format!("{target} · {victim}"),
            Some(json!({
                "round": round,
                "target": target,
                "victim": victim,
                "forced": forced,
                "priorities": scores,
            })),
        );
        let query = cx.lines().query_about(&target, &victim);
        let dialog = cx.recall_texts(&query, Phase::Gameplay).await?;
        let script = script_about(cx.view(), &format!("{target} {victim}"), SCRIPT_FACTS);
        let readings: Vec<ReadingLine> = sensors
            .iter()
            .filter(|s| s.questioning)
            .filter_map(|s| {
                let r = self.reading(s, &target, &victim)?;
                let c = s.choices.get(r.choice)?;
                Some(ReadingLine {
                    title: s.title.get(lang),
                    victim: s.per_victim.then_some(victim.as_str()),
                    value: c.label.get(lang),
                    percent: percent(r.probs.get(r.choice).copied().unwrap_or(0.0)),
                })
            })
            .collect();
        let prompt = QuestionPrompt {
            target: &target,
            victim: &victim,
            killed: killed(cx.view(), &victim),
            script: &script,
            dialog: &dialog,
            readings,
            suspicion: percent(
                self.victims[k]
                    .suspicion
                    .get(&target)
                    .copied()
                    .unwrap_or(PRIOR),
            ),
            asked: self.asked.get(&target).copied().unwrap_or(0),
        };
        let user = cx.prompts().render("question", &prompt)?;
        let (_, v) = cx
            .call(
                "question",
                user,
                QUESTION_TOKENS,
                Some(question_schema()),
                Phase::Gameplay,
            )
            .await?;
        let question = v
            .as_ref()
            .and_then(|v| v["question"].as_str())
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| fallback_question(lang, &target, &victim));
        *self.asked.entry(target.clone()).or_default() += 1;
        Ok((target, question))
    }

    /// The vote: one last sensing and pruning so the final round counts, then a choice among `candidates`
    /// from the suspicion notes and the recalled dialog.
    async fn vote(
        &mut self,
        cx: &mut Context,
        vote_call: &str,
        candidates: &[String],
    ) -> Result<(String, String), AgentError> {
        let sensors = sensors()?;
        self.sense_and_prune(cx, None).await?;
        let lang = lang(cx);
        let victims = self.victim_names();
        let all_victims = joined(cx, &victims);
        let query = cx.lines().query_vote(&all_victims);
        let dialog = cx.recall_texts(&query, Phase::Gameplay).await?;
        let suspicion: Vec<VictimNotes> = self
            .victims
            .iter()
            .map(|v| {
                let mut players: Vec<SuspectLine> = candidates
                    .iter()
                    .map(|c| SuspectLine {
                        name: c.clone(),
                        percent: percent(v.suspicion.get(c).copied().unwrap_or(PRIOR)),
                        suspect: v.suspects.contains(c),
                        reasons: self.guilty_signs(sensors, lang, c, &v.name),
                    })
                    .collect();
                players.sort_by_key(|p| std::cmp::Reverse(p.percent));
                VictimNotes {
                    victim: v.name.clone(),
                    players,
                }
            })
            .collect();
        let user = cx.prompts().render(
            "vote",
            &VotePrompt {
                vote_call,
                victims: &all_victims,
                candidates,
                murderer: cx.murderer(),
                dialog: &dialog,
                suspicion,
                suspects: cx.view().suspects(),
            },
        )?;
        cx.pick_vote(user, candidates).await
    }

    /// An answer in character from the script sentences and dialog relevant to the question.
    async fn answer(
        &mut self,
        cx: &mut Context,
        asker: &str,
        question: &str,
    ) -> Result<String, AgentError> {
        let dialog = cx.recall_texts(question, Phase::Gameplay).await?;
        let script = script_about(cx.view(), question, ANSWER_FACTS);
        let user = cx.prompts().render(
            "answer",
            &AnswerPrompt {
                asker,
                question,
                murderer: cx.murderer(),
                script: &script,
                dialog: &dialog,
            },
        )?;
        let budget = cx.config().max_tokens;
        let (text, _) = cx
            .call("answer", user, budget, None, Phase::Gameplay)
            .await?;
        Ok(text)
    }
}
