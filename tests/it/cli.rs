//! The `sleuth` binary end to end: bad input is refused with one line on stderr before any LLM call,
//! and a short simulated game writes a consistent transcript and result.

use crate::common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use common::{night_ferry, run, sleuth, Mock, CHILD_TIMEOUT};

/// Runs `sleuth play <args> --out <tmp>/out` with the `openai` provider pointed at a fresh mock server
/// (unless `args` choose another provider), with `OPENAI_API_KEY=test` in the environment when `key` is
/// set. Asserts that the command fails with exactly one non-empty `error: ` line on stderr, nothing on
/// stdout, and that the mock received no request; returns the error line.
fn refused(tmp: &Path, args: &[OsString], key: bool) -> String {
    let mock = Mock::start();
    let mut cmd = sleuth(tmp);
    cmd.arg("play").args(args);
    let has_provider = args.iter().any(|a| a == "--provider");
    if !has_provider {
        cmd.args(["--provider", "openai"]);
    }
    cmd.arg("--base-url")
        .arg(mock.base_url())
        // Should a check ever be skipped, fail fast instead of retrying against the mock for minutes.
        .args(["--max-retries", "0", "--timeout-secs", "10"])
        .arg("--out")
        .arg(tmp.join("out"));
    if key {
        cmd.env("OPENAI_API_KEY", "test");
    }
    let out = run(&mut cmd, CHILD_TIMEOUT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ctx = format!(
        "{cmd:?}\nstatus: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(!out.status.success(), "bad input was accepted: {ctx}");
    assert_eq!(out.status.code(), Some(1), "exit code should be 1: {ctx}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr should be exactly one line: {ctx}");
    let line = lines[0].trim();
    assert!(
        line.starts_with("error: ") && line.len() > "error: ".len(),
        "stderr should be one non-empty `error: ...` line: {ctx}"
    );
    assert!(stdout.trim().is_empty(), "nothing belongs on stdout: {ctx}");
    assert_eq!(
        mock.requests(),
        0,
        "the input must be refused before any LLM call: {ctx}"
    );
    line.to_string()
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// `args` with the example script in front.
fn with_script(script: &Path, rest: &[&str]) -> Vec<OsString> {
    let mut v = vec![script.as_os_str().to_owned()];
    v.extend(os(rest));
    v
}

/// Writes a copy of the example script with `from` replaced by `to` (first occurrence only).
fn edited_script(dir: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(night_ferry()).expect("read the example script");
    assert!(text.contains(from), "the example script has no `{from}`");
    let path = dir.join(name);
    std::fs::write(&path, text.replacen(from, to, 1)).expect("write the edited script");
    path
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("create a temporary directory")
}

fn assert_names(line: &str, needles: &[&str]) {
    for n in needles {
        assert!(line.contains(n), "the error should name `{n}`, got: {line}");
    }
}

/// [`refused`] for the example script with `flags`, the key set: the error line.
fn refused_flags(tmp: &Path, flags: &[&str]) -> String {
    refused(tmp, &with_script(&night_ferry(), flags), true)
}

/// [`refused`] for a copy of the example script with `from` replaced by `to`, saved as `name`
/// ([`edited_script`]), the key set: the error line.
fn refused_edited(tmp: &Path, name: &str, from: &str, to: &str) -> String {
    let script = edited_script(tmp, name, from, to);
    refused(tmp, &with_script(&script, &[]), true)
}

#[test]
fn missing_script_file_is_refused_naming_the_path() {
    let tmp = tempdir();
    let missing = tmp.path().join("no-such-script.toml");
    let line = refused(tmp.path(), &with_script(&missing, &[]), true);
    assert_names(&line, &[&missing.display().to_string()]);
    // The OS's reason appears once: a cause is printed by the chain, not repeated in the message.
    assert_eq!(
        line.matches("os error 2").count(),
        1,
        "cause repeated: {line}"
    );
}

#[test]
fn unknown_role_is_refused_naming_file_and_field() {
    let tmp = tempdir();
    let line = refused_edited(
        tmp.path(),
        "butler.toml",
        "role = \"civilian\"",
        "role = \"butler\"",
    );
    // The first civilian is the second character.
    assert_names(&line, &["butler.toml", "role", "characters[1].role"]);
}

#[test]
fn murderer_who_is_nobody_is_refused_naming_the_field() {
    let tmp = tempdir();
    let line = refused_edited(
        tmp.path(),
        "nobody.toml",
        "murderer = \"Edmund Hale\"",
        "murderer = \"Nobody At All\"",
    );
    assert_names(&line, &["nobody.toml", "truth.murderer"]);
}

#[test]
fn a_framework_under_a_protocol_it_was_not_built_for_is_refused() {
    let tmp = tempdir();
    let line = refused_flags(
        tmp.path(),
        &["--framework", "mirage", "--protocol", "wellplay"],
    );
    assert_names(&line, &["mirage", "wellplay"]);
    let line = refused_flags(tmp.path(), &["--protocol", "poker"]);
    assert_names(&line, &["--protocol", "poker"]);
    let line = refused_flags(
        tmp.path(),
        &["--framework", "player", "--murderer-framework", "op"],
    );
    assert_names(&line, &["--murderer-framework", "op"]);
    let line = refused_flags(
        tmp.path(),
        &["--protocol", "wellplay", "--questions-per-round", "0"],
    );
    assert_names(&line, &["--questions-per-round"]);
}

#[test]
fn unknown_framework_is_refused() {
    let tmp = tempdir();
    let line = refused_flags(tmp.path(), &["--framework", "nosuch"]);
    assert_names(&line, &["nosuch"]);
}

#[test]
fn unknown_module_is_refused() {
    let tmp = tempdir();
    let line = refused_flags(tmp.path(), &["--modules", "mr,xyz"]);
    assert_names(&line, &["xyz"]);
}

#[test]
fn openai_without_key_is_refused_naming_the_variable() {
    let tmp = tempdir();
    let line = refused(tmp.path(), &with_script(&night_ferry(), &[]), false);
    assert_names(&line, &["OPENAI_API_KEY"]);
}

#[test]
fn unknown_provider_is_refused() {
    let tmp = tempdir();
    let line = refused_flags(tmp.path(), &["--provider", "nosuchprovider"]);
    assert_names(&line, &["nosuchprovider"]);
}

#[test]
fn malformed_pricing_file_is_refused_naming_the_field() {
    let tmp = tempdir();
    let pricing = tmp.path().join("pricing.toml");
    std::fs::write(&pricing, "[models.\"m\"]\ninput = -1\noutput = 1\n").expect("write pricing");
    let mut args = with_script(&night_ferry(), &["--pricing"]);
    args.push(pricing.into_os_string());
    let line = refused(tmp.path(), &args, true);
    assert_names(&line, &["pricing.toml", "input"]);
}

/// `sleuth play` of a short night-ferry game with the `openai` provider at `base_url`, writing into
/// `<tmp>/out`.
fn short_game(tmp: &Path, base_url: &str) -> std::process::Command {
    let mut cmd = sleuth(tmp);
    cmd.arg("play")
        .arg(night_ferry())
        .args(["--modules", "mr", "--rounds-before-clues", "1"])
        .args(["--rounds-after-clues", "1", "--seed", "3"])
        .args([
            "--provider",
            "openai",
            "--model",
            "sim-1",
            "--base-url",
            base_url,
        ])
        .arg("--out")
        .arg(tmp.join("out"))
        .env("OPENAI_API_KEY", "test");
    cmd
}

/// The control for the tests above: the same setup with good input does reach the mock, so
/// "no request" really means the input was refused before any call.
#[test]
fn good_input_with_the_openai_provider_reaches_the_mock() {
    let tmp = tempdir();
    let mock = Mock::start();
    let out = run(&mut short_game(tmp.path(), &mock.base_url()), CHILD_TIMEOUT);
    assert!(
        out.status.success(),
        "game against the mock failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = read_json(&tmp.path().join("out/result.json"));
    let calls = result["usage"]["calls"].as_u64().expect("usage.calls");
    assert!(calls > 0, "the game made no LLM call");
    assert_eq!(
        mock.requests(),
        calls,
        "every call the result counts went to the mock"
    );
}

/// A user and password in `--base-url` (or a sweep's `base_url`) reach the server but are never
/// written down: not in `result.json`, not in the sweep store's sweeps, games and results.
#[test]
fn credentials_in_a_base_url_are_never_written_down() {
    let tmp = tempdir();
    let mock = Mock::start();
    let with_creds = mock
        .base_url()
        .replace("http://", "http://someone:s3cret-pw@");
    let out = run(&mut short_game(tmp.path(), &with_creds), CHILD_TIMEOUT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(mock.requests() > 0, "the game went to the server");
    let result = std::fs::read_to_string(tmp.path().join("out/result.json")).expect("result");
    assert!(
        !result.contains("s3cret-pw") && !result.contains("someone"),
        "{result}"
    );
    assert!(
        result.contains(&mock.base_url()),
        "the URL is recorded without them"
    );

    // A sweep: its file as stored, its games' specs and results.
    let run_dir = tmp.path().join("sweep-run");
    let file = tmp.path().join("sweep.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"creds\"\nout = \"{}\"\nscripts = [\"{}\"]\nrepeats = 1\nseed = 1\n\
             [game]\nprotocol = \"wellplay\"\nrounds = 1\nmodel = \"m\"\nframework = \"ocot\"\n\
             [evaluation]\nrepeats = 1\n\
             [models.m]\nprovider = \"openai\"\nbase_url = \"{with_creds}?api-key=s3cret-pw\"\n\
             model = \"sim-1\"\napi_key_env = \"OPENAI_API_KEY\"\n",
            run_dir.display(),
            night_ferry().display(),
        ),
    )
    .expect("sweep file");
    let mut cmd = sleuth(tmp.path());
    cmd.args(["sweep", "run"])
        .arg(&file)
        .arg("--quiet")
        .env("OPENAI_API_KEY", "test");
    let out = run(&mut cmd, CHILD_TIMEOUT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut written = 0;
    for entry in walk(&run_dir) {
        let bytes = std::fs::read(&entry).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("s3cret-pw") && !text.contains("someone:"),
            "{} holds the credentials",
            entry.display()
        );
        written += 1;
    }
    assert!(
        written >= 3,
        "the store, a result and a transcript were checked"
    );
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn field<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| {
        v.get(k)
            .unwrap_or_else(|| panic!("result.json has no `{path}` (missing `{k}`)"))
    })
}

fn is_rate(v: &Value) -> bool {
    v.as_f64().is_some_and(|x| (0.0..=1.0).contains(&x))
}

#[test]
fn simulated_game_writes_a_consistent_transcript_and_result() {
    let tmp = tempdir();
    let out_dir = tmp.path().join("run");
    let mut cmd = sleuth(tmp.path());
    cmd.arg("play")
        .arg(night_ferry())
        .args(["--modules", "mr", "--rounds-before-clues", "1"])
        .args(["--rounds-after-clues", "1", "--seed", "3", "--out"])
        .arg(&out_dir);
    let out = run(&mut cmd, CHILD_TIMEOUT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "game failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );

    // The summary.
    let lines: Vec<&str> = stdout.lines().map(str::trim).collect();
    let winner_line = lines
        .iter()
        .find(|l| l.starts_with("Winner:"))
        .unwrap_or_else(|| panic!("no `Winner:` line in the summary:\n{stdout}"));
    for label in ["Own", "CQ", "MQ"] {
        assert!(
            lines
                .iter()
                .any(|l| l.split_whitespace().next() == Some(label)),
            "no `{label}` line in the summary:\n{stdout}"
        );
    }

    // result.json.
    let r = read_json(&out_dir.join("result.json"));
    for key in ["script", "framework", "modules", "winner"] {
        assert!(field(&r, key).is_string(), "`{key}` should be a string");
    }
    assert_eq!(field(&r, "framework"), "thinkthrice");
    assert_eq!(field(&r, "modules"), "mr");
    assert_eq!(field(&r, "seed").as_u64(), Some(3));
    let winner = field(&r, "winner").as_str().unwrap_or_default();
    assert!(
        winner == "civilians" || winner == "murderer",
        "winner should be civilians or murderer, got {winner:?}"
    );
    assert!(
        winner_line.contains(winner),
        "the summary's `{winner_line}` disagrees with result.json's winner {winner:?}"
    );
    // Every player voted once, not for themselves, and vote_counts is the tally of the ballots.
    let votes = field(&r, "votes")
        .as_object()
        .expect("votes should be an object");
    let counts = field(&r, "vote_counts")
        .as_object()
        .expect("vote_counts should be an object");
    let players: Vec<&String> = counts.keys().collect();
    assert_eq!(
        votes.keys().collect::<Vec<_>>(),
        players,
        "every player votes once"
    );
    for (voter, target) in votes {
        let target = target.as_str().expect("a vote names a player");
        assert!(
            target != voter && counts.contains_key(target),
            "{voter} → {target}"
        );
    }
    for (player, n) in counts {
        let got = votes
            .values()
            .filter(|t| t.as_str() == Some(player))
            .count();
        assert_eq!(n.as_u64(), Some(got as u64), "votes counted for {player}");
    }
    assert!(is_rate(field(&r, "murderer_detection_accuracy")));
    for key in ["own", "cq", "mq", "others"] {
        let v = field(&r, &format!("factual.{key}"));
        assert!(v.is_null() || is_rate(v), "factual.{key} = {v}");
    }
    let inf = field(&r, "inferential_accuracy");
    assert!(
        inf.is_null() || is_rate(inf),
        "inferential_accuracy = {inf}"
    );
    for key in [
        "calls",
        "prompt_tokens",
        "completion_tokens",
        "retries",
        "parse_failures",
    ] {
        assert!(
            field(&r, &format!("usage.{key}")).is_u64(),
            "usage.{key} should be a count"
        );
    }
    assert!(field(&r, "usage.cost_usd")
        .as_f64()
        .is_some_and(|c| c >= 0.0));
    the_transcripts_usage_adds_up(&out_dir, &r);
}

/// `out_dir/transcript.jsonl`: every line is an event, and the usage attributed to events adds up
/// to result.json's `r`.
fn the_transcripts_usage_adds_up(out_dir: &Path, r: &Value) {
    // transcript.jsonl: every line is an event, and the usage attributed to events adds up.
    let transcript = std::fs::read_to_string(out_dir.join("transcript.jsonl"))
        .expect("transcript.jsonl was written");
    let mut sums = [0u64; 3];
    const USAGE: [&str; 3] = ["calls", "prompt_tokens", "completion_tokens"];
    let mut n = 0;
    for (i, line) in transcript.lines().enumerate() {
        let e: Value = serde_json::from_str(line)
            .unwrap_or_else(|err| panic!("transcript line {} is not JSON: {err}: {line}", i + 1));
        assert_eq!(
            e.get("seq").and_then(Value::as_u64),
            Some(i as u64),
            "line {} should have seq {i}: {line}",
            i + 1
        );
        for key in ["stage", "kind", "speaker", "text"] {
            assert!(
                e.get(key).is_some_and(Value::is_string),
                "line {}: `{key}` should be a string: {line}",
                i + 1
            );
        }
        assert!(
            e.get("visible_to")
                .is_some_and(|v| v.is_string() || v.is_object()),
            "line {}: `visible_to` missing: {line}",
            i + 1
        );
        if let Some(u) = e.get("usage") {
            for (sum, key) in sums.iter_mut().zip(USAGE) {
                *sum += u
                    .get(key)
                    .and_then(Value::as_u64)
                    .unwrap_or_else(|| panic!("line {}: usage.{key} missing: {line}", i + 1));
            }
        }
        n += 1;
    }
    assert!(n > 0, "the transcript is empty");
    for (sum, key) in sums.iter().zip(USAGE) {
        assert_eq!(
            field(r, &format!("usage.{key}")).as_u64(),
            Some(*sum),
            "result.json usage.{key} should equal the sum over the transcript"
        );
    }
}

#[test]
fn script_validate_accepts_the_example() {
    let tmp = tempdir();
    let out = run(
        sleuth(tmp.path())
            .args(["script", "validate"])
            .arg(night_ferry()),
        CHILD_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "validate refused the example: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn script_validate_refuses_a_bad_script_in_one_line() {
    let tmp = tempdir();
    let script = edited_script(
        tmp.path(),
        "butler.toml",
        "role = \"civilian\"",
        "role = \"butler\"",
    );
    let out = run(
        sleuth(tmp.path()).args(["script", "validate"]).arg(&script),
        CHILD_TIMEOUT,
    );
    let line = one_stderr_line(&out);
    assert_names(&line, &["error: ", "butler.toml", "characters[1].role"]);
}

/// The one line on stderr of a command that failed with exit code 1.
fn one_stderr_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr should be one line: {stderr}");
    lines[0].to_string()
}

/// transcript.jsonl without its wall-clock field.
fn transcript_without_ts(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("transcript.jsonl"))
        .expect("transcript.jsonl was written")
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).expect("transcript line is JSON");
            v.as_object_mut().expect("event is an object").remove("ts");
            v
        })
        .collect()
}

