//! Reading what `sleuth report` wrote, for the tests that check its tables against the games.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::{run, sleuth, CHILD_TIMEOUT};

/// Runs `sleuth ARGS` in `cwd` and fails the test with its stderr unless it succeeds; its stdout.
pub fn sleuth_ok(cwd: &Path, args: &[&str]) -> String {
    let out = run(sleuth(cwd).args(args), CHILD_TIMEOUT);
    assert!(
        out.status.success(),
        "sleuth {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A CSV file's records as maps from header to field.
pub fn csv_rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.expect("record").iter().map(String::from))
                .collect()
        })
        .collect()
}

/// A record's field as a number; fails the test naming the field when it is absent or not one.
pub fn num(row: &BTreeMap<String, String>, field: &str) -> f64 {
    let text = row
        .get(field)
        .unwrap_or_else(|| panic!("{field} in {row:?}"));
    text.parse()
        .unwrap_or_else(|_| panic!("{field} = {text:?} is not a number"))
}
