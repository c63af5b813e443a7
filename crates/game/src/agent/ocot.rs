//! The O-CoT baseline of PLAYER* (Appendix C.2): objective-guided chain of thought, after Park et al.'s
//! reflecting agents as PLAYER* sets them up for murder mysteries.
//!
//! Before every question the agent reflects on each of its objectives in turn — is it met, what is known,
//! what is missing, who could tell — and only then chooses whom to ask and what, from those reflections,
//! its script and the dialog. It answers from its script and the dialog in one call. Reflecting on every
//! objective before every question is what makes O-CoT the most expensive baseline in the paper (§5,
//! cost table); that cost is kept, not optimised away.
//!
//! The objectives are the character's `goals` from the script. A script without goals (some imported
//! ones) still gives the agent something to reflect on: the objective every player of its side shares,
//! finding the murderer or not being found. Each reflection is a private transcript step that names its
//! objective, so a reader can see what the agent thought before each question.

use minijinja::context;
use serde_json::{json, Value};

use super::baseline;
use super::context::Context;
use super::interface::Agent;
use super::AgentError;
use sleuth_llm::Phase;

/// Every prompt this framework renders.
pub const PURPOSES: &[&str] = &[
    "system",
    "introduce",
    "reflect_objective",
    "ask",
    "answer",
    "vote",
];

/// Token budget of one reflection: a few sentences of reasoning.
const REFLECTION_TOKENS: u32 = 200;
/// Token budget of a question (with its target) and of a vote's reason.
const ASK_TOKENS: u32 = 150;

/// The O-CoT agent. Its state: the latest reflection on each objective, in objective order. The next
/// reflection sees it, so the agent tracks its progress across rounds instead of starting over.
#[derive(Debug, Default)]
pub struct Ocot {
    reflections: Vec<String>,
}

/// The objectives the agent reflects on: its script's goals, or — when the script gives none — the one
/// objective of its side (prompt language `lang`: "en" or "zh"; `victims` already joined).
pub fn objectives(goals: &[String], murderer: bool, lang: &str, victims: &str) -> Vec<String> {
    let own: Vec<String> = goals
        .iter()
        .map(|g| g.trim())
        .filter(|g| !g.is_empty())
        .map(str::to_string)
        .collect();
    if !own.is_empty() {
        return own;
    }
    let default = match (lang, murderer) {
        ("zh", false) => format!("找出杀害{victims}的凶手。"),
        ("zh", true) => format!("不要让任何人发现是你杀害了{victims}。"),
        (_, false) => format!("Find out who killed {victims}."),
        (_, true) => format!("Keep everyone from finding out that you killed {victims}."),
    };
    vec![default]
}

/// What the agent asks if its model returns an empty question: the one question every investigation
/// starts with, rather than an empty line in the game.
fn fallback_question(lang: &str, victims: &str) -> String {
    match lang {
        "zh" => format!("{victims}遇害的时候，你在哪里、在做什么？"),
        _ => format!("Where were you, and what were you doing, when {victims} died?"),
    }
}

impl Agent for Ocot {
    /// The baselines introduce themselves from their script and memories alone.
    async fn introduce(&mut self, cx: &mut Context, host_line: &str) -> Result<String, AgentError> {
        baseline::introduce(cx, host_line).await
    }

