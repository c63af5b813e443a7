//! The Werewolf baseline of PLAYER* (Appendix C.2), after Xu et al.'s Werewolf agent.
//!
//! Xu et al. steer their agent with questions written in advance by people who know the game; PLAYER*
//! carries that over to murder mysteries with ten prepared questions (Table A2). The agent therefore does
//! not invent its questions from nothing:
//!
//! - **asking** is two calls: a structured choice of one prepared question (by letter) and of whom to
//!   ask, then a free-text call that adapts the chosen question to the case and to the conversation;
//! - **answering** is three calls: an answer from the script and the dialog, a reflection on that answer
//!   against both, and a final answer that applies the reflection.
//!
//! The prepared questions are the `predefined` template (one per line), so they are data like every
//! other prompt and can be replaced with `--prompts-dir`. Each module output (the chosen prepared
//! question, the first answer, the reflection) is a private transcript step, so a reader of the
//! transcript can follow how a question or an answer came about.

use std::collections::BTreeMap;

use minijinja::context;
use serde_json::{json, Value};

use super::baseline;
use super::context::{schema, Context};
use super::interface::Agent;
use super::prompts::PromptError;
use super::AgentError;
use sleuth_llm::Phase;
use sleuth_script::option_letter;

/// Every prompt this framework renders: the persona, the prepared questions, and one per call.
pub const PURPOSES: &[&str] = &[
    "system",
    "predefined",
    "introduce",
    "choose_question",
    "adapt_question",
    "answer",
    "reflect",
    "final_answer",
    "vote",
];

/// Prepared questions are offered by letter, so a list may have at most one per letter.
pub const MAX_PREDEFINED: usize = 26;

/// Token budget of the structured choice: two short enum values.
const CHOOSE_TOKENS: u32 = 40;
/// Token budget of an adapted question and of a reflection: a sentence or two, a few sentences.
const QUESTION_TOKENS: u32 = 120;
const REFLECTION_TOKENS: u32 = 200;

/// The Werewolf agent. Its state: which prepared questions it has already put to whom. The choice
/// prompt lists them, so the agent moves on to new topics instead of asking one player the same thing
/// twice.
#[derive(Debug, Default)]
pub struct Werewolf {
    /// (0-based index of the prepared question, the player it was put to), in the order asked.
    asked: Vec<(usize, String)>,
}

/// Splits the rendered `predefined` template into questions: one per non-empty line, with a leading list
/// marker ("3.", "3)", "3、", "-", "*") removed, at most [`MAX_PREDEFINED`].
pub fn parse_predefined(text: &str) -> Vec<String> {
    text.lines()
        .map(strip_marker)
        .filter(|l| !l.is_empty())
        .take(MAX_PREDEFINED)
        .map(str::to_string)
        .collect()
}

fn strip_marker(line: &str) -> &str {
    let l = line.trim();
    for bullet in ["- ", "* ", "• "] {
        if let Some(rest) = l.strip_prefix(bullet) {
            return rest.trim();
        }
    }
    let digits = l.len() - l.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 {
        let rest = &l[digits..];
        for sep in ['.', ')', '、', '．', '）'] {
            if let Some(r) = rest.strip_prefix(sep) {
                return r.trim();
            }
        }
    }
    l
}

/// The prepared questions for this game (they name the victims). An empty list is a broken template,
/// reported as such rather than played around.
fn predefined(cx: &Context, victims: &str) -> Result<Vec<String>, PromptError> {
    let text = cx
        .prompts()
        .render("predefined", context! { victim_names => victims })?;
    let questions = parse_predefined(&text);
    if questions.is_empty() {
        return Err(PromptError::Template {
            name: format!("werewolf/{}/predefined.j2", cx.prompts().lang()),
            message: "the list of prepared questions is empty (expected one question per line)"
                .into(),
        });
    }
    Ok(questions)
}

