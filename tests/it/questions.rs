//! Factual-question generation (ThinkThrice §5.1) end to end on the simulated model: every kept
//! question is grounded in its character's script, none repeats another, and appending them to a script
//! file keeps the file valid and its existing text byte for byte.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sleuth::llm::{Gateway, GatewayConfig, Pricing, SimulatedProvider};
use sleuth::questions::{self, GenerateError, GenerateOptions, GenerateReport};
use sleuth::script::{FactualQuestion, Script};
use sleuth::text;

fn crate_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

async fn gateway() -> Gateway {
    Gateway::start(
        Arc::new(SimulatedProvider::default()),
        Pricing::builtin(),
        GatewayConfig::default(),
    )
    .await
    .expect("gateway starts")
}

fn options(seed: u64) -> GenerateOptions {
    GenerateOptions {
        per_character: 5,
        batch: 5,
        seed,
        // The templates are read from the tree until they join the built-in set.
        prompts_dir: Some(crate_file("prompts")),
        ..GenerateOptions::default()
    }
}

fn near_duplicates(a: &FactualQuestion, b: &FactualQuestion) -> bool {
    let norm = |s: &str| {
        s.to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
    };
    a.character == b.character
        && (norm(&a.question) == norm(&b.question)
            || text::token_f1(&a.question, &b.question) >= 0.8
            || (a.source == b.source && norm(&a.answer) == norm(&b.answer)))
}

/// The checks every generation run must pass, whatever the model.
fn check_grounded(script: &Script, report: &GenerateReport, per_character: usize) {
    assert!(report.usage.calls > 0, "no calls made");
    assert_eq!(
        report.usage.calls as usize,
        report.per_character.iter().map(|r| r.calls).sum::<usize>()
    );
    assert_eq!(report.per_character.len(), script.characters.len());
    for r in &report.per_character {
        assert_eq!(r.requested, per_character);
        assert!(r.kept <= per_character, "{r:?}");
        assert_eq!(
            r.proposed,
            r.kept + r.dropped_unsourced + r.dropped_duplicates + r.dropped_empty + r.surplus,
            "{r:?}"
        );
        assert_eq!(
            r.kept,
            report
                .questions
                .iter()
                .filter(|q| q.character == r.character)
                .count()
        );
    }
    for (i, q) in report.questions.iter().enumerate() {
        let c = script
            .character(&q.character)
            .unwrap_or_else(|| panic!("unknown character {}", q.character));
        assert!(
            !q.question.trim().is_empty() && !q.answer.trim().is_empty(),
            "{q:?}"
        );
        assert!(!q.source.trim().is_empty(), "{q:?}");
        assert!(
            c.script_text().contains(&q.source),
            "source not in {}'s script: {:?}",
            q.character,
            q.source
        );
        for other in &report.questions[..i] {
            assert!(!near_duplicates(q, other), "{q:?} repeats {other:?}");
        }
        for old in &script.factual {
            assert!(
                !near_duplicates(q, old),
                "{q:?} repeats the script's {old:?}"
            );
        }
    }
}

/// Prints what was generated, for reading with `--nocapture`.
fn dump(report: &questions::GenerateReport) {
    for r in &report.per_character {
        eprintln!("{r:?}");
    }
    for q in &report.questions {
        eprintln!(
            "{} | Q: {} | A: {} | S: {}",
            q.character, q.question, q.answer, q.source
        );
    }
}

#[tokio::test]
async fn night_ferry_questions_are_grounded_and_append_without_touching_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("night-ferry.toml");
    std::fs::copy(crate_file("examples/night-ferry.toml"), &path).expect("copy script");
    let original = std::fs::read_to_string(&path).expect("read");
    let script = Script::load(&path).expect("night-ferry loads");

    let gw = gateway().await;
    let report = questions::generate(&script, &gw, &options(7))
        .await
        .expect("generation succeeds");
    dump(&report);
    check_grounded(&script, &report, 5);
    assert!(
        !report.questions.is_empty(),
        "the simulated model keeps some questions"
    );

    questions::append_to_file(&path, &report.questions).expect("appends");
    let updated = std::fs::read_to_string(&path).expect("read back");
    let reloaded = Script::load(&path).expect("the result is a valid script");
    assert_eq!(
        reloaded.factual.len(),
        script.factual.len() + report.questions.len()
    );
    for (old, new) in script.factual.iter().zip(&reloaded.factual) {
        assert_eq!(
            (&old.character, &old.question),
            (&new.character, &new.question)
        );
    }
    // The new tables go after the last existing factual question: everything before them (the header
    // comments, every character, every old question) and everything after them (the inferential
    // section and its comment) is byte for byte the original.
    let cut = original
        .find("\n# ---------------------------------------------------------------- inferential")
        .expect("night-ferry has an inferential section");
    assert!(
        updated.starts_with(&original[..cut]),
        "the file's existing text changed"
    );
    assert!(
        updated.ends_with(&original[cut..]),
        "the file's tail changed"
    );
    assert!(updated.starts_with("format = 1\ntitle = \"The Last Crossing of the Marigold\"\n"));
    let no_temp_files = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(Result::ok)
        .all(|e| !e.file_name().to_string_lossy().ends_with(".tmp"));
    assert!(no_temp_files);
    gw.stop();
}

