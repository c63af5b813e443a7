//! MIRAGE's metrics of one game (MIRAGE §2.4 and Appendix B), computed by the evaluator actor after a
//! MIRAGE game: TII from the trust and suspicion scores the other characters gave, CIC from the clues
//! the characters investigated together (all clues and key clues), and — with an LLM judge — ICI (four
//! abilities scored 0-20) and SCI (role play scored 0-20, and ROUGE-L between each part of the character's
//! script and the part as the judge reconstructs it from its behaviour, averaged over the parts). Formulas
//! are in `formulas.rs` and `docs/metrics.md`.
//!
//! Without an LLM judge, ICI and SCI are `None` rather than a lexical imitation: "how well did this
//! player reason" has no honest string-overlap stand-in. `result.json`'s `judges.mirage` says so.

use std::collections::BTreeMap;

use serde_json::json;

use super::formulas::{cic, ici, sci, tii};
use super::judge::{judge_failed, CharacterView, Judge};
use super::rouge::rouge_l;
use super::scores::{MirageCharacterScores, MirageOutcome, MirageScores};
use super::EvalError;
use crate::llm::{SampleCounter, Usage};
use crate::script::{Character, Language, Script};
use crate::transcript::{Draft, Transcript, Visibility};

/// The four ICI abilities and the SCI role-play criterion, as the judge is asked about them.
fn abilities(lang: Language) -> [&'static str; 5] {
    match lang {
        Language::En => [
            "Reasoning and analysis: drawing sound conclusions about the case from what was said and found",
            "Communication and cooperation: exchanging information with the others and working towards the goal together",
            "Detail observation: noticing and using small facts, contradictions and clues",
            "Creative thinking: new angles, original questions and hypotheses that move the game forward",
            "Role play: how faithfully they played the character their script describes (personality, way of speaking, goals, rules)",
        ],
        Language::Zh => [
            "推理分析能力：根据发言和线索对案情得出可靠结论",
            "沟通合作能力：与他人交流信息，共同推进目标",
            "细节观察能力：注意并利用细小的事实、矛盾和线索",
            "创新思维能力：提出新的角度、独到的问题和假设，推动游戏进展",
            "角色扮演：是否忠实地扮演了剧本描述的角色（性格、说话方式、目标、规则）",
        ],
    }
}

/// Lines of history a judge reads at most (the most recent ones): a long game must still fit a prompt.
const MAX_HISTORY_LINES: usize = 200;

/// Scores every character of a finished MIRAGE game with `judge` (ICI and SCI only when it is an
/// LLM); judge calls and verdicts are appended to the transcript as private `judgement` events of the
/// judged character.
pub(super) async fn score(
    script: &Script,
    judge: &Judge,
    game_id: &str,
    samples: &mut SampleCounter,
    t: &mut Transcript,
    outcome: &MirageOutcome,
) -> Result<MirageScores, EvalError> {
    let trust = outcome.trust_sums();
    let suspicion = outcome.suspicion_sums();
    let key: BTreeMap<&str, bool> = script
        .clues
        .iter()
        .map(|c| (c.id.as_str(), c.key))
        .collect();
    let lang = script.language;
    let history = public_history(t);
    let cast: Vec<String> = script
        .characters
        .iter()
        .map(|c| format!("{}: {}", c.name, c.public))
        .collect();
    let mut out = MirageScores::default();
    for c in &script.characters {
        let mut s = MirageCharacterScores {
            tii: tii(&trust, &suspicion, &c.name),
            ..MirageCharacterScores::default()
        };
        let actions: Vec<String> = history
            .iter()
            .filter(|(speaker, _)| *speaker == c.name)
            .map(|(_, line)| line.clone())
            .collect();
        let view = CharacterView {
            name: &c.name,
            truth: &script.truth.narrative,
            cast: cast.clone(),
            script: c.script_text(),
            history: history
                .iter()
                .rev()
                .take(MAX_HISTORY_LINES)
                .rev()
                .map(|(_, line)| line.clone())
                .collect(),
            actions,
        };
        let asked = abilities(lang);
        let mut scores = Vec::new();
        for ability in asked {
            let seq = samples.next_index();
            match judge
                .score_ability(game_id, seq, &view, ability)
                .await
                .map_err(judge_failed)?
            {
                Some((score, usage)) => {
                    scores.push(score);
                    verdict(
                        t,
                        &c.name,
                        format!("{ability}: {score}"),
                        usage,
                        json!({"ability": ability, "score": score}),
                    )?;
                }
                None => break,
            }
        }
        if let [ra, cc, dobs, ct, rp] = scores[..] {
            s.abilities = Some([ra, cc, dobs, ct]);
            s.ici = Some(ici([ra, cc, dobs, ct]));
            s.role_play = Some(rp);
            // SCI's ROUGE-L as the reference computes it: each part of the script reconstructed on
            // its own and scored against the text the agent played from, then averaged.
            let mut fs = Vec::new();
            for (part, original) in script_parts(c, script_summary(t, &c.name)) {
                if original.is_empty() {
                    // The reference scores an empty part 0 whatever the judge writes (and still
                    // counts it): no call is needed to know that.
                    fs.push(0.0);
                    continue;
                }
                let seq = samples.next_index();
                let Some((rebuilt, usage)) = judge
                    .reconstruct_script(game_id, seq, &view, part)
                    .await
                    .map_err(judge_failed)?
                else {
                    fs.clear();
                    break;
                };
                let f = rouge_l(&original, &rebuilt).f;
                fs.push(f);
                verdict(
                    t,
                    &c.name,
                    rebuilt,
                    usage,
                    json!({"reconstruction": part, "rouge_l_f": f}),
                )?;
            }
            if let Some(f) = super::stats::mean(&fs) {
                s.reconstruction_rouge_l = Some(f);
                s.sci = Some(sci(rp, f));
            }
        }
        out.characters.insert(c.name.clone(), s);
    }
    let avg = |f: fn(&MirageCharacterScores) -> Option<f64>| {
        let xs: Vec<f64> = out.characters.values().filter_map(f).collect();
        super::stats::mean(&xs)
    };
    out.tii = avg(|s| s.tii);
    // CIC as MIRAGE computes it: the whole table's investigations over the clues available, not a
    // mean of per-character shares (that would divide the published value by the cast size).
    out.cic = outcome.cic();
    let key_found = outcome
        .investigated
        .values()
        .flatten()
        .filter(|id| key.get(id.as_str()).copied().unwrap_or(false))
        .count();
    out.cic_key = cic(key_found, outcome.key_clues_available);
    out.ici = avg(|s| s.ici);
    out.sci = avg(|s| s.sci);
    Ok(out)
}

