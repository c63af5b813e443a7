//! A person's seat at the table (`docs/seat.md`): the [`Agent`] of a character played by a person.
//!
//! Every move the protocol asks of the character becomes a [`Move`] posted to the seat's
//! [`SeatDesk`] — what is asked, the allowed choices and everything the character's agent would see
//! ([`shown`]) — and the reply is the person's [`MoveAnswer`]. The agent makes no model call: the
//! wait is one pending future (no polling, no timer, nothing billed), and the rest of the game goes
//! on where it does not depend on the person, as it does for any slow agent (ballots and evaluation
//! answers are requested together, `bound.rs`).
//!
//! A reply is checked as an agent's reply is checked (`checks.rs`): a bad move is not a failed game
//! but the same move asked again, one `attempt` later, with the refusal's message. Moves are named by
//! a key that a replay of the same game gives again — the gameplay move's number (a character's
//! requests come one at a time, in the game's order) or the evaluation question — so that a desk
//! backed by a store answers a restarted game's moves from what the person already said.
//!
//! The desk is a trait so that the game knows nothing of where moves wait: the viewer's seat hub
//! (`sleuth_view::seat`) keeps them in the run's store and serves them to the person's browser.

mod checks;
mod lines;
mod shown;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sleuth_script::Language;

use super::config::AgentError;
use super::context::Context;
use super::interface::{Agent, ClueChoice, EvalKind};
use super::mirage::{scores_turn, SCORE_MAX};
use checks::Interaction;
use lines::SeatLines;

/// What a move asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MoveKind {
    /// A self-introduction: free text.
    Introduce,
    /// A question: whom (one of `choices`) and what.
    Ask,
    /// An answer to someone's question: free text.
    Answer,
    /// A vote: whom (one of `choices`) and why.
    Vote,
    /// Evaluation: a factual question, answered briefly.
    Factual,
    /// Evaluation: one letter of `choices` and a rationale.
    Inferential,
    /// Evaluation: one letter of `choices` (several with `multiple`) and a reason.
    Choice,
    /// MIRAGE open conversation after the first round: free text.
    Speak,
    /// MIRAGE interaction: ask one of `choices` a question, or investigate one of `clues`.
    Interact,
    /// MIRAGE trust and suspicion: two scores from 0 to `scale` for each of `choices`.
    Score,
    /// MIRAGE accusation: one of `choices` and the reasons, said aloud.
    Accuse,
}

impl MoveKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MoveKind::Introduce => "introduce",
            MoveKind::Ask => "ask",
            MoveKind::Answer => "answer",
            MoveKind::Vote => "vote",
            MoveKind::Factual => "factual",
            MoveKind::Inferential => "inferential",
            MoveKind::Choice => "choice",
            MoveKind::Speak => "speak",
            MoveKind::Interact => "interact",
            MoveKind::Score => "score",
            MoveKind::Accuse => "accuse",
        }
    }
}

/// One move asked of a person: posted to the desk, answered by a [`MoveAnswer`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Move {
    /// The character played.
    pub seat: String,
    /// The move's name within the seat, the same in a replay of the game (`move/3`,
    /// `eval/factual/…`).
    pub key: String,
    /// 0 for the first asking; one more for each refused reply.
    pub attempt: u32,
    pub kind: MoveKind,
    /// What is asked: the host's line, the question to answer, the vote call, the evaluation question.
    pub prompt: String,
    /// Whoever may be named (ask, vote), or the options' texts (inferential, choice).
    pub choices: Vec<String>,
    /// The option letters of `choices` (inferential, choice); empty otherwise.
    pub letters: Vec<String>,
    /// Choice: several letters may be given.
    pub multiple: bool,
    /// Choice with `multiple`: exactly this many letters, when the question says.
    pub picks: Option<u32>,
    /// Interact: the clues on offer, as the agents are offered them (`id: place`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clues: Vec<String>,
    /// Score: the top of the scale (scores are integers from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<u32>,
    /// Why the previous attempt was refused.
    pub refused: Option<String>,
    /// What the character's agent would see now (`shown.rs`).
    pub shown: Value,
    /// The script's language, which the prompt and the refusal are in (`lines.rs`) and the page
    /// takes its own words from. Left out of English moves, so that their stored requests read as
    /// they did before it was added and a restart on an older store still finds its replies.
    #[serde(default, skip_serializing_if = "is_english")]
    pub lang: Language,
}

