//! Imported datasets are playable, and validation reports every problem of a broken script.
//! Tests that need `../shared/datasets` say so and pass when it is absent (a user's fresh checkout), and
//! fail under CI.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use sleuth::agent::AgentConfig;
use sleuth::game::{self, GameConfig, ProtocolSettings, ThinkThriceSettings};
use sleuth::llm::{Gateway, GatewayConfig, Pricing, SimulatedProvider};
use sleuth::script::import::{mirage, wellplay};
use sleuth::script::Script;

async fn play_short(script: Script) -> game::GameResult {
    let gw = Gateway::start(
        Arc::new(SimulatedProvider::default()),
        Pricing::builtin(),
        GatewayConfig::default(),
    )
    .await
    .expect("gateway");
    let config = GameConfig {
        game_id: "imported".into(),
        seed: 3,
        protocol: ProtocolSettings::thinkthrice(ThinkThriceSettings {
            rounds_before_clues: 1,
            rounds_after_clues: 1,
            initial_questioning: true,
        }),
        agent: AgentConfig {
            modules: "mr".parse().expect("modules"),
            ..AgentConfig::default()
        },
        ..GameConfig::default()
    };
    game::play(Arc::new(script), config, gw)
        .await
        .expect("imported script plays")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_samples_play_a_thinkthrice_game() {
    let Some(d) = common::datasets() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut scripts = Vec::new();
    for name in [
        "Desperate Sunshine (4 people closed)",
        "Riverside Inn (4 people closed)",
    ] {
        scripts.push(
            wellplay::import(&d.join("wellplay-sample").join(name)).expect("wellplay imports"),
        );
    }
    let opts = mirage::MirageOptions {
        culprits: Vec::new(),
        truth: None,
        suspects: Vec::new(),
    };
    scripts.push(
        mirage::import(&d.join("mirage-sample/The Eastern Star Cruise Ship"), &opts)
            .expect("mirage imports"),
    );
    for s in scripts {
        // Through the file, as a user would: save, load (validates), play.
        let path = dir.path().join(format!("{}.toml", s.title));
        s.save(&path).expect("save");
        let loaded = Script::load(&path).expect("imported script validates");
        let players = loaded.characters.len();
        let murderers: Vec<String> = loaded.murderers().iter().map(|m| m.to_string()).collect();
        let r = play_short(loaded).await;
        assert_eq!(r.votes.len(), players, "{}: everyone voted", r.script);
        assert_eq!(r.murderers, murderers);
        assert!(r.usage.calls > 0);
    }
}

/// `sleuth script validate` on a deliberately broken file lists every problem with its field path.
#[test]
fn validate_lists_every_problem_with_field_paths() {
    let good = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/night-ferry.toml"),
    )
    .expect("example");
    let broken = good
        .replacen(
            "murderer = \"Edmund Hale\"",
            "murderer = \"Nobody Here\"",
            1,
        )
        .replacen("about = \"Ruth Calloway\"", "about = \"A Stranger\"", 1)
        .replacen("name = \"Vivian Sloane\"", "name = \"Ruth Calloway\"", 1)
        .replacen("answer = \"D\"", "answer = \"Q\"", 1)
        .replacen(
            "title = \"The Last Crossing of the Marigold\"",
            "title = \"\"",
            1,
        );
    assert_ne!(broken, good);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("broken.toml");
    std::fs::write(&path, broken).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .args(["script", "validate"])
        .arg(&path)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let errors: Vec<&str> = stdout.lines().filter(|l| l.starts_with("error:")).collect();
    let fields: BTreeSet<String> = errors
        .iter()
        .filter_map(|l| l.split("field `").nth(1))
        .filter_map(|r| r.split('`').next())
        .map(String::from)
        .collect();
    // Each edit is reported where it breaks something: the empty title, the unknown murderer, the
    // duplicate name (characters[2] was Vivian Sloane), the clue about a stranger, the bad answer letter,
    // and everything that still names Vivian Sloane (a clue, her 2 choice and 14 factual questions).
    let mut expected: BTreeSet<String> = [
        "title",
        "truth.murderer",
        "characters[2].name",
        "clues[1].about",
        "clues[5].about",
        "inferential[0].answer",
        "choice[2].character",
        "choice[3].character",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    expected.extend((30..=43).map(|i| format!("factual[{i}].character")));
    assert_eq!(fields, expected, "{stdout}");
    assert_eq!(
        errors.len(),
        expected.len(),
        "one error per field: {stdout}"
    );
    // Every line names the file, and the summary goes to stderr as one line.
    assert!(errors.iter().all(|l| l.contains("broken.toml")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}