impl Werewolf {
    /// What has been asked, grouped by player (players in name order, letters in list order), for the
    /// choice prompt.
    fn asked_by_target(&self, questions: usize) -> Vec<Value> {
        let mut by: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, t) in &self.asked {
            if *i < questions {
                by.entry(t.as_str()).or_default().push(*i);
            }
        }
        by.into_iter()
            .map(|(target, mut idx)| {
                idx.sort_unstable();
                idx.dedup();
                let letters: Vec<String> = idx.into_iter().map(option_letter).collect();
                json!({ "target": target, "letters": letters })
            })
            .collect()
    }
}

impl Agent for Werewolf {
    /// The baselines introduce themselves from their script and memories alone.
    async fn introduce(&mut self, cx: &mut Context, host_line: &str) -> Result<String, AgentError> {
        baseline::introduce(cx, host_line).await
    }

    /// Chooses a prepared question and whom to ask (`target` when the protocol imposes one), then adapts
    /// the question to the case.
    async fn ask(
        &mut self,
        cx: &mut Context,
        target: Option<String>,
        candidates: &[String],
        _round: u32,
    ) -> Result<(String, String), AgentError> {
        let choices: Vec<String> = match &target {
            Some(t) => vec![t.clone()],
            None => candidates.to_vec(),
        };
        let Some(first) = choices.first().cloned() else {
            return Err(AgentError::Unsupported {
                framework: "werewolf",
                request: "ask a question when there is nobody to ask",
            });
        };
        let victims = cx.victim_names();
        let questions = predefined(cx, &victims)?;
        let query = match &target {
            Some(t) => cx.lines().query_about(t, &victims),
            None => cx.lines().query_suspects(&victims),
        };
        let memory = cx.recall_texts(&query, Phase::Gameplay).await?;

        // 1. Choose a prepared question and the player to put it to.
        let letters: Vec<String> = (0..questions.len()).map(option_letter).collect();
        let options: Vec<Value> = questions
            .iter()
            .zip(&letters)
            .map(|(q, l)| json!({ "letter": l, "text": q }))
            .collect();
        let asked = self.asked_by_target(questions.len());
        let user = cx.prompts().render(
            "choose_question",
            context! {
                memory => memory, options => options, asked => asked, target => target,
                candidates => candidates, victim_names => victims,
            },
        )?;
        let s = schema(
            "choose_question",
            json!({"type": "object", "properties": {
            "target": {"type": "string", "enum": choices},
            "question": {"type": "string", "enum": letters}
        }, "required": ["target", "question"], "additionalProperties": false}),
        );
        let (_, v) = cx
            .call(
                "choose_question",
                user,
                CHOOSE_TOKENS,
                Some(s),
                Phase::Gameplay,
            )
            .await?;
        let v = v.unwrap_or(Value::Null);
        // The gateway has checked both enums; the fallbacks only guard a provider that skipped the check.
        let chosen = v["target"]
            .as_str()
            .filter(|t| choices.iter().any(|c| c == t))
            .map(str::to_string)
            .unwrap_or(first);
        let index = v["question"]
            .as_str()
            .and_then(|l| letters.iter().position(|x| x == l))
            .unwrap_or(0);
        let prepared = questions[index].clone();
        cx.step(
            "predefined_question",
            prepared.clone(),
            Some(json!({
                "purpose": "choose_question", "index": index + 1, "letter": letters[index],
                "of": questions.len(), "target": chosen,
            })),
        );
        self.asked.push((index, chosen.clone()));

        // 2. Adapt it to the case and the conversation.
        let user = cx.prompts().render(
        "adapt_question",
        context! {
            memory => memory, target => chosen, predefined => prepared, murderer => cx.murderer(),
        },
    )?;
        let (text, _) = cx
            .call(
                "adapt_question",
                user,
                QUESTION_TOKENS,
                None,
                Phase::Gameplay,
            )
            .await?;
        let question = match text.trim() {
            "" => prepared,
            t => t.to_string(),
        };
        Ok((chosen, question))
    }

