//! Evaluation answers shared by every framework but ThinkThrice (whose MR/SR/SV pipeline answers its own
//! factual and inferential questions): what the papers ask every arm after (or, for PP and OP, instead
//! of) the game, in one form so that arms differ only in what the agent knows.
//!
//! A playing agent answers from its script (in the system prompt) and the top-k of what it observed;
//! PP answers from its own script alone and OP from every script (both through their system prompts).

use minijinja::context;
use serde_json::{json, Value};

use super::config::AgentError;
use super::context::{schema, Context};
use sleuth_llm::Phase;
use sleuth_script::option_letter;

/// Token budget of an inferential answer: a letter and a rationale of a few sentences.
const RATIONALE_TOKENS: u32 = 200;

/// A factual question, answered briefly.
pub async fn factual(cx: &mut Context, question: &str) -> Result<String, AgentError> {
    // The recalled texts go into the prompt and are dropped before the call waits for its turn (so
    // for every question below): a game's questions may all wait at once.
    let user = {
        let memory = cx.recall_texts(question, Phase::Evaluation).await?;
        cx.prompts().render(
            "answer_factual",
            context! { memory => memory, question => question },
        )?
    };
    // The judge compares short answers.
    let budget = cx.config().eval_max_tokens;
    let (text, _) = cx
        .call("answer_factual", user, budget, None, Phase::Evaluation)
        .await?;
    Ok(text)
}

/// The option letters and the `{letter, text}` list a multiple-choice prompt shows.
pub(super) fn lettered(options: &[String]) -> (Vec<String>, Vec<Value>) {
    let letters: Vec<String> = (0..options.len()).map(option_letter).collect();
    let opts = options
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"letter": option_letter(i), "text": t}))
        .collect();
    (letters, opts)
}

/// An inferential multiple-choice question (ThinkThrice §5.2): one letter and a rationale.
pub async fn inferential(
    cx: &mut Context,
    question: &str,
    options: &[String],
) -> Result<(String, String), AgentError> {
    let (letters, user) = {
        let query = format!("{question} {}", options.join(" "));
        let memory = cx.recall_texts(&query, Phase::Evaluation).await?;
        let (letters, opts) = lettered(options);
        let user = cx.prompts().render(
            "answer_inferential",
            context! { memory => memory, question => question, options => opts, multiple => false },
        )?;
        (letters, user)
    };
    pick_letter(cx, "answer_inferential", user, &letters).await
}

/// An inferential answer's one structured call: one of `letters` (field `answer`) and the rationale,
/// from the rendered prompt `purpose`. ThinkThrice's own inferential prompt answers through it too, so
/// the two forms of the answer have the same shape and budget.
pub(super) async fn pick_letter(
    cx: &mut Context,
    purpose: &str,
    user: String,
    letters: &[String],
) -> Result<(String, String), AgentError> {
    cx.pick(
        purpose,
        user,
        ("answer", letters),
        "rationale",
        RATIONALE_TOKENS,
        Phase::Evaluation,
    )
    .await
}

/// A WellPlay multiple-choice question (PLAYER* §4): one letter, or with `multiple` a set of letters —
/// exactly `picks` of them when the question says how many ("the two people you most suspect"), else one
/// or more. Returns the letters (sorted, unique) and the reason given.
///
/// An answer with more letters than the question asked for keeps the first `picks` the model wrote: the
/// gateway checks a reply's letters but not their count, and WellPlay's rule counts an answer right
/// when the true letter is among the picks, so choosing everything must not be a way to score.
pub async fn choice(
    cx: &mut Context,
    question: &str,
    options: &[String],
    multiple: bool,
    picks: Option<u32>,
) -> Result<(Vec<String>, String), AgentError> {
    let picks = picks.map(|n| (n as usize).clamp(1, options.len().max(1)));
    let (letters, user) = {
        let query = format!("{question} {}", options.join(" "));
        let memory = cx.recall_texts(&query, Phase::Evaluation).await?;
        let (letters, opts) = lettered(options);
        let user = cx.prompts().render(
            "answer_choice",
            context! { memory => memory, question => question, options => opts, multiple => multiple, picks => picks },
        )?;
        (letters, user)
    };
    if !multiple {
        let (letter, reason) = cx
            .pick(
                "answer_choice",
                user,
                ("answer", &letters),
                "reason",
                150,
                Phase::Evaluation,
            )
            .await?;
        return Ok((vec![letter], reason));
    }
    let (least, most) = picks.map_or((1, letters.len()), |n| (n, n));
    let s = schema(
        "answer_choice",
        json!({"type": "object", "properties": {
            "answers": {"type": "array", "items": {"type": "string", "enum": letters}, "minItems": least, "maxItems": most},
            "reason": {"type": "string"}
        }, "required": ["answers", "reason"], "additionalProperties": false}),
    );
    let (_, v) = cx
        .call("answer_choice", user, 150, Some(s), Phase::Evaluation)
        .await?;
    let v = v.unwrap_or(Value::Null);
    let mut chosen: Vec<String> = Vec::new();
    for x in v["answers"].as_array().into_iter().flatten() {
        if let Some(l) = x.as_str() {
            if !chosen.iter().any(|c| c == l) {
                chosen.push(l.to_string());
            }
        }
    }
    chosen.truncate(most);
    chosen.sort();
    Ok((chosen, v["reason"].as_str().unwrap_or_default().to_string()))
}
