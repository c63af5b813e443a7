//! Scripts whose suspects are not all players: `examples/orchard-press.toml` has three players (an
//! inspector who is no suspect, and two suspects) and two suspects who do not play, one of whom — Dr Amos
//! Reed — is the culprit. Under every protocol, with a couple of frameworks each and the simulated model,
//! a game plays to the end; every ballot and accusation names a suspect other than the voter; questions
//! go to players only; and the winner, detection accuracy, Victory and the result's culprit list follow
//! the non-player culprit. The command line plays the script too.

use crate::common;
use common::simulated_gateway as gateway;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;
use sleuth::agent::{AgentConfig, Framework};
use sleuth::game::{
    self, majority_outcome, reciprocal_rank, suspicion_minus_trust, tally, thinkthrice_winner,
    GameConfig, GameResult, MirageSettings, Protocol, ProtocolSettings, ThinkThriceSettings,
    WellPlaySettings, Winner,
};
use sleuth::script::{Language, Script};

/// The one culprit of the example, who does not play.
const CULPRIT: &str = "Dr Amos Reed";

fn script() -> Arc<Script> {
    common::example_script("orchard-press.toml")
}

/// Short games: the point is the vote, not the talk. MIRAGE's summary caps are small so that its
/// summarized system prompt (which lists the suspects too) is rendered.
fn short(protocol: Protocol, force_expose: bool) -> ProtocolSettings {
    ProtocolSettings {
        protocol,
        thinkthrice: ThinkThriceSettings {
            rounds_before_clues: 1,
            rounds_after_clues: 1,
            initial_questioning: true,
        },
        wellplay: WellPlaySettings {
            rounds: 2,
            questions_per_round: 1,
        },
        mirage: MirageSettings {
            iterations: 2,
            force_expose,
            script_summary_tokens: 150,
            history_tokens: 400,
            ..MirageSettings::default()
        },
    }
}

/// One finished game: its result, transcript and the templates its framework rendered.
struct Played {
    label: String,
    result: GameResult,
    events: Vec<Value>,
    rendered: BTreeSet<String>,
}

impl Played {
    fn of_kind(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["kind"] == kind).collect()
    }
}

struct Arm {
    protocol: Protocol,
    framework: Framework,
    force_expose: bool,
    lang: Option<Language>,
    seed: u64,
}

fn arm(protocol: Protocol, framework: Framework) -> Arm {
    Arm {
        protocol,
        framework,
        force_expose: false,
        lang: None,
        seed: 1,
    }
}

