//! Self-Refinement: decompose the question, retrieve facts from the agent's own script for each part,
//! and rewrite the draft to include the facts it left out.

use minijinja::context;
use serde_json::json;

use super::super::context::{schema, Context};
use super::super::AgentError;
use sleuth_base::text::Bm25;
use sleuth_llm::Phase;

/// Facts kept per sub-question in Self-Refinement.
const SR_FACTS_PER_SUBQUESTION: usize = 2;

/// A draft answer (with the recalled `memory`), refined when SR is on.
pub(super) async fn draft_and_refine(
    cx: &mut Context,
    purpose: &str,
    question: &str,
    asker: &str,
    memory: &str,
    phase: Phase,
) -> Result<String, AgentError> {
    let c = cx.config();
    let budget = if phase == Phase::Evaluation {
        c.eval_max_tokens
    } else {
        c.max_tokens
    };
    let user = match purpose {
        "introduce" => cx.prompts().render(
            "introduce",
            context! { memory => memory, host_line => question },
        )?,
        "answer" => cx.prompts().render(
            "answer",
            context! { memory => memory, asker => asker, question => question },
        )?,
        _ => cx.prompts().render(
            "eval_factual",
            context! { memory => memory, question => question },
        )?,
    };
    if !cx.config().modules.sr {
        let (draft, _) = cx.call(purpose, user, budget, None, phase).await?;
        return Ok(draft);
    }
    // Self-Refinement: sub-questions → facts from the script → an answer that includes them. The
    // decomposition reads the question alone, not the draft, so the two calls run together (with the
    // indices the draft-then-decompose order drew) and are joined in that order.
    let decompose = cx
        .prompts()
        .render("sr_decompose", context! { question => question })?;
    let s = schema(
        "sub_questions",
        json!({"type": "object", "properties": {"sub_questions": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 4}}, "required": ["sub_questions"], "additionalProperties": false}),
    );
    let (mut drafting, mut decomposing) = (cx.fork_calls(1), cx.fork_calls(1));
    let (drafted, decomposed) = futures::join!(
        drafting.call(purpose, user, budget, None, phase),
        decomposing.call("sr_decompose", decompose, 200, Some(s), phase),
    );
    let (draft, _) = drafted?;
    cx.join(drafting)?;
    cx.step("draft", draft.clone(), None);
    let (_, v) = decomposed?;
    cx.join(decomposing)?;
    let subs: Vec<String> = v
        .as_ref()
        .and_then(|v| v["sub_questions"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let facts = script_facts(cx.view().facts(), question, &subs);
    cx.step(
        "sr_subquestions",
        subs.join("\n"),
        Some(json!({ "facts": facts })),
    );
    let missing: Vec<&String> = facts
        .iter()
        .filter(|f| !draft.contains(f.as_str()))
        .collect();
    if missing.is_empty() {
        return Ok(draft);
    }
    let user = cx.prompts().render(
        "sr_refine",
        context! { draft => draft, facts => missing, question => question, murderer => cx.murderer() },
    )?;
    let (refined, _) = cx
        .call("sr_refine", user, budget + budget / 2, None, phase)
        .await?;
    Ok(refined)
}

/// The script sentences most relevant to the question and each sub-question (lexical retrieval over
/// the agent's own released script; the paper leaves the retriever open).
fn script_facts(facts: &[String], question: &str, subs: &[String]) -> Vec<String> {
    let index = Bm25::new(facts);
    let mut out: Vec<String> = Vec::new();
    for q in std::iter::once(question).chain(subs.iter().map(String::as_str)) {
        let scores = index.scores(q);
        let mut order: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        for i in order.into_iter().take(SR_FACTS_PER_SUBQUESTION) {
            if !out.contains(&facts[i]) {
                out.push(facts[i].clone());
            }
        }
    }
    out
}