fn is_english(lang: &Language) -> bool {
    *lang == Language::En
}

/// The seat's words in the character's script's language, as the host's are (`Context::lines`).
fn lines(cx: &Context) -> SeatLines {
    SeatLines(cx.view().language())
}

/// A person's reply to a move; the fields a move's kind does not use are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveAnswer {
    /// Whom (ask, vote).
    #[serde(default)]
    pub target: Option<String>,
    /// What is said: the introduction, question, answer, reason or rationale.
    #[serde(default)]
    pub text: String,
    /// Letters (inferential: one; choice: one or more).
    #[serde(default)]
    pub choices: Vec<String>,
    /// Interact: `ask` or `investigate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Interact: the clue investigated, one of the move's `clues`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clue: Option<String>,
    /// Score: each other character's trust score, 0 to the move's `scale`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trust: BTreeMap<String, u32>,
    /// Score: each other character's suspicion score.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub suspicion: BTreeMap<String, u32>,
}

/// The desk could not take or answer a move (its store failed, or it was shut down).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SeatError(pub String);

/// Where a seat's moves wait for the person: implemented outside the game (the viewer's hub).
pub trait SeatDesk: Send + Sync {
    /// Posts `m` and resolves to the person's reply: at once when the store already holds one for
    /// this key and attempt (a restarted game), else when the person answers.
    fn ask(&self, m: Move) -> BoxFuture<'static, Result<MoveAnswer, SeatError>>;
}

/// A character given to a person: who plays it, and the desk its moves go to.
#[derive(Clone)]
pub struct HumanSeat {
    /// The person's name, as results and ratings show it (`human:NAME`).
    pub player: String,
    pub desk: Arc<dyn SeatDesk>,
}

impl HumanSeat {
    /// The seat's label in the transcript and the result: `human:NAME`.
    pub fn label(&self) -> String {
        format!("human:{}", self.player)
    }
}

impl fmt::Debug for HumanSeat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HumanSeat")
            .field("player", &self.player)
            .finish_non_exhaustive()
    }
}

/// Character name → the person playing it.
pub type Seats = BTreeMap<String, HumanSeat>;

/// The agent of a person's seat.
pub(super) struct Human {
    seat: HumanSeat,
    /// Gameplay moves asked so far: the next move's number.
    moves: u64,
    /// Evaluation question key → times asked (a question asked twice gets two keys).
    asked: Mutex<BTreeMap<String, u32>>,
}

impl Human {
    pub(super) fn new(seat: HumanSeat) -> Human {
        Human {
            seat,
            moves: 0,
            asked: Mutex::new(BTreeMap::new()),
        }
    }

    fn next_move(&mut self) -> String {
        let key = format!("move/{}", self.moves);
        self.moves += 1;
        key
    }

    /// An evaluation question's key: its kind and a digest of its text and options, numbered when
    /// the same question is asked again (WellPlay's repeats).
    fn eval_key(&self, kind: MoveKind, question: &str, options: &[String]) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for part in std::iter::once(question).chain(options.iter().map(String::as_str)) {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let base = format!("eval/{}/{}", kind.as_str(), hex::encode(&h.finalize()[..8]));
        let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        let n = asked.entry(base.clone()).or_insert(0);
        let key = format!("{base}/{n}");
        *n += 1;
        key
    }

