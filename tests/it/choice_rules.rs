//! WellPlay's answer rules end to end (issue 13): a question asking for two picks is answered with two
//! different letters and scored right when the truth is among them; `rule` and `picks` round-trip through
//! a script file, old files keep their meaning, and impossible combinations are refused.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use sleuth::agent::Framework;
use sleuth::game::{self, GameConfig, ProtocolSettings, WellPlaySettings};
use sleuth::script::{Category, ChoiceRule, Script};

/// The night ferry with every objective question ("Who killed Gideon Marsh?") asked as WellPlay asks
/// it: "the two people you most suspect", two picks, right when the murderer is among them.
fn two_pick_ferry() -> Script {
    let mut s = (*common::example_script("night-ferry.toml")).clone();
    s.factual.clear();
    s.inferential.clear();
    for q in s
        .choice
        .iter_mut()
        .filter(|q| q.category == Category::Objective)
    {
        q.question = "Please select the two people you most suspect of killing Gideon Marsh".into();
        q.multiple = true;
        q.picks = Some(2);
        q.rule = ChoiceRule::Includes;
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pick_questions_get_two_letters_and_count_when_the_truth_is_among_them() {
    let script = Arc::new(two_pick_ferry());
    assert!(script.errors().is_empty(), "{:?}", script.errors());
    let dir = tempfile::tempdir().expect("temp dir");
    let transcript = dir.path().join("two-picks.jsonl");
    let r = game::play(
        script.clone(),
        GameConfig {
            game_id: "two-picks".into(),
            seed: 5,
            protocol: ProtocolSettings::wellplay(WellPlaySettings {
                rounds: 1,
                questions_per_round: 1,
            }),
            framework: Framework::Pp,
            eval_repeats: 1,
            transcript_path: Some(transcript.clone()),
            ..GameConfig::default()
        },
        common::simulated_gateway().await,
    )
    .await
    .expect("game completes");
    let mut two_pick_answers = 0;
    let mut right = 0;
    let text = std::fs::read_to_string(&transcript).expect("transcript");
    for line in text.lines() {
        let e: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        if e["kind"] != "choice_answer" || e["data"]["category"] != "objective" {
            continue;
        }
        let d = &e["data"];
        assert_eq!(d["rule"], "includes");
        let chosen: BTreeSet<&str> = d["chosen"]
            .as_array()
            .expect("letters")
            .iter()
            .map(|l| l.as_str().expect("a letter"))
            .collect();
        assert_eq!(chosen.len(), 2, "asked for two different letters: {d}");
        let truth = d["truth"][0].as_str().expect("one true letter");
        assert_eq!(d["correct"], chosen.contains(truth), "{d}");
        two_pick_answers += 1;
        right += usize::from(chosen.contains(truth));
    }
    assert_eq!(two_pick_answers, 3, "one objective question per character");
    let objective = &r.choice.expect("choice scores").by_category["objective"];
    assert_eq!(objective.correct, right);
}

#[test]
fn rule_and_picks_round_trip_and_old_files_keep_their_meaning() {
    let s = two_pick_ferry();
    let text = s.to_toml();
    assert!(text.contains("rule = \"includes\"") && text.contains("picks = 2"));
    let back = Script::parse(&text, Path::new("two-picks.toml")).expect("loads");
    for (a, b) in s.choice.iter().zip(&back.choice) {
        assert_eq!((a.rule, a.picks, a.multiple), (b.rule, b.picks, b.multiple));
    }
    // A script written before either field existed writes neither and reads as before: exact.
    let ferry = common::example_script("night-ferry.toml");
    let text = ferry.to_toml();
    assert!(!text.contains("rule =") && !text.contains("picks ="));
    assert!(ferry.choice.iter().all(|q| q.rule == ChoiceRule::Exact));
}

#[test]
fn impossible_rules_and_picks_are_refused() {
    let errors_at = |s: &Script| -> Vec<String> {
        s.errors()
            .into_iter()
            .map(|p| p.field)
            .filter(|f| f.starts_with("choice[0]"))
            .collect()
    };
    let base = two_pick_ferry();
    assert_eq!(base.choice[0].category, Category::Objective);
    // A single-choice question with two true letters needs multiple choice or `any_of`.
    let mut s = base.clone();
    let q = &mut s.choice[0];
    (q.multiple, q.picks, q.rule) = (false, None, ChoiceRule::Exact);
    q.truth = vec!["A".into(), "C".into()];
    assert_eq!(errors_at(&s), ["choice[0].multiple"]);
    s.choice[0].rule = ChoiceRule::AnyOf;
    assert!(errors_at(&s).is_empty());
    // `any_of` is for single choice, `includes` for multiple choice.
    s.choice[0].multiple = true;
    assert_eq!(errors_at(&s), ["choice[0].rule"]);
    let mut s = base.clone();
    s.choice[0].multiple = false;
    s.choice[0].picks = None;
    assert_eq!(errors_at(&s), ["choice[0].rule"]);
    // Picks: no more than the options, no fewer than the true letters, and exactly them for `exact`.
    let mut s = base.clone();
    s.choice[0].picks = Some(5);
    assert_eq!(errors_at(&s), ["choice[0].picks"]);
    s.choice[0].picks = Some(1);
    s.choice[0].truth = vec!["A".into(), "B".into()];
    assert_eq!(errors_at(&s), ["choice[0].picks"]);
    s.choice[0].rule = ChoiceRule::Exact;
    s.choice[0].picks = Some(2);
    assert!(errors_at(&s).is_empty());
    s.choice[0].picks = Some(3);
    assert_eq!(errors_at(&s), ["choice[0].picks"]);
}