#[tokio::test]
async fn the_same_seed_gives_the_same_questions() {
    let script = Script::load(&crate_file("examples/night-ferry.toml")).expect("loads");
    let gw = gateway().await;
    let a = questions::generate(&script, &gw, &options(3))
        .await
        .expect("runs");
    let b = questions::generate(&script, &gw, &options(3))
        .await
        .expect("runs");
    let key = |r: &GenerateReport| {
        r.questions
            .iter()
            .map(|q| format!("{}|{}|{}|{}", q.character, q.question, q.answer, q.source))
            .collect::<Vec<_>>()
    };
    assert_eq!(key(&a), key(&b));
    assert_eq!(a.per_character, b.per_character);
    gw.stop();
}

#[tokio::test]
async fn chinese_scripts_use_the_chinese_prompt_and_stay_grounded() {
    let script = Script::load(&crate_file("examples/zh-teahouse.toml")).expect("loads");
    let gw = gateway().await;
    let report = questions::generate(&script, &gw, &options(11))
        .await
        .expect("runs");
    dump(&report);
    check_grounded(&script, &report, 5);
    gw.stop();
}

#[tokio::test]
async fn an_invalid_result_leaves_the_file_unchanged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("night-ferry.toml");
    std::fs::copy(crate_file("examples/night-ferry.toml"), &path).expect("copy script");
    let original = std::fs::read(&path).expect("read");
    let bad = FactualQuestion {
        character: "Nobody Aboard".into(),
        question: "Who is this?".into(),
        answer: "nobody".into(),
        source: "Not in any script.".into(),
        review: None,
    };
    let err = questions::append_to_file(&path, &[bad]).expect_err("refused");
    assert!(matches!(err, GenerateError::Invalid(_)), "{err}");
    assert_eq!(std::fs::read(&path).expect("read"), original);
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1);
}

#[test]
fn the_prompt_lists_existing_questions_in_its_instructions_and_ends_with_the_request() {
    use sleuth::agent::Prompts;
    use sleuth::script::Language;
    let dir = crate_file("prompts");
    for (lang, header, script_header, existing_intro) in [
        (
            Language::En,
            "### Instructions",
            "### Script of Ada",
            "already exist",
        ),
        (Language::Zh, "### 说明", "### Ada的剧本", "已经有了"),
    ] {
        let p = Prompts::load("generate", lang, Some(&dir), &["factual"]).expect("loads");
        let out = p
            .render(
                "factual",
                minijinja::context! { name => "Ada", script => "Ada saw a lantern.\nShe left at 9 pm.", existing => vec!["When did Ada leave?", "What did Ada see?"], count => 4 },
            )
            .expect("renders");
        eprintln!("{out}\n-----");
        assert!(out.starts_with(header), "{out}");
        let script_at = out.find(script_header).expect("script header");
        let listed = out.find("- When did Ada leave?").expect("existing listed");
        assert!(
            listed < script_at,
            "existing questions belong to the instructions"
        );
        assert!(out[script_at..].contains("Ada saw a lantern.\nShe left at 9 pm."));
        let last = out.rsplit("\n\n").next().expect("paragraphs");
        assert!(last.contains('4') && last.contains("Ada"), "{last}");
        assert!(
            !last.contains("lantern"),
            "the request is its own paragraph"
        );
        let none = p
            .render(
                "factual",
                minijinja::context! { name => "Ada", script => "Ada saw a lantern.", existing => Vec::<String>::new(), count => 4 },
            )
            .expect("renders");
        assert!(out.contains(existing_intro), "{out}");
        assert!(!none.contains(existing_intro), "{none}");
    }
}
