//! Evaluation as a researcher reads it: judge calls billed to the evaluation phase only, WellPlay
//! multiple choice repeated for mean ± std, informed accuracy bounded by overall accuracy, MIRAGE's
//! judge-based metrics present exactly when a judge is configured.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use sleuth::agent::{AgentConfig, Framework};
use sleuth::game::{
    self, GameConfig, GameResult, JudgeChoice, MirageSettings, ProtocolSettings,
    ThinkThriceSettings, WellPlaySettings,
};
use sleuth::llm::{Gateway, GatewayConfig, Pricing, SimulatedProvider};
use sleuth::script::Script;

fn night_ferry() -> Arc<Script> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/night-ferry.toml");
    let mut s = Script::load(&p).expect("example loads");
    // A few questions of each kind keep the games short.
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    s.factual.retain(|q| {
        let n = per.entry(q.character.clone()).or_default();
        *n += 1;
        *n <= 3
    });
    s.inferential.truncate(3);
    Arc::new(s)
}

/// Agents on `sim-1` at $1/$2 per million tokens, the judge on `sim-judge` at $10/$20: judge spending
/// is visible in dollars as well as calls.
fn pricing(dir: &Path) -> Pricing {
    let p = dir.join("pricing.toml");
    std::fs::write(
        &p,
        "[models.\"sim-1\"]\ninput = 1.0\noutput = 2.0\n\n[models.\"sim-judge\"]\ninput = 10.0\noutput = 20.0\n",
    )
    .expect("write pricing");
    Pricing::load(&p).expect("pricing loads")
}

async fn play(script: &Arc<Script>, config: GameConfig, pricing: Pricing) -> GameResult {
    let gw = Gateway::start(
        Arc::new(SimulatedProvider::default()),
        pricing,
        GatewayConfig::default(),
    )
    .await
    .expect("gateway");
    game::play(script.clone(), config, gw)
        .await
        .expect("game completes")
}