    /// Asks the person `ask` until a reply passes `check`; records the move as the seat's step.
    async fn settle<T>(
        &self,
        cx: &mut Context,
        ask: Ask,
        check: impl Fn(&MoveAnswer) -> Result<T, String>,
    ) -> Result<T, AgentError> {
        let shown = shown::of(cx).await?;
        let letters = match ask.kind {
            MoveKind::Inferential | MoveKind::Choice => checks::letters(ask.choices.len()),
            _ => Vec::new(),
        };
        let (mut refused, mut attempt) = (None, 0u32);
        loop {
            let m = Move {
                seat: cx.name().to_string(),
                key: ask.key.clone(),
                attempt,
                kind: ask.kind,
                prompt: ask.prompt.clone(),
                choices: ask.choices.clone(),
                letters: letters.clone(),
                multiple: ask.multiple,
                picks: ask.picks,
                clues: ask.clues.clone(),
                scale: ask.scale,
                refused: refused.take(),
                shown: shown.clone(),
                lang: cx.view().language(),
            };
            let answer = self
                .seat
                .desk
                .ask(m)
                .await
                .map_err(|e| AgentError::Seat(e.0))?;
            match check(&answer) {
                Ok(done) => {
                    let data = json!({
                        "seat": self.seat.label(), "move": ask.key, "attempts": attempt + 1,
                    });
                    cx.step("human", answer.text.clone(), Some(data));
                    return Ok(done);
                }
                Err(why) => refused = Some(why),
            }
            attempt = attempt.saturating_add(1);
        }
    }
}

/// What one move asks, before it is posted.
struct Ask {
    key: String,
    kind: MoveKind,
    prompt: String,
    choices: Vec<String>,
    multiple: bool,
    picks: Option<u32>,
    clues: Vec<String>,
    scale: Option<u32>,
}

impl Ask {
    fn new(key: String, kind: MoveKind, prompt: &str, choices: Vec<String>) -> Ask {
        Ask {
            key,
            kind,
            prompt: prompt.to_string(),
            choices,
            multiple: false,
            picks: None,
            clues: Vec::new(),
            scale: None,
        }
    }
}

impl Agent for Human {
    async fn introduce(&mut self, cx: &mut Context, host_line: &str) -> Result<String, AgentError> {
        let ask = Ask::new(self.next_move(), MoveKind::Introduce, host_line, Vec::new());
        let lines = lines(cx);
        self.settle(cx, ask, |a| checks::said(a, lines)).await
    }

    async fn ask(
        &mut self,
        cx: &mut Context,
        target: Option<String>,
        candidates: &[String],
        round: u32,
    ) -> Result<(String, String), AgentError> {
        let choices = match target {
            Some(t) => vec![t],
            None => candidates.to_vec(),
        };
        let lines = lines(cx);
        let prompt = lines.ask(round);
        let ask = Ask::new(self.next_move(), MoveKind::Ask, &prompt, choices.clone());
        self.settle(cx, ask, |a| checks::named(a, &choices, lines))
            .await
    }

    async fn answer(
        &mut self,
        cx: &mut Context,
        asker: &str,
        question: &str,
    ) -> Result<String, AgentError> {
        let lines = lines(cx);
        let prompt = lines.asked(asker, question);
        let ask = Ask::new(self.next_move(), MoveKind::Answer, &prompt, Vec::new());
        self.settle(cx, ask, |a| checks::said(a, lines)).await
    }

    async fn vote(
        &mut self,
        cx: &mut Context,
        vote_call: &str,
        candidates: &[String],
    ) -> Result<(String, String), AgentError> {
        let ask = Ask::new(
            self.next_move(),
            MoveKind::Vote,
            vote_call,
            candidates.to_vec(),
        );
        let lines = lines(cx);
        self.settle(cx, ask, |a| checks::voted(a, candidates, lines))
            .await
    }

    /// MIRAGE open conversation: the first turn is the introduction, the later ones free speech.
    async fn converse(
        &mut self,
        cx: &mut Context,
        host_line: &str,
        iteration: u32,
    ) -> Result<String, AgentError> {
        let kind = match iteration {
            0 => MoveKind::Introduce,
            _ => MoveKind::Speak,
        };
        let ask = Ask::new(self.next_move(), kind, host_line, Vec::new());
        let lines = lines(cx);
        self.settle(cx, ask, |a| checks::said(a, lines)).await
    }

