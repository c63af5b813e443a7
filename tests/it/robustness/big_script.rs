//! Scripts of any size (issue 33, item 10): a script above the size limit is refused when it is
//! loaded — by `script validate`, `play` and `sweep run` alike — with one line naming the file, its
//! size, the limit and how to raise it, before a token is spent; the variable that raises the limit
//! lets it through.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{self, night_ferry, run, sleuth, Mock};
use sleuth::script::{MAX_SCRIPT_BYTES, MAX_SCRIPT_ENV};

/// A refusal is immediate: today a script of 50 MB played for minutes.
const QUICK: Duration = Duration::from_secs(60);

/// night-ferry with its premise grown past the limit: valid TOML, valid as a script, and larger
/// than [`MAX_SCRIPT_BYTES`] — what a user gets by pasting a whole novel into a premise.
fn big_script(dir: &Path) -> (PathBuf, u64) {
    let text = std::fs::read_to_string(night_ferry()).expect("night-ferry");
    let line = "The gale went on all night, and the old ferry rolled and groaned in the dark.\n";
    let n = MAX_SCRIPT_BYTES as usize / line.len() + 1;
    let text = text.replacen(
        "premise = \"\"\"\n",
        &format!("premise = \"\"\"\n{}", line.repeat(n)),
        1,
    );
    let path = dir.join("novel.toml");
    std::fs::write(&path, &text).expect("write the big script");
    (path, text.len() as u64)
}

/// The one `error:` line of a refused command, checked to name the file, the size, the limit and
/// the way to raise it, and to come quickly.
fn refused_naming_size(out: std::process::Output, took: Duration, file: &Path, size: u64) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted: {stderr}");
    assert!(took < QUICK, "refused only after {took:?}");
    for part in [
        file.display().to_string(),
        format!("{size} bytes"),
        format!("{MAX_SCRIPT_BYTES} bytes"),
        MAX_SCRIPT_ENV.to_string(),
    ] {
        assert!(
            stderr.contains(&part),
            "stderr should name {part:?}: {stderr}"
        );
    }
}

fn timed(cmd: &mut std::process::Command) -> (std::process::Output, Duration) {
    let t = Instant::now();
    let out = run(cmd, common::CHILD_TIMEOUT);
    (out, t.elapsed())
}

#[test]
fn a_script_above_the_limit_is_refused_by_validate_play_and_sweep_before_any_call() {
    let tmp = tempfile::tempdir().expect("dir");
    let (script, size) = big_script(tmp.path());

    let (out, took) = timed(sleuth(tmp.path()).args(["script", "validate"]).arg(&script));
    refused_naming_size(out, took, &script, size);

    // `play` against a mock server: refused before it is asked anything.
    let mock = Mock::start();
    let (out, took) = timed(
        sleuth(tmp.path())
            .arg("play")
            .arg(&script)
            .args(common::OCOT_ONE_ROUND)
            .args(["--provider", "openai", "--base-url"])
            .arg(mock.base_url())
            .env("OPENAI_API_KEY", "test")
            .arg("--out")
            .arg(tmp.path().join("game")),
    );
    refused_naming_size(out, took, &script, size);
    assert_eq!(mock.requests(), 0, "no call before the refusal");

    let sweep = tmp.path().join("sweep.toml");
    std::fs::write(
        &sweep,
        format!(
            "name = \"big\"\nout = \"{}\"\nscripts = [\"{}\"]\n[game]\nprotocol = \"wellplay\"\nframework = \"ocot\"\nrounds = 1\nmodel = \"m\"\n[models.m]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"sim-1\"\napi_key_env = \"PATH\"\n",
            tmp.path().join("run").display(),
            script.display(),
            mock.base_url()
        ),
    )
    .expect("write the sweep");
    let (out, took) = timed(
        sleuth(tmp.path())
            .args(["sweep", "run"])
            .arg(&sweep)
            .arg("--quiet"),
    );
    refused_naming_size(out, took, &script, size);
    assert_eq!(mock.requests(), 0, "no call before the refusal");

    // The way out the message gives: a larger limit lets the script through.
    let out = run(
        sleuth(tmp.path())
            .args(["script", "validate"])
            .arg(&script)
            .env(MAX_SCRIPT_ENV, "16"),
        common::CHILD_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "{MAX_SCRIPT_ENV}=16 should accept it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A limit that is no number is named, not ignored.
    let out = run(
        sleuth(tmp.path())
            .args(["script", "validate"])
            .arg(night_ferry())
            .env(MAX_SCRIPT_ENV, "lots"),
        common::CHILD_TIMEOUT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains(MAX_SCRIPT_ENV),
        "{stderr}"
    );
}