fn short_thinkthrice() -> ProtocolSettings {
    ProtocolSettings::thinkthrice(ThinkThriceSettings {
        rounds_before_clues: 1,
        rounds_after_clues: 0,
        initial_questioning: false,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_calls_are_billed_to_evaluation_and_leave_gameplay_untouched() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = night_ferry();
    let config = |judge: JudgeChoice, transcript: &str| GameConfig {
        game_id: "judged".into(),
        seed: 4,
        protocol: short_thinkthrice(),
        agent: AgentConfig {
            modules: "mr".parse().expect("modules"),
            ..AgentConfig::default()
        },
        judge,
        eval_repeats: 1,
        transcript_path: Some(dir.path().join(transcript)),
        ..GameConfig::default()
    };
    let lexical = play(
        &script,
        config(JudgeChoice::default(), "lexical.jsonl"),
        pricing(dir.path()),
    )
    .await;
    let judged = play(
        &script,
        config(JudgeChoice::Llm("sim-judge".into()), "llm.jsonl"),
        pricing(dir.path()),
    )
    .await;
    // The same seed plays the same game: judging changes nothing before evaluation.
    assert_eq!(
        lexical.usage_by_phase.gameplay,
        judged.usage_by_phase.gameplay
    );
    assert!(judged.usage_by_phase.gameplay.cost_usd > 0.0);
    // The lexical judge makes no calls; the LLM judge one per factual answer and one per rationale.
    let players = script.characters.len() as u64;
    let judge_calls = players * (script.factual.len() + script.inferential.len()) as u64;
    assert_eq!(
        judged.usage_by_phase.evaluation.calls,
        lexical.usage_by_phase.evaluation.calls + judge_calls,
        "lexical {:?} vs judged {:?}",
        lexical.usage_by_phase.evaluation,
        judged.usage_by_phase.evaluation
    );
    // Judge events carry the judge's usage, priced at the judge model's rates.
    let text = std::fs::read_to_string(dir.path().join("llm.jsonl")).expect("transcript");
    let (mut calls, mut cost) = (0u64, 0.0f64);
    for line in text.lines() {
        let e: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        if e["kind"] == "judgement" {
            assert_eq!(e["stage"], "evaluation");
            calls += e["usage"]["calls"].as_u64().unwrap_or(0);
            cost += e["usage"]["cost_usd"].as_f64().unwrap_or(0.0);
        }
    }
    assert_eq!(calls, judge_calls);
    let extra =
        judged.usage_by_phase.evaluation.cost_usd - lexical.usage_by_phase.evaluation.cost_usd;
    assert!(
        (extra - cost).abs() < 1e-9,
        "the evaluation bill grew by exactly the judge's cost: {extra} vs {cost}"
    );
    assert_eq!(judged.judges["factual"], "llm:sim-judge");
    assert_eq!(judged.judges["rationale"], "llm:sim-judge");
    assert!(lexical.judges["factual"].starts_with("lexical"));
    // Informed accuracy can never exceed overall accuracy.
    for r in [&lexical, &judged] {
        let (overall, informed) = (
            r.inferential_accuracy.expect("inferential"),
            r.informed_accuracy.expect("informed"),
        );
        assert!(informed <= overall, "{informed} > {overall}");
        let score = r.rationale_score.expect("rationale score");
        assert!((1.0..=5.0).contains(&score), "{score}");
    }
}

/// Points a player can score per repeat on the night ferry's seven per-character questions: three
/// objective (10 each), two reasoning (5 each), two relations (2 each).
const FERRY_POINTS_PER_REPEAT: u32 = 3 * 10 + 2 * 5 + 2 * 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multiple_choice_is_asked_once_per_repeat() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = night_ferry();
    let transcript = dir.path().join("repeats.jsonl");
    let r = play(
        &script,
        GameConfig {
            game_id: "repeats".into(),
            seed: 2,
            protocol: ProtocolSettings::wellplay(WellPlaySettings {
                rounds: 1,
                questions_per_round: 1,
            }),
            framework: Framework::Pp,
            eval_repeats: 3,
            transcript_path: Some(transcript.clone()),
            ..GameConfig::default()
        },
        pricing(dir.path()),
    )
    .await;
    let c = r.choice.expect("multiple-choice scores");
    let per_repeat = script
        .choice
        .iter()
        .filter(|q| q.character.is_some())
        .count();
    assert_eq!(per_repeat, 7);
    assert_eq!(c.repeats, 3);
    assert_eq!(c.overall.questions, 3 * per_repeat);
    assert_eq!(c.overall.possible, 3 * FERRY_POINTS_PER_REPEAT);

    // Grade every recorded answer by hand: right only when exactly the true letters were chosen,
    // worth its category's points. Each repeat's score is its points over the 44 possible.
    let mut points = [0u32; 3];
    let mut answers = [0usize; 3];
    let text = std::fs::read_to_string(&transcript).expect("transcript");
    for line in text.lines() {
        let e: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        if e["kind"] != "choice_answer" {
            continue;
        }
        let d = &e["data"];
        let letters = |v: &serde_json::Value| -> BTreeSet<String> {
            v.as_array()
                .expect("a list of letters")
                .iter()
                .map(|l| l.as_str().expect("a letter").to_ascii_uppercase())
                .collect()
        };
        let worth = match d["category"].as_str().expect("category") {
            "objective" => 10,
            "reasoning" => 5,
            "relations" => 2,
            other => panic!("unknown category {other}"),
        };
        let repeat = d["repeat"].as_u64().expect("repeat number") as usize - 1;
        answers[repeat] += 1;
        if letters(&d["chosen"]) == letters(&d["truth"]) {
            points[repeat] += worth;
        }
    }
    assert_eq!(answers, [per_repeat; 3], "every question once per repeat");
    let xs: Vec<f64> = points
        .iter()
        .map(|&p| f64::from(p) / f64::from(FERRY_POINTS_PER_REPEAT))
        .collect();
    assert_eq!(c.repeat_scores, xs);
    // The mean ± sample standard deviation (n − 1 = 2) the report prints for these three repeats.
    let mean = (xs[0] + xs[1] + xs[2]) / 3.0;
    let expected_std =
        (((xs[0] - mean).powi(2) + (xs[1] - mean).powi(2) + (xs[2] - mean).powi(2)) / 2.0).sqrt();
    let (m, std) = c.score_mean_std().expect("mean and std");
    assert!((m - mean).abs() < 1e-12, "{m} vs {mean}");
    assert!(
        (std - expected_std).abs() < 1e-12,
        "std {std} vs {expected_std} for repeat points {points:?}"
    );
    // The summed tally and the repeats agree: each repeat has the same possible points.
    let summed = c.overall.score().expect("score");
    assert!((summed - mean).abs() < 1e-9, "{summed} vs {mean}");
    assert_eq!(c.overall.points, points.iter().sum::<u32>());
    for (cat, accs) in &c.repeat_accuracy {
        assert_eq!(accs.len(), 3, "{cat}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirage_judge_metrics_need_a_judge() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = night_ferry();
    let config = |overrides: BTreeMap<String, String>| GameConfig {
        game_id: "mirage-metrics".into(),
        seed: 6,
        protocol: ProtocolSettings::mirage(MirageSettings {
            iterations: 1,
            ..MirageSettings::default()
        }),
        framework: Framework::Mirage,
        judge_overrides: overrides,
        eval_repeats: 1,
        ..GameConfig::default()
    };
    let without = play(&script, config(BTreeMap::new()), pricing(dir.path())).await;
    let m = without.mirage_scores.expect("mirage scores");
    assert!(m.ici.is_none() && m.sci.is_none(), "{m:?}");
    assert!(without.judges["mirage"].starts_with("none"));
    for (name, s) in &m.characters {
        let tii = s
            .tii_trust_share
            .expect("every character was scored by the others");
        assert!((0.0..=1.0).contains(&tii), "{name}: {tii}");
        // The published direction is the complement of Eq. 1's, under its own name.
        let published = s.tii_suspicion_share.expect("suspicion share stored");
        assert!(
            (tii + published - 1.0).abs() < 1e-9,
            "{name}: {tii} + {published}"
        );
    }
    // CIC is the table's, not a character's: investigations of all characters / clues available.
    let outcome = without.mirage.as_ref().expect("mirage outcome");
    assert_eq!(m.cic, outcome.cic());
    assert!(m.cic.is_some());
    let with = play(
        &script,
        config(BTreeMap::from([(
            "mirage".to_string(),
            "sim-judge".to_string(),
        )])),
        pricing(dir.path()),
    )
    .await;
    let m = with.mirage_scores.expect("mirage scores");
    for (name, s) in &m.characters {
        let ici = s.ici.expect("ICI with a judge");
        let sci = s.sci.expect("SCI with a judge");
        assert!((0.0..=100.0).contains(&ici), "{name}: {ici}");
        assert!((0.0..=100.0).contains(&sci), "{name}: {sci}");
        let abilities = s.abilities.expect("four abilities");
        let expected = abilities.iter().sum::<f64>() / 80.0 * 100.0;
        assert!((ici - expected).abs() < 1e-9);
    }
    // Only the MIRAGE judge was switched: factual answers still use the lexical judge.
    assert!(with.judges["factual"].starts_with("lexical"));
    assert_eq!(with.judges["mirage"], "llm:sim-judge");
}

/// SCI's ROUGE-L as MIRAGE's reference computes it: each of the six parts of a character's script
/// reconstructed by its own judge call and scored against that part, an empty part scoring 0 without a
/// call, and the character's ROUGE-L the mean over all six; a character whose agent played from a
/// summary of its script is scored on that summary, as one part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sci_reconstructs_the_script_part_by_part() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = night_ferry();
    for summary_cap in [0, MirageSettings::default().script_summary_tokens] {
        let transcript = dir.path().join(format!("sci-{summary_cap}.jsonl"));
        let r = play(
            &script,
            GameConfig {
                game_id: "sci-parts".into(),
                seed: 6,
                protocol: ProtocolSettings::mirage(MirageSettings {
                    iterations: 1,
                    script_summary_tokens: summary_cap,
                    ..MirageSettings::default()
                }),
                framework: Framework::Mirage,
                judge_overrides: BTreeMap::from([("mirage".into(), "sim-judge".into())]),
                eval_repeats: 1,
                transcript_path: Some(transcript.clone()),
                ..GameConfig::default()
            },
            pricing(dir.path()),
        )
        .await;
        let mut parts: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
        let mut summarised: BTreeSet<String> = BTreeSet::new();
        for line in std::fs::read_to_string(&transcript)
            .expect("transcript")
            .lines()
        {
            let e: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            if e["kind"] == "summary" && e["data"]["of"] == "script" {
                summarised.insert(e["speaker"].as_str().expect("speaker").to_string());
            }
            if let Some(part) = e["data"]["reconstruction"].as_str() {
                let about = e["visible_to"]["only"][0]
                    .as_str()
                    .expect("judged character");
                let f = e["data"]["rouge_l_f"].as_f64().expect("F");
                parts
                    .entry(about.to_string())
                    .or_default()
                    .push((part.to_string(), f));
            }
        }
        let m = r.mirage_scores.expect("mirage scores");
        for c in &script.characters {
            let got = &parts[&c.name];
            let mean = m.characters[&c.name]
                .reconstruction_rouge_l
                .expect("ROUGE-L");
            if summarised.contains(&c.name) {
                assert_eq!(got.len(), 1, "{}: {got:?}", c.name);
                assert_eq!(got[0].0, "all");
                assert!((mean - got[0].1).abs() < 1e-12);
                continue;
            }
            assert_eq!(summary_cap, 0, "{} played from its full script", c.name);
            let names: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
            let expected: Vec<&str> = [
                ("story", !c.story.is_empty()),
                ("script", true),
                ("relationship", !c.relationships.is_empty()),
                ("performance", !c.performance.is_empty()),
                ("purpose", !c.goals.is_empty()),
                ("ability", !c.abilities.is_empty()),
            ]
            .into_iter()
            .filter(|(_, asked)| *asked)
            .map(|(p, _)| p)
            .collect();
            assert_eq!(names, expected, "{}", c.name);
            let sum: f64 = got.iter().map(|(_, f)| f).sum();
            assert!(
                (mean - sum / 6.0).abs() < 1e-12,
                "{}: {mean} vs {got:?}",
                c.name
            );
        }
        if summary_cap > 0 {
            assert!(
                !summarised.is_empty(),
                "the ferry's scripts are long enough to summarise"
            );
        }
    }
}
