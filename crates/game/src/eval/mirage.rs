//! MIRAGE's metrics of one game (MIRAGE §2.4 and Appendix B), computed by the evaluator actor after a
//! MIRAGE game: TII from the trust and suspicion scores the other characters gave, CIC from the clues
//! the characters investigated together (all clues and key clues), and — with an LLM judge — ICI (four
//! abilities scored 0-20) and SCI (role play scored 0-20, and ROUGE-L between each part of the character's
//! script and the part as the judge reconstructs it from its behaviour, averaged over the parts). Formulas
//! are in `formulas.rs` and `docs/metrics.md`.
//!
//! Without an LLM judge, ICI and SCI are `None` rather than a lexical imitation: "how well did this
//! player reason" has no honest string-overlap stand-in. `result.json`'s `judges.mirage` says so.
//!
//! The judge's calls do not depend on one another, so scoring is three steps: [`plan`] reads the played
//! game and assigns every call its sample index, in the order the calls were once made one by one
//! (character by character: the five abilities, then each part of the script); [`judge`] makes the
//! calls together; [`record`] appends the verdicts in that same order and computes the scores. The
//! evaluator runs [`judge`] alongside the characters' answers.

use std::collections::BTreeMap;

use serde_json::json;

use super::formulas::{cic, ici, sci, tii_suspicion_share, tii_trust_share};
use super::judge::{judge_failed, CharacterView, Judge};
use super::rouge::rouge_l;
use super::scores::{MirageCharacterScores, MirageOutcome, MirageScores};
use super::EvalError;
use crate::agent::{together, CallBound};
use crate::transcript::{Draft, Event, Transcript, Visibility};
use sleuth_llm::LlmError;
use sleuth_llm::{SampleCounter, Usage};
use sleuth_script::rules::Protocol;
use sleuth_script::{Character, Language, Script};

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

/// Everything MIRAGE's scoring needs from the played game, with every judge call's sample index.
pub(super) struct Plan {
    truth: String,
    cast: Vec<String>,
    characters: Vec<CharacterPlan>,
    cic: Option<f64>,
    cic_key: Option<f64>,
}