    /// Answer → reflection on the answer against the script and the dialog → final answer.
    async fn answer(
        &mut self,
        cx: &mut Context,
        asker: &str,
        question: &str,
    ) -> Result<String, AgentError> {
        let memory = cx.recall_texts(question, Phase::Gameplay).await?;
        let budget = cx.config().max_tokens;

        let user = cx.prompts().render(
            "answer",
            context! { memory => memory, asker => asker, question => question },
        )?;
        let (draft, _) = cx
            .call("answer", user, budget, None, Phase::Gameplay)
            .await?;
        let draft = draft.trim().to_string();
        cx.step(
            "answer_draft",
            draft.clone(),
            Some(json!({ "purpose": "answer" })),
        );

        let user = cx.prompts().render(
            "reflect",
            context! {
                memory => memory, asker => asker, question => question, draft => draft,
                murderer => cx.murderer(),
            },
        )?;
        let (reflection, _) = cx
            .call("reflect", user, REFLECTION_TOKENS, None, Phase::Gameplay)
            .await?;
        let reflection = reflection.trim().to_string();
        cx.step(
            "reflection",
            reflection.clone(),
            Some(json!({ "purpose": "reflect" })),
        );

        let user = cx.prompts().render(
            "final_answer",
            context! {
                memory => memory, asker => asker, question => question, draft => draft,
                reflection => reflection, murderer => cx.murderer(),
            },
        )?;
        let (last, _) = cx
            .call("final_answer", user, budget, None, Phase::Gameplay)
            .await?;
        // A final answer that came back empty would leave the asker with nothing; the first answer stands.
        Ok(match last.trim() {
            "" => draft,
            t => t.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Prompts;
    use sleuth_script::Language;

    fn builtin_questions(lang: Language) -> Vec<String> {
        let p = Prompts::load("werewolf", lang, None, PURPOSES).expect("built-in prompts load");
        let text = p
            .render("predefined", context! { victim_names => "Gideon Marsh" })
            .expect("predefined renders");
        parse_predefined(&text)
    }

    #[test]
    fn there_are_ten_distinct_prepared_questions_in_each_language() {
        for lang in [Language::En, Language::Zh] {
            let qs = builtin_questions(lang);
            assert_eq!(qs.len(), 10, "{lang:?}: {qs:?}");
            let mut unique = qs.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), 10, "{lang:?}: a question is repeated");
            for q in &qs {
                assert!(
                    !q.starts_with(|c: char| c.is_ascii_digit()),
                    "{lang:?}: list number left in {q:?}"
                );
            }
            // The questions are about this game's victim, not a placeholder.
            assert!(qs.iter().filter(|q| q.contains("Gideon Marsh")).count() >= 5);
        }
    }

    #[test]
    fn list_markers_and_blank_lines_are_dropped() {
        let qs = parse_predefined(
            "1. Where were you?\n\n2) Who did it?\n- Why?\n3、你在哪里？\n  plain  \n",
        );
        assert_eq!(
            qs,
            vec![
                "Where were you?",
                "Who did it?",
                "Why?",
                "你在哪里？",
                "plain"
            ]
        );
        // A number that is part of the question stays.
        assert_eq!(
            parse_predefined("10 pm: where were you?"),
            vec!["10 pm: where were you?"]
        );
        let long: String = (0..40).map(|i| format!("{i}. q{i}\n")).collect();
        assert_eq!(parse_predefined(&long).len(), MAX_PREDEFINED);
    }

    #[test]
    fn questions_already_asked_are_grouped_by_player() {
        let st = Werewolf {
            asked: vec![
                (4, "Ruth".into()),
                (0, "Ruth".into()),
                (4, "Ruth".into()),
                (2, "Arthur".into()),
                (30, "Arthur".into()),
            ],
        };
        assert_eq!(
            st.asked_by_target(10),
            vec![
                json!({"target": "Arthur", "letters": ["C"]}),
                json!({"target": "Ruth", "letters": ["A", "E"]}),
            ]
        );
        assert!(Werewolf::default().asked_by_target(10).is_empty());
    }
}