async fn play(script: &Arc<Script>, a: Arm) -> Played {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("transcript.jsonl");
    let label = format!(
        "{}/{}{}{}",
        a.protocol,
        a.framework,
        if a.force_expose { " forced" } else { "" },
        a.lang.map(|l| format!(" {}", l.code())).unwrap_or_default()
    );
    let config = GameConfig {
        game_id: format!("suspects-{}-{}", a.protocol, a.framework),
        seed: a.seed,
        protocol: short(a.protocol, a.force_expose),
        framework: a.framework,
        agent: AgentConfig {
            modules: "mr,sr,sv=1".parse().expect("modules"),
            ..AgentConfig::default()
        },
        language: a.lang,
        transcript_path: Some(path.clone()),
        eval_repeats: 1,
        ..GameConfig::default()
    };
    let prompts = game::load_all_prompts(script, &config).expect("prompts load");
    let p = prompts[a.framework.as_str()].clone();
    let result = game::play_with_prompts(script.clone(), config, gateway().await, prompts)
        .await
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let events = std::fs::read_to_string(&path)
        .expect("transcript written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("transcript line is JSON"))
        .collect();
    Played {
        label,
        result,
        events,
        rendered: p.rendered(),
    }
}

/// Plays the arms two at a time (the machines have two cores).
async fn play_all(arms: Vec<Arm>) -> Vec<Played> {
    let script = script();
    let mut out = Vec::new();
    let mut arms = arms.into_iter().peekable();
    while arms.peek().is_some() {
        let pair: Vec<Arm> = arms.by_ref().take(2).collect();
        let games = pair.into_iter().map(|a| play(&script, a));
        out.extend(futures::future::join_all(games).await);
    }
    out
}

/// What every game that plays must show on this script.
fn check_vote(script: &Script, g: &Played) {
    let r = &g.result;
    let l = &g.label;
    eprintln!(
        "{l}: winner {:?}, tally {:?}, detection {}",
        r.winner, r.vote_counts, r.murderer_detection_accuracy
    );
    let suspects: Vec<String> = script
        .suspect_names()
        .into_iter()
        .map(str::to_string)
        .collect();
    let players: Vec<&str> = script.characters.iter().map(|c| c.name.as_str()).collect();
    let culprits = vec![CULPRIT.to_string()];
    assert_eq!(r.murderers, culprits, "{l}: the culprit is the non-player");
    // Everyone votes once, for a suspect who is not themselves.
    assert_eq!(r.votes.len(), players.len(), "{l}: {:?}", r.votes);
    for (voter, target) in &r.votes {
        assert!(
            players.contains(&voter.as_str()),
            "{l}: {voter} is no player"
        );
        assert!(suspects.contains(target), "{l}: {voter} voted for {target}");
        assert_ne!(voter, target, "{l}: {voter} voted for themselves");
    }
    // The ballots in the transcript are those votes, each private to its voter.
    let ballots: BTreeMap<String, String> = g
        .of_kind("vote")
        .iter()
        .map(|e| {
            (
                e["speaker"].as_str().unwrap_or_default().to_string(),
                e["data"]["vote"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(ballots, r.votes, "{l}");
    // The tally covers every suspect, non-players included, and nobody else.
    let keys: BTreeSet<&String> = r.vote_counts.keys().collect();
    assert_eq!(keys, suspects.iter().collect(), "{l}");
    assert_eq!(
        r.vote_counts.values().sum::<u32>(),
        players.len() as u32,
        "{l}"
    );
    assert_eq!(
        r.vote_counts,
        tally(script.suspect_names(), &r.votes),
        "{l}"
    );
    // Detection accuracy counts the ballots for the outside culprit.
    let for_culprit = r.votes.values().filter(|t| *t == CULPRIT).count();
    assert!(
        (r.murderer_detection_accuracy - for_culprit as f64 / r.votes.len() as f64).abs() < 1e-12,
        "{l}: {} with {for_culprit} ballots for {CULPRIT}",
        r.murderer_detection_accuracy
    );
    // Questions go to players only: a non-player suspect has no voice.
    for q in g.of_kind("question") {
        let to = q["addressee"].as_str().unwrap_or_default();
        assert!(players.contains(&to), "{l}: a question to {to}");
    }
    for a in g.of_kind("answer") {
        let from = a["speaker"].as_str().unwrap_or_default();
        assert!(players.contains(&from), "{l}: an answer from {from}");
    }
    // The reveal names the culprit.
    let reveal = g.of_kind("reveal");
    assert_eq!(reveal.len(), 1, "{l}");
    assert!(
        reveal[0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains(CULPRIT),
        "{l}: {}",
        reveal[0]["text"]
    );
    assert!(
        g.rendered.contains("system") && g.rendered.contains("vote"),
        "{l}: {:?}",
        g.rendered
    );
}

fn check_plurality(g: &Played) {
    let r = &g.result;
    let culprits = vec![CULPRIT.to_string()];
    assert_eq!(
        r.winner,
        Some(thinkthrice_winner(&r.vote_counts, &culprits)),
        "{}",
        g.label
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinkthrice_and_wellplay_vote_among_the_suspects() {
    let script = script();
    let games = play_all(vec![
        arm(Protocol::ThinkThrice, Framework::ThinkThrice),
        arm(Protocol::ThinkThrice, Framework::Ocot),
        arm(Protocol::WellPlay, Framework::Player),
        arm(Protocol::WellPlay, Framework::Werewolf),
    ])
    .await;
    let culprits = vec![CULPRIT.to_string()];
    let mut culprit_votes = 0;
    for g in &games {
        check_vote(&script, g);
        let r = &g.result;
        culprit_votes += r.votes.values().filter(|t| *t == CULPRIT).count();
        match r.protocol.as_str() {
            "thinkthrice" => {
                check_plurality(g);
                assert_eq!(
                    g.of_kind("clue").len(),
                    script.clues.len(),
                    "{}: every clue card is read out",
                    g.label
                );
            }
            _ => {
                let m = r.majority.as_ref().expect("elimination outcome");
                assert_eq!(
                    *m,
                    majority_outcome(&r.vote_counts, &culprits),
                    "{}",
                    g.label
                );
                assert_eq!(r.winner, Some(m.majority_winner), "{}", g.label);
                assert_eq!(
                    m.majority_winner == Winner::Civilians,
                    m.eliminated.iter().any(|e| e == CULPRIT),
                    "{}: {m:?}",
                    g.label
                );
            }
        }
        // Evaluation still runs on the players: the objective question, once per player.
        let c = r.choice.as_ref().expect("multiple-choice scores");
        assert_eq!(c.overall.questions, script.characters.len(), "{}", g.label);
    }
    // PLAYER* senses the suspects who do not play as well as the other players.
    let player = games
        .iter()
        .find(|g| g.result.framework == "player")
        .expect("a PLAYER* game");
    let sensed: BTreeSet<&str> = player
        .of_kind("sensor")
        .iter()
        .filter_map(|e| e["data"]["target"].as_str())
        .collect();
    for s in script.non_player_suspects() {
        assert!(sensed.contains(s.name.as_str()), "{} never sensed", s.name);
    }
    assert!(
        culprit_votes > 0,
        "no ballot named {CULPRIT}: the culprit path went untested"
    );
    both_outcomes(&games);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirage_accuses_and_votes_among_the_suspects() {
    let script = script();
    let games = play_all(vec![
        Arm {
            seed: 3,
            ..arm(Protocol::Mirage, Framework::Mirage)
        },
        Arm {
            force_expose: true,
            lang: Some(Language::Zh),
            seed: 2,
            ..arm(Protocol::Mirage, Framework::Mirage)
        },
    ])
    .await;
    let culprits = vec![CULPRIT.to_string()];
    let suspects = script.suspect_names();
    let players: Vec<&str> = script.characters.iter().map(|c| c.name.as_str()).collect();
    for g in &games {
        check_vote(&script, g);
        check_plurality(g);
        let l = &g.label;
        let m = g.result.mirage.as_ref().expect("mirage outcome");
        // Accusations name a suspect other than the accuser; votes go to the accused.
        assert_eq!(m.accusations.len(), players.len(), "{l}");
        for (accuser, accused) in &m.accusations {
            assert!(suspects.contains(&accused.as_str()), "{l}: {accused}");
            assert_ne!(accuser, accused, "{l}");
        }
        let accused: BTreeSet<&String> = m.accusations.values().collect();
        for (voter, target) in &g.result.votes {
            let alone = accused.len() == 1 && accused.contains(voter);
            assert!(alone || accused.contains(target), "{l}: {voter} → {target}");
        }
        // Victory ranks the culprit among every suspect.
        let v = reciprocal_rank(&g.result.vote_counts, &culprits, &suspicion_minus_trust(m));
        assert!((m.victory - v).abs() < 1e-12, "{l}: {} vs {v}", m.victory);
        assert!(m.victory > 0.0, "{l}: the culprit is in the tally");
        // Trust and suspicion are about the other players, who are the ones who act.
        for (scorer, row) in m.trust.iter().chain(&m.suspicion) {
            assert!(players.contains(&scorer.as_str()), "{l}");
            for scored in row.keys() {
                assert!(players.contains(&scored.as_str()), "{l}: {scored}");
                assert_ne!(scorer, scored, "{l}");
            }
        }
        // Nobody plays the culprit, so nobody is exposed, forced or not.
        assert!(g.of_kind("exposure").is_empty(), "{l}");
        for t in ["system", "system_summary", "accuse", "vote", "interact"] {
            assert!(g.rendered.contains(t), "{l}: {t} never rendered");
        }
    }
    both_outcomes(&games);
}

/// With no murderer among the players, a civilian win can only come from the outside culprit: the seeds
/// are chosen so that the games end both ways (a change of the simulated model may need new seeds).
fn both_outcomes(games: &[Played]) {
    let winners: Vec<Option<Winner>> = games.iter().map(|g| g.result.winner).collect();
    assert!(
        winners.contains(&Some(Winner::Civilians)) && winners.contains(&Some(Winner::Murderer)),
        "the games should end both ways: {winners:?}"
    );
    for g in games {
        let top = g.result.vote_counts.values().copied().max().unwrap_or(0);
        let alone_on_top = g
            .result
            .vote_counts
            .iter()
            .filter(|(_, &n)| n == top)
            .count()
            == 1
            && g.result.vote_counts.get(CULPRIT) == Some(&top);
        if g.result.protocol != "wellplay" {
            assert_eq!(
                g.result.winner == Some(Winner::Civilians),
                alone_on_top,
                "{}",
                g.label
            );
        }
    }
}

/// `sleuth play` validates the script and plays it under MIRAGE; `result.json` names the outside culprit.
#[test]
fn the_command_line_plays_a_script_with_an_outside_culprit() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out_dir = tmp.path().join("out");
    let mut cmd = common::sleuth(tmp.path());
    cmd.arg("play")
        .arg(common::crate_file("examples/orchard-press.toml"))
        .args(["--protocol", "mirage", "--seed", "1", "--iterations", "1"])
        .args(["--eval-repeats", "1", "--out"])
        .arg(&out_dir);
    let out = common::run(&mut cmd, common::CHILD_TIMEOUT);
    assert!(
        out.status.success(),
        "sleuth play failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(out_dir.join("result.json")).expect("result.json");
    let r: GameResult = serde_json::from_str(&text).expect("result.json parses");
    assert_eq!(r.murderers, vec![CULPRIT.to_string()]);
    assert_eq!(r.vote_counts.len(), script().suspect_names().len());
    assert!(r.vote_counts.contains_key(CULPRIT));
}

/// The same case with a murderer among the players (Tom Ashby) and the two outsiders innocent: the
/// culprit is the player, who still plays the murderer's framework, and the ballots still offer the
/// outsiders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_murderer_player_among_outside_suspects_keeps_the_murderers_framework() {
    let mut s = (*script()).clone();
    for c in &mut s.characters {
        if c.name == "Tom Ashby" {
            c.role = sleuth::script::Role::Murderer;
        }
    }
    for x in &mut s.suspects {
        x.culprit = false;
    }
    s.truth.murderer = Some("Tom Ashby".into());
    let errors: Vec<_> = s
        .problems()
        .into_iter()
        .filter(|p| p.severity == sleuth::script::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let script = Arc::new(s);
    let config = GameConfig {
        game_id: "suspects-murderer-player".into(),
        seed: 1,
        protocol: short(Protocol::ThinkThrice, false),
        framework: Framework::ThinkThrice,
        murderer_framework: Some(Framework::Werewolf),
        eval_repeats: 1,
        ..GameConfig::default()
    };
    let r = game::play(script.clone(), config, gateway().await)
        .await
        .expect("the game plays");
    assert_eq!(r.murderers, vec!["Tom Ashby".to_string()]);
    assert_eq!(r.murderer_framework.as_deref(), Some("werewolf"));
    let suspects = script.suspect_names();
    assert_eq!(r.vote_counts.len(), suspects.len());
    for (voter, target) in &r.votes {
        assert!(suspects.contains(&target.as_str()) && voter != target);
    }
    let culprits = vec!["Tom Ashby".to_string()];
    assert_eq!(
        r.winner,
        Some(thinkthrice_winner(&r.vote_counts, &culprits))
    );
    let for_tom = r.votes.values().filter(|t| *t == "Tom Ashby").count();
    assert!((r.murderer_detection_accuracy - for_tom as f64 / 3.0).abs() < 1e-12);
}