    /// One reflection per objective (each with the memories that bear on it), then a question chosen
    /// from those reflections.
    async fn ask(
        &mut self,
        cx: &mut Context,
        target: Option<String>,
        candidates: &[String],
        _round: u32,
    ) -> Result<(String, String), AgentError> {
        let victims = cx.victim_names();
        let lang = cx.prompts().lang().to_string();
        let objs = objectives(cx.view().goals(), cx.murderer(), &lang, &victims);
        let mut reflections: Vec<Value> = Vec::with_capacity(objs.len());
        let mut texts: Vec<String> = Vec::with_capacity(objs.len());
        for (i, objective) in objs.iter().enumerate() {
            let memory = cx.recall_texts(objective, Phase::Gameplay).await?;
            let previous = self.reflections.get(i).filter(|p| !p.is_empty()).cloned();
            let user = cx.prompts().render(
                "reflect_objective",
                context! {
                    memory => memory, objective => objective, previous => previous, index => i + 1,
                    count => objs.len(), candidates => candidates, murderer => cx.murderer(),
                },
            )?;
            let (text, _) = cx
                .call(
                    "reflect_objective",
                    user,
                    REFLECTION_TOKENS,
                    None,
                    Phase::Gameplay,
                )
                .await?;
            let text = text.trim().to_string();
            cx.step(
                "objective_reflection",
                text.clone(),
                Some(json!({
                    "purpose": "reflect_objective", "objective": objective, "index": i + 1,
                    "of": objs.len(),
                })),
            );
            reflections.push(json!({ "objective": objective, "reflection": text }));
            texts.push(text);
        }
        self.reflections = texts;

        let query = match &target {
            Some(t) => cx.lines().query_about(t, &victims),
            None => cx.lines().query_suspects(&victims),
        };
        let memory = cx.recall_texts(&query, Phase::Gameplay).await?;
        let choices: Vec<String> = match &target {
            Some(t) => vec![t.clone()],
            None => candidates.to_vec(),
        };
        let user = cx.prompts().render(
            "ask",
            context! {
                memory => memory, reflections => reflections, target => target,
                candidates => candidates, victim_names => victims, murderer => cx.murderer(),
            },
        )?;
        let (chosen, question) = cx
            .pick(
                "ask",
                user,
                ("target", &choices),
                "question",
                ASK_TOKENS,
                Phase::Gameplay,
            )
            .await?;
        let question = match question.trim() {
            "" => fallback_question(&lang, &victims),
            q => q.to_string(),
        };
        Ok((chosen, question))
    }

    /// An answer from the script and the dialog, in one call.
    async fn answer(
        &mut self,
        cx: &mut Context,
        asker: &str,
        question: &str,
    ) -> Result<String, AgentError> {
        let memory = cx.recall_texts(question, Phase::Gameplay).await?;
        let user = cx.prompts().render(
            "answer",
            context! { memory => memory, asker => asker, question => question },
        )?;
        let budget = cx.config().max_tokens;
        let (text, _) = cx
            .call("answer", user, budget, None, Phase::Gameplay)
            .await?;
        Ok(text.trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_goals_are_the_objectives_in_order_without_blanks() {
        let goals = vec![
            "Find the thief.".to_string(),
            "  ".to_string(),
            " Keep your past hidden. ".to_string(),
        ];
        assert_eq!(
            objectives(&goals, false, "en", "Gideon Marsh"),
            vec!["Find the thief.", "Keep your past hidden."]
        );
        // A murderer with goals reflects on its own goals, not on a default.
        assert_eq!(objectives(&goals, true, "en", "Gideon Marsh").len(), 2);
    }

    #[test]
    fn without_goals_each_side_gets_its_own_objective_in_the_prompt_language() {
        let none: Vec<String> = vec![" ".into()];
        let civ = objectives(&none, false, "en", "Gideon Marsh");
        let mur = objectives(&none, true, "en", "Gideon Marsh");
        assert_eq!(civ, vec!["Find out who killed Gideon Marsh."]);
        assert_eq!(mur.len(), 1);
        assert!(mur[0].contains("you killed Gideon Marsh"), "{mur:?}");
        assert_ne!(civ, mur);
        let zh = objectives(&[], false, "zh", "周德昌");
        assert_eq!(zh, vec!["找出杀害周德昌的凶手。"]);
        assert!(objectives(&[], true, "zh", "周德昌")[0].contains("周德昌"));
    }

    #[test]
    fn the_fallback_question_is_a_question_about_the_victims() {
        assert!(fallback_question("en", "Ada").ends_with("when Ada died?"));
        assert!(fallback_question("zh", "阿达").starts_with("阿达"));
    }
}
