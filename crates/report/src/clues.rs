//! MIRAGE clue investigations read back from a transcript, for CIC over iterations (MIRAGE Figure 2).
//!
//! `result.json` says which clues each character investigated but not when, nor which were key clues;
//! the transcript does. An investigation is a `clue` event whose `data` names an `investigator` (the
//! ThinkThrice host's clue cards, also `clue` events, name none and are not investigations), with
//! `key` true for a key clue. Its iteration is `data.iteration` when given, else the number that ends
//! the stage name (`interaction_3` → 3).

use std::path::Path;

use serde_json::Value;

use super::ReportError;

/// One investigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// 1-based iteration, when the event says.
    pub iteration: Option<u32>,
    pub key: bool,
}

/// Investigations of one game, in transcript order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    pub found: Vec<Found>,
}

impl Timeline {
    /// Reads the investigations from a transcript. A line that is not JSON is an error naming the file
    /// and line: a half-written transcript would otherwise silently lower the curve.
    pub fn read(path: &Path) -> Result<Timeline, ReportError> {
        let mut timeline = Timeline::default();
        super::load::for_each_event(path, |event: Value| {
            if let Some(found) = investigation(&event) {
                timeline.found.push(found);
            }
        })?;
        Ok(timeline)
    }

    /// Investigations (all, or key only) made by the end of `iteration`.
    pub fn by_iteration(&self, iteration: u32, key_only: bool) -> usize {
        self.found
            .iter()
            .filter(|f| !key_only || f.key)
            .filter(|f| f.iteration.is_some_and(|i| i <= iteration))
            .count()
    }

    /// Investigations (all, or key only) over the whole game, placed in an iteration or not.
    pub fn total(&self, key_only: bool) -> usize {
        self.found.iter().filter(|f| !key_only || f.key).count()
    }

    /// The last iteration any investigation names.
    pub fn last_iteration(&self) -> Option<u32> {
        self.found.iter().filter_map(|f| f.iteration).max()
    }
}

/// The investigation an event records, if it is one.
fn investigation(event: &Value) -> Option<Found> {
    if event.get("kind")?.as_str()? != "clue" {
        return None;
    }
    let data = event.get("data")?;
    data.get("investigator")?.as_str()?;
    let key = data.get("key").and_then(Value::as_bool).unwrap_or(false);
    let iteration = data
        .get("iteration")
        .and_then(Value::as_u64)
        .and_then(|i| u32::try_from(i).ok())
        .or_else(|| stage_number(event.get("stage")?.as_str()?));
    Some(Found { iteration, key })
}

/// The number a stage name ends with: `interaction_3` → 3, `iteration 12` → 12, `vote` → none.
fn stage_number(stage: &str) -> Option<u32> {
    let digits: String = stage
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_investigations_count_and_stages_give_the_iteration() {
        let lines = [
            r#"{"seq":0,"stage":"clues","kind":"clue","speaker":"host","data":{"clue":"c1","about":"Ada"}}"#,
            r#"{"seq":1,"stage":"interaction_1","kind":"clue","speaker":"Ben","data":{"investigator":"Ben","key":true}}"#,
            r#"{"seq":2,"stage":"interaction_2","kind":"clue","speaker":"Cy","data":{"investigator":"Cy","key":false}}"#,
            r#"{"seq":3,"stage":"whatever","kind":"clue","speaker":"Cy","data":{"investigator":"Cy","key":false,"iteration":3}}"#,
            r#"{"seq":4,"stage":"interaction_3","kind":"answer","speaker":"Cy"}"#,
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        let t = Timeline::read(&path).unwrap();
        assert_eq!(
            t.total(false),
            3,
            "the host's clue card is not an investigation"
        );
        assert_eq!(t.total(true), 1);
        assert_eq!(t.by_iteration(1, false), 1);
        assert_eq!(t.by_iteration(2, false), 2);
        assert_eq!(t.by_iteration(3, false), 3);
        assert_eq!(t.by_iteration(3, true), 1);
        assert_eq!(t.last_iteration(), Some(3));
        assert_eq!(stage_number("vote"), None);
    }

    #[test]
    fn a_broken_line_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transcript.jsonl");
        std::fs::write(&path, "{\"kind\":\"host\"}\n{not json\n").unwrap();
        let e = Timeline::read(&path).unwrap_err().to_string();
        assert!(
            e.contains("transcript.jsonl") && e.contains("line 2"),
            "{e}"
        );
    }
}