/// Runs `sleuth play ARGS` and asserts it fails with one `error: ` line; returns that line.
fn play_refused(cwd: &Path, args: &[OsString]) -> String {
    let out = run(sleuth(cwd).arg("play").args(args), CHILD_TIMEOUT);
    let line = one_stderr_line(&out);
    assert!(line.starts_with("error: "), "{line}");
    line
}

/// A game replayed from its result.json alone plays the same transcript to the same outcome, also one
/// call at a time; a spec refuses flags that would change the game, and a script edited since.
#[test]
fn a_game_replays_from_its_recorded_spec() {
    let tmp = tempdir();
    let script = tmp.path().join("ferry.toml");
    std::fs::copy(night_ferry(), &script).expect("copy the example script");
    let first = tmp.path().join("first");
    let out = run(
        sleuth(tmp.path())
            .arg("play")
            .arg(&script)
            .args(["--modules", "mr,sv=1", "--rounds-before-clues", "1"])
            .args(["--rounds-after-clues", "1", "--seed", "4", "--top-k", "5"])
            .args(["--temperature", "0.7", "--out"])
            .arg(&first),
        CHILD_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = tmp.path().join("second");
    let out = run(
        sleuth(tmp.path())
            .arg("play")
            .arg("--spec")
            .arg(first.join("result.json"))
            // One call at a time instead of the default bound: it changes when calls are made,
            // never what they answer, so a replay may choose it.
            .args(["--call-concurrency", "1"])
            .arg("--out")
            .arg(&second),
        CHILD_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t1 = transcript_without_ts(&first);
    assert!(t1.len() > 50, "a game has many events");
    assert_eq!(t1, transcript_without_ts(&second), "transcripts differ");
    // Without the wall time and the bytes tokenized: calls made at once may both tokenize a text
    // new to the process, so that count depends on the call concurrency, which a replay may change.
    let outcome = |dir: &Path| {
        let mut r = read_json(&dir.join("result.json"));
        let o = r.as_object_mut().expect("result is an object");
        o.remove("duration_seconds");
        if let Some(u) = o.get_mut("usage").and_then(|u| u.as_object_mut()) {
            u.remove("bytes_tokenized");
        }
        r
    };
    let r1 = outcome(&first);
    assert_eq!(r1, outcome(&second), "outcomes differ");
    assert_eq!(field(&r1, "spec.agent.top_k").as_u64(), Some(5));
    assert_eq!(field(&r1, "spec.seed").as_u64(), Some(4));

    // A bare spec works as well as a result; a flag that would change the game is refused.
    let spec = tmp.path().join("spec.json");
    std::fs::write(&spec, field(&r1, "spec").to_string()).expect("write spec.json");
    let mut args = os(&["--seed", "5", "--spec"]);
    args.push(spec.clone().into_os_string());
    assert_names(&play_refused(tmp.path(), &args), &["--seed", "--spec"]);
    let mut args = with_script(&script, &["--spec"]);
    args.push(spec.clone().into_os_string());
    assert_names(&play_refused(tmp.path(), &args), &["SCRIPT", "--spec"]);

    // An edited script is refused, naming the file and both digests.
    let recorded = field(&r1, "spec.script.digest").as_str().expect("digest");
    let edited = edited_script(tmp.path(), "ferry.toml", "title = \"", "title = \"Edited: ");
    assert_eq!(edited, script);
    let mut args = os(&["--spec"]);
    args.push(spec.into_os_string());
    let line = play_refused(tmp.path(), &args);
    assert_names(&line, &["ferry.toml", recorded, "changed"]);
}

/// `sleuth script stats --figures DIR` writes ThinkThrice's Figure 2 of the set: its scripts by
/// number of players, as a CSV of counts and a plot.
#[test]
fn script_stats_writes_figure_2_of_the_set() {
    let tmp = tempdir();
    let figures = tmp.path().join("figures");
    let out = run(
        sleuth(tmp.path())
            .args(["script", "stats"])
            .arg(common::crate_file("examples"))
            .arg("--figures")
            .arg(&figures),
        CHILD_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = std::fs::read_dir(&figures)
        .expect("the figures")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let csv = names
        .iter()
        .find(|n| n.ends_with(".csv"))
        .unwrap_or_else(|| panic!("no CSV in {names:?}"));
    assert!(names.iter().any(|n| n.ends_with(".svg")), "{names:?}");
    let text = std::fs::read_to_string(figures.join(csv)).expect("the CSV");
    // Four example scripts, counted by their players.
    let counted: f64 = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(1)?.trim().parse::<f64>().ok())
        .sum();
    assert_eq!(counted, 4.0, "{text}");
}