/// The parts of a character's script the judge reconstructs one at a time, with their texts, in the
/// order of MIRAGE's script files: Story, Script (sleuth's timeline, acts and secrets), Relationship,
/// Performance, Purpose (goals), Ability. A character whose agent played from a summary of its script
/// (`agent/mirage.rs` summarises the whole script in one text, where the reference summarises each long
/// part) is scored on what it played from: that summary, reconstructed as one part.
fn script_parts(c: &Character, summary: Option<String>) -> Vec<(&'static str, String)> {
    if let Some(summary) = summary {
        return vec![("all", summary.trim().to_string())];
    }
    let join = |texts: &[String]| {
        texts
            .iter()
            .map(|x| x.trim())
            .filter(|x| !x.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut script = vec![c.timeline.clone()];
    script.extend(c.acts.iter().cloned());
    script.extend(c.secrets.iter().cloned());
    vec![
        ("story", c.story.trim().to_string()),
        ("script", join(&script)),
        ("relationship", join(&c.relationships)),
        ("performance", join(&c.performance)),
        ("purpose", join(&c.goals)),
        ("ability", join(&c.abilities)),
    ]
}

/// The last summary of its script that `name`'s agent played from, if it summarised it.
fn script_summary(t: &Transcript, name: &str) -> Option<String> {
    t.events()
        .iter()
        .rev()
        .find(|e| {
            e.kind == "summary"
                && e.speaker == name
                && e.data
                    .as_ref()
                    .and_then(|d| d.get("of"))
                    .and_then(|v| v.as_str())
                    == Some("script")
        })
        .map(|e| e.text.clone())
}

fn verdict(
    t: &mut Transcript,
    about: &str,
    text: String,
    usage: Usage,
    data: serde_json::Value,
) -> Result<(), EvalError> {
    let d = Draft::private("judgement", "judge", &[about], text)
        .with_usage(usage)
        .with_data(data);
    t.push("evaluation", d)?;
    Ok(())
}

/// What everyone could see, as `(speaker, "speaker: text")` lines: speeches, questions, answers,
/// disclosed clues, accusations. The host's procedural lines are left out.
fn public_history(t: &Transcript) -> Vec<(String, String)> {
    t.events()
        .iter()
        .filter(|e| e.visible_to == Visibility::All && (e.speaker != "host" || e.kind == "clue"))
        .map(|e| (e.speaker.clone(), format!("{}: {}", e.speaker, e.text)))
        .collect()
}
