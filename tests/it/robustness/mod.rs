//! Loaders never panic on arbitrary input.
//!
//! Property tests (proptest) of everything that reads untrusted files:
//! - the canonical loader: for arbitrary text, TOML-like text, byte-level mutations of
//!   `examples/night-ferry.toml` (delete a byte range, insert random bytes or text, duplicate or drop a line)
//!   and structural mutations of its TOML tree (remove, replace, retype-preserving replace or duplicate any
//!   value), `Script::parse_unchecked` and `Script::parse` return Ok or Err, and `problems()`, `errors()`
//!   and `to_toml()` run on every script that parsed;
//! - `clean_text` never panics, returns trimmed text and never a literal `\n` escape;
//! - the WellPlay importer on folders of `json/script_info.json`, `json/<Name>.json`,
//!   `final_result/<Name>.csv` and `FSA.csv`, and the MIRAGE importer on `script.json`, `clues.json` and
//!   `Truth.json` (or a `--truth` file), with culprits given or taken from the built-in table. Each folder is
//!   well-formed with random contents (so the importer runs to the end), or has exactly one file spoilt, or
//!   every file spoilt at random. Spoilt files are missing, truncated (also inside a UTF-8 sequence),
//!   BOM-prefixed, arbitrary bytes, or valid JSON of the wrong shape: numbers where strings are expected,
//!   missing keys, nested arrays, `kill_by_me` longer or shorter than `victims`, stage keys without a
//!   number, empty objects; CSV with ragged rows, unbalanced quotes, odd headers and CR, LF or CRLF ends.
//!
//! A panic fails the property (proptest catches it and shrinks the input). When an importer succeeds, the
//! script it returns is validated, written as TOML and read back, which must succeed.
//!
//! Case counts are modest so that the file runs in seconds; `PROPTEST_CASES=5000 cargo test --test
//! robustness` hunts longer. Failing cases are not persisted to files: a case found is kept as a plain
//! `#[test]` in the module of its subject. The coverage-guided fuzz targets in `fuzz/` (see `docs/fuzzing.md`) complement these.
//!
//! Beside them, careless inputs played through the real binary (issue 33): `big_script`, a script
//! above the size limit refused at load by `script validate`, `play` and `sweep run`; `run_dir`, a
//! damaged batch journal and readers polling a run directory while a `sweep run` starts.

mod big_script;
mod inputs;
mod loader;
mod mirage_import;
mod run_dir;
mod wellplay_import;

use std::path::Path;

use proptest::prelude::ProptestConfig;
use sleuth::script::import::ImportError;
use sleuth::script::Script;

/// The configuration of every property: `default_cases` unless `PROPTEST_CASES` says otherwise, and no
/// regression files (failing cases become plain tests in these files instead).
fn config(default_cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------------
// Shared checks

/// Parses `text` both ways; on success runs everything a caller does with a freshly loaded script.
fn check_script_text(text: &str) {
    let path = Path::new("robustness.toml");
    match Script::parse_unchecked(text, path) {
        Ok(script) => check_script(&script),
        Err(e) => drop(e.to_string()),
    }
    if let Err(e) = Script::parse(text, path) {
        drop(e.to_string());
    }
}

/// Validation and serialisation of a script that parsed (or was imported).
fn check_script(script: &Script) {
    let problems = script.problems();
    let errors = script.errors();
    assert!(errors.len() <= problems.len());
    for p in &problems {
        drop(p.to_string());
    }
    drop(script.to_toml());
}

/// What is done with an importer's result: errors are displayed, a script is checked and written as
/// TOML, which must read back (a saved import that cannot be loaded again is a bug).
fn check_import(result: Result<Script, ImportError>) {
    match result {
        Ok(script) => {
            check_script(&script);
            let toml = script.to_toml();
            let back = Script::parse_unchecked(&toml, Path::new("imported.toml"));
            assert!(
                back.is_ok(),
                "imported script does not read back: {back:?}\n{toml}"
            );
        }
        Err(e) => drop(e.to_string()),
    }
}