    /// MIRAGE interaction, returned in the MIRAGE agent's shape: what is said, and
    /// `{"action": "ask", "target", "question"}` or `{"action": "investigate", "clue"}`.
    async fn interact(
        &mut self,
        cx: &mut Context,
        candidates: &[String],
        clues: &[ClueChoice],
    ) -> Result<(String, Value), AgentError> {
        // Offered as the agents are offered them: the id keeps the choice exact, the place is what
        // one chooses by.
        let offers: Vec<String> = clues
            .iter()
            .map(|c| format!("{}: {}", c.id, c.place))
            .collect();
        let lines = lines(cx);
        let prompt = lines.interact(!offers.is_empty());
        let ask = Ask {
            clues: offers.clone(),
            ..Ask::new(
                self.next_move(),
                MoveKind::Interact,
                prompt,
                candidates.to_vec(),
            )
        };
        let done = self
            .settle(cx, ask, |a| {
                checks::interacted(a, candidates, &offers, lines)
            })
            .await?;
        Ok(match done {
            Interaction::Ask { target, question } => {
                let data = json!({"action": "ask", "target": target, "question": question});
                (question, data)
            }
            Interaction::Investigate { index, said } => {
                let id = clues.get(index).map(|c| c.id.clone()).unwrap_or_default();
                (said, json!({"action": "investigate", "clue": id}))
            }
        })
    }

    /// MIRAGE trust and suspicion, scored by the person on the agents' scale and recorded as the
    /// MIRAGE agent records its own.
    async fn score(
        &mut self,
        cx: &mut Context,
        others: &[String],
    ) -> Result<(String, Value), AgentError> {
        let lines = lines(cx);
        let prompt = lines.score(SCORE_MAX);
        let ask = Ask {
            scale: Some(SCORE_MAX),
            ..Ask::new(self.next_move(), MoveKind::Score, &prompt, others.to_vec())
        };
        let (trust, suspicion) = self
            .settle(cx, ask, |a| checks::scored(a, others, SCORE_MAX, lines))
            .await?;
        Ok(scores_turn(cx, others, &trust, &suspicion))
    }

    /// MIRAGE accusation: a suspect and the reasons, said aloud.
    async fn accuse(
        &mut self,
        cx: &mut Context,
        candidates: &[String],
    ) -> Result<(String, String), AgentError> {
        let lines = lines(cx);
        let ask = Ask::new(
            self.next_move(),
            MoveKind::Accuse,
            lines.accuse(),
            candidates.to_vec(),
        );
        self.settle(cx, ask, |a| checks::named(a, candidates, lines))
            .await
    }

    /// A person makes no model call.
    fn eval_calls(&self, _cx: &Context, _kind: EvalKind) -> Option<u64> {
        Some(0)
    }

    async fn answer_factual(&self, cx: &mut Context, question: &str) -> Result<String, AgentError> {
        let key = self.eval_key(MoveKind::Factual, question, &[]);
        let ask = Ask::new(key, MoveKind::Factual, question, Vec::new());
        let lines = lines(cx);
        self.settle(cx, ask, |a| checks::said(a, lines)).await
    }

    async fn answer_inferential(
        &self,
        cx: &mut Context,
        question: &str,
        options: &[String],
    ) -> Result<(String, String), AgentError> {
        let key = self.eval_key(MoveKind::Inferential, question, options);
        let ask = Ask::new(key, MoveKind::Inferential, question, options.to_vec());
        let (n, lines) = (options.len(), lines(cx));
        self.settle(cx, ask, |a| {
            let letters = checks::lettered(a, n, false, None, lines)?;
            Ok((
                letters.into_iter().next().unwrap_or_default(),
                a.text.trim().to_string(),
            ))
        })
        .await
    }

    async fn answer_choice(
        &self,
        cx: &mut Context,
        question: &str,
        options: &[String],
        multiple: bool,
        picks: Option<u32>,
    ) -> Result<(Vec<String>, String), AgentError> {
        let key = self.eval_key(MoveKind::Choice, question, options);
        let ask = Ask {
            multiple,
            picks,
            ..Ask::new(key, MoveKind::Choice, question, options.to_vec())
        };
        let (n, lines) = (options.len(), lines(cx));
        self.settle(cx, ask, |a| {
            let letters = checks::lettered(a, n, multiple, picks, lines)?;
            Ok((letters, a.text.trim().to_string()))
        })
        .await
    }
}