/// What the judge is asked about one character.
struct CharacterPlan {
    name: String,
    tii_trust_share: Option<f64>,
    tii_suspicion_share: Option<f64>,
    script: String,
    history: Vec<String>,
    actions: Vec<String>,
    /// The four ICI abilities and role play, each with its sample index; empty when the judge calls no
    /// model.
    abilities: Vec<(&'static str, u64)>,
    /// Each part of the script to reconstruct, with the text the agent played from and its sample
    /// index — `None` for an empty part, which scores 0 without a call (as the reference scores it).
    parts: Vec<(&'static str, String, Option<u64>)>,
}

/// A judge's score of one ability (`None` from a judge that calls no model).
type AbilityScore = Result<Option<(f64, Usage)>, LlmError>;
/// A judge's reconstruction of one part of a script (`None` from a judge that calls no model).
type Reconstruction = Result<Option<(String, Usage)>, LlmError>;

/// What the judge answered about one character, call by call in the plan's order.
pub(super) struct Judged {
    abilities: Vec<AbilityScore>,
    /// `None` for an empty part.
    parts: Vec<Option<Reconstruction>>,
}

impl CharacterPlan {
    fn view<'a>(&'a self, plan: &'a Plan) -> CharacterView<'a> {
        CharacterView {
            name: &self.name,
            truth: &plan.truth,
            cast: plan.cast.clone(),
            script: self.script.clone(),
            history: self.history.clone(),
            actions: self.actions.clone(),
        }
    }
}

/// Reads a finished MIRAGE game and plans its scoring: TII and CIC from the outcome, and — when `judge`
/// is an LLM — every judge call with its sample index from `samples`.
pub(super) fn plan(
    script: &Script,
    judge: &Judge,
    samples: &mut SampleCounter,
    t: &Transcript,
    outcome: &MirageOutcome,
) -> Plan {
    let trust = outcome.trust_sums();
    let suspicion = outcome.suspicion_sums();
    let history = public_history(t);
    let characters = script
        .characters
        .iter()
        .map(|c| {
            let actions: Vec<String> = history
                .iter()
                .filter(|(speaker, _)| *speaker == c.name)
                .map(|(_, line)| line.clone())
                .collect();
            let calls = judge.makes_calls();
            let abilities = match calls {
                true => abilities(script.language)
                    .into_iter()
                    .map(|a| (a, samples.next_index()))
                    .collect(),
                false => Vec::new(),
            };
            let parts = match calls {
                true => script_parts(c, script_summary(t, &c.name))
                    .into_iter()
                    .map(|(part, original)| {
                        let seq = (!original.is_empty()).then(|| samples.next_index());
                        (part, original, seq)
                    })
                    .collect(),
                false => Vec::new(),
            };
            CharacterPlan {
                name: c.name.clone(),
                tii_trust_share: tii_trust_share(&trust, &suspicion, &c.name),
                tii_suspicion_share: tii_suspicion_share(&trust, &suspicion, &c.name),
                script: c.script_text(),
                history: history
                    .iter()
                    .rev()
                    .take(MAX_HISTORY_LINES)
                    .rev()
                    .map(|(_, line)| line.clone())
                    .collect(),
                actions,
                abilities,
                parts,
            }
        })
        .collect();
    let key: BTreeMap<&str, bool> = script
        .clues
        .iter()
        .map(|c| (c.id.as_str(), c.key))
        .collect();
    let key_found = outcome
        .investigated
        .values()
        .flatten()
        .filter(|id| key.get(id.as_str()).copied().unwrap_or(false))
        .count();
    Plan {
        truth: script.truth.narrative.clone(),
        cast: script
            .characters
            .iter()
            .map(|c| format!("{}: {}", c.name, c.public))
            .collect(),
        characters,
        // CIC as MIRAGE computes it: the whole table's investigations over the clues available, not a
        // mean of per-character shares (that would divide the published value by the cast size).
        cic: outcome.cic(),
        cic_key: cic(key_found, outcome.key_clues_available),
    }
}

/// Makes every judge call of the plan, each under the game's bound.
pub(super) async fn judge(
    plan: &Plan,
    judge: &Judge,
    game_id: &str,
    bound: &CallBound,
) -> Vec<Judged> {
    let mut work = Vec::with_capacity(plan.characters.len());
    for c in &plan.characters {
        work.push(judge_character(plan, c, judge, game_id, bound));
    }
    together(bound, work).await
}

async fn judge_character(
    plan: &Plan,
    c: &CharacterPlan,
    judge: &Judge,
    game_id: &str,
    bound: &CallBound,
) -> Judged {
    let view = &c.view(plan);
    let mut abilities = Vec::with_capacity(c.abilities.len());
    for &(ability, seq) in &c.abilities {
        abilities.push(async move {
            let _permit = bound.enter().await;
            judge.score_ability(game_id, seq, view, ability).await
        });
    }
    let mut parts = Vec::with_capacity(c.parts.len());
    for &(part, _, seq) in &c.parts {
        parts.push(async move {
            match seq {
                Some(seq) => {
                    let _permit = bound.enter().await;
                    Some(judge.reconstruct_script(game_id, seq, view, part).await)
                }
                None => None,
            }
        });
    }
    let (abilities, parts) = futures::join!(together(bound, abilities), together(bound, parts));
    Judged { abilities, parts }
}

/// Appends the judge's verdicts as private `judgement` events of the judged character, character by
/// character in the plan's order, and computes MIRAGE's scores. The first failed judge call (in that
/// order) fails the evaluation, after the verdicts before it.
pub(super) fn record(
    plan: Plan,
    judged: Vec<Judged>,
    t: &mut Transcript,
) -> Result<MirageScores, EvalError> {
    let mut out = MirageScores::default();
    for (c, j) in plan.characters.into_iter().zip(judged) {
        let mut s = MirageCharacterScores {
            tii_trust_share: c.tii_trust_share,
            tii_suspicion_share: c.tii_suspicion_share,
            ..MirageCharacterScores::default()
        };
        let mut scores = Vec::new();
        for ((ability, _), r) in c.abilities.iter().zip(j.abilities) {
            let Some((score, usage)) = r.map_err(judge_failed)? else {
                break;
            };
            scores.push(score);
            verdict(
                t,
                &c.name,
                format!("{ability}: {score}"),
                usage,
                json!({"ability": ability, "score": score}),
            )?;
        }
        if let [ra, cc, dobs, ct, rp] = scores[..] {
            s.abilities = Some([ra, cc, dobs, ct]);
            s.ici = Some(ici([ra, cc, dobs, ct]));
            s.role_play = Some(rp);
            // SCI's ROUGE-L as the reference computes it: each part of the script reconstructed on
            // its own and scored against the text the agent played from, then averaged.
            let mut fs = Vec::new();
            for ((part, original, _), r) in c.parts.iter().zip(j.parts) {
                let Some(r) = r else {
                    // An empty part: the reference scores it 0 whatever the judge writes (and still
                    // counts it), so no call was made.
                    fs.push(0.0);
                    continue;
                };
                let Some((rebuilt, usage)) = r.map_err(judge_failed)? else {
                    fs.clear();
                    break;
                };
                let f = rouge_l(original, &rebuilt).f;
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
        out.characters.insert(c.name, s);
    }
    let avg = |f: fn(&MirageCharacterScores) -> Option<f64>| {
        let xs: Vec<f64> = out.characters.values().filter_map(f).collect();
        super::stats::mean(&xs)
    };
    out.tii_trust_share = avg(|s| s.tii_trust_share);
    out.tii_suspicion_share = avg(|s| s.tii_suspicion_share);
    out.cic = plan.cic;
    out.cic_key = plan.cic_key;
    out.ici = avg(|s| s.ici);
    out.sci = avg(|s| s.sci);
    Ok(out)
}

/// The parts of a character's script the judge reconstructs one at a time, with their texts, in the
/// order of MIRAGE's script files: Story, Script (sleuth's timeline, acts and secrets), Relationship,
/// Performance, Purpose (goals), Ability. A character whose agent played from a summary of its script
/// (`agent/mirage/summary.rs` summarises the whole script in one text, where the reference summarises each long
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

/// Whether evaluation reads `e` again after play: what [`public_history`] and [`script_summary`] read
/// (MIRAGE's scoring; the other protocols' evaluation reads no event of play). The game's transcript
/// lets every other event go from memory once it is in the file ([`Transcript::retaining`]), so the two
/// must change together: a reader of another kind of event here needs it added.
pub fn reads_after_play(e: &Event) -> bool {
    e.visible_to == Visibility::All || e.kind == SUMMARY
}

/// What a game of `protocol` keeps in memory of its written events: what MIRAGE's evaluation reads
/// ([`reads_after_play`]); nothing for the other protocols, whose evaluation asks the characters and
/// reads no event of play (the public conversation was ~13 KiB a game at a sweep's evaluation peak,
/// issue 32).
pub fn retained_after_play(protocol: Protocol) -> fn(&Event) -> bool {
    match protocol {
        Protocol::Mirage => reads_after_play,
        Protocol::ThinkThrice | Protocol::WellPlay => |_| false,
    }
}

/// The kind of a MIRAGE agent's summary step.
const SUMMARY: &str = "summary";

/// The last summary of its script that `name`'s agent played from, if it summarised it.
fn script_summary(t: &Transcript, name: &str) -> Option<String> {
    t.events()
        .iter()
        .rev()
        .find(|e| {
            e.kind == SUMMARY
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
