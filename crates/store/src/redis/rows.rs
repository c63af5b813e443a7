//! Rows read back from Redis hashes, and the ledger's arguments written to them.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use super::super::types::{
    GameRow, GameState, LedgerEntry, RunRecord, SweepRecord, SweepStatus, TotalsRow,
};
use super::{corrupt, METRICS};
use crate::error::StoreError;

/// A row read back: the fields of one hash, named for error messages.
struct Fields<'a> {
    what: &'a str,
    map: HashMap<String, String>,
}

impl<'a> Fields<'a> {
    fn new(what: &'a str, map: HashMap<String, String>) -> Self {
        Fields { what, map }
    }

    fn take(&mut self, field: &str) -> Result<String, StoreError> {
        self.map
            .remove(field)
            .ok_or_else(|| corrupt(self.what, format!("field `{field}` is missing")))
    }

    fn opt(&mut self, field: &str) -> Option<String> {
        self.map.remove(field)
    }

    fn parse<T: std::str::FromStr>(&mut self, field: &str) -> Result<T, StoreError>
    where
        T::Err: fmt::Display,
    {
        let raw = self.take(field)?;
        raw.parse()
            .map_err(|e| corrupt(self.what, format!("field `{field}` = `{raw}`: {e}")))
    }

    fn parse_opt<T: std::str::FromStr>(&mut self, field: &str) -> Result<Option<T>, StoreError>
    where
        T::Err: fmt::Display,
    {
        match self.opt(field) {
            None => Ok(None),
            Some(raw) => raw
                .parse()
                .map(Some)
                .map_err(|e| corrupt(self.what, format!("field `{field}` = `{raw}`: {e}"))),
        }
    }
}

pub(super) fn sweep_from(map: HashMap<String, String>) -> Result<SweepRecord, StoreError> {
    let mut f = Fields::new("sweep", map);
    Ok(SweepRecord {
        id: f.take("id")?,
        name: f.take("name")?,
        file: f.take("file")?,
        text: f.take("text")?,
        created_at: f.take("created_at")?,
        status: f.parse::<SweepStatus>("status")?,
        note: f.opt("note"),
        max_usd: f.parse_opt("max_usd")?,
        max_tokens: f.parse_opt("max_tokens")?,
    })
}

pub(super) fn run_from(map: HashMap<String, String>) -> Result<(RunRecord, u64), StoreError> {
    let mut f = Fields::new("run", map);
    let run = RunRecord {
        id: f.take("id")?,
        sweep: f.take("sweep")?,
        started_at: f.take("started_at")?,
        ended_at: f.opt("ended_at"),
        outcome: f.opt("outcome"),
        pid: f.parse("pid")?,
        host: f.take("host")?,
    };
    Ok((run, f.parse("seq")?))
}

pub(super) fn game_from(map: HashMap<String, String>) -> Result<GameRow, StoreError> {
    let mut f = Fields::new("game", map);
    Ok(GameRow {
        id: f.take("id")?,
        sweep: f.take("sweep")?,
        arm: f.take("arm")?,
        arm_label: f.take("arm_label")?,
        script: f.take("script")?,
        repeat: f.parse("repeat")?,
        seed: f.parse("seed")?,
        spec: f.take("spec")?,
        state: f.parse::<GameState>("state")?,
        attempts: f.parse("attempts")?,
        crashes: f.parse("crashes")?,
        reason: f.opt("reason"),
        stage: f.opt("stage"),
        updated_at: f.take("updated_at")?,
    })
}

/// The totals group of an entry, as it appears in the totals hash's field names: a JSON array, so
/// that no value (an arm label with a colon, say) can run into another.
fn group_of(e: &LedgerEntry) -> String {
    serde_json::Value::from(vec![
        e.model.as_str(),
        e.phase.as_str(),
        e.framework.as_str(),
        e.arm.as_str(),
        e.source.as_str(),
    ])
    .to_string()
}

/// How many arguments one ledger entry passes to the scripts' `record` (the stride of its loop).
pub(super) const LEDGER_ARGS: usize = 9;

/// The arguments one ledger entry passes to [`LEDGER_LUA`]'s `record`: run, sweep, group, the three
/// token counts, the cost, the entry as JSON and its name (empty if it has none). Refuses what would
/// make a command inside the script fail half-way (Redis would not roll the script's earlier writes
/// back).
pub(super) fn ledger_args(entries: &[LedgerEntry]) -> Result<Vec<Vec<u8>>, StoreError> {
    let mut args = Vec::with_capacity(entries.len() * LEDGER_ARGS);
    for e in entries {
        let bad =
            |why: &str| StoreError::Backend(format!("ledger entry of game {}: {why}", e.game));
        if !e.cost_usd.is_finite() {
            return Err(bad("its cost is not a finite number"));
        }
        for n in [e.prompt_tokens, e.completion_tokens, e.cached_tokens] {
            if n > i64::MAX as u64 {
                return Err(bad("a token count past 2^63"));
            }
        }
        let json = serde_json::to_string(e).map_err(|err| bad(&err.to_string()))?;
        args.push(e.run.clone().into_bytes());
        args.push(e.sweep.clone().into_bytes());
        args.push(group_of(e).into_bytes());
        args.push(e.prompt_tokens.to_string().into_bytes());
        args.push(e.completion_tokens.to_string().into_bytes());
        args.push(e.cached_tokens.to_string().into_bytes());
        // Rust prints an f64 in full decimal (no exponent), which HINCRBYFLOAT reads exactly.
        args.push(e.cost_usd.to_string().into_bytes());
        args.push(json.into_bytes());
        args.push(e.id.clone().unwrap_or_default().into_bytes());
    }
    Ok(args)
}

/// The rows of a sweep's totals hash, in SQLite's order (by model, phase, framework, arm, source).
pub(super) fn totals_from(fields: HashMap<String, String>) -> Result<Vec<TotalsRow>, StoreError> {
    let mut groups: BTreeMap<[String; 5], TotalsRow> = BTreeMap::new();
    for (field, value) in fields {
        let (metric, group) = field
            .split_once(':')
            .ok_or_else(|| corrupt("totals", format!("field `{field}`")))?;
        if !METRICS.contains(&metric) {
            return Err(corrupt("totals", format!("unknown metric in `{field}`")));
        }
        let g: [String; 5] = serde_json::from_str(group)
            .map_err(|e| corrupt("totals", format!("group in `{field}`: {e}")))?;
        let row = groups.entry(g.clone()).or_insert_with(|| {
            let [model, phase, framework, arm, source] = g;
            TotalsRow {
                model,
                phase,
                framework,
                arm,
                source,
                ..TotalsRow::default()
            }
        });
        let int = |v: &str| {
            v.parse::<u64>()
                .map_err(|e| corrupt("totals", format!("`{field}` = `{v}`: {e}")))
        };
        match metric {
            "calls" => row.calls = int(&value)?,
            "prompt_tokens" => row.prompt_tokens = int(&value)?,
            "completion_tokens" => row.completion_tokens = int(&value)?,
            "cached_tokens" => row.cached_tokens = int(&value)?,
            _ => {
                row.cost_usd = value
                    .parse()
                    .map_err(|e| corrupt("totals", format!("`{field}` = `{value}`: {e}")))?
            }
        }
    }
    Ok(groups.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_read_back_from_their_fields() {
        let g = r#"["m1","gameplay","player","arm:1","live"]"#;
        let fields: HashMap<String, String> = [
            (format!("calls:{g}"), "2".to_string()),
            (format!("prompt_tokens:{g}"), "200".to_string()),
            (format!("completion_tokens:{g}"), "40".to_string()),
            (format!("cached_tokens:{g}"), "20".to_string()),
            (format!("cost_usd:{g}"), "0.5".to_string()),
        ]
        .into_iter()
        .collect();
        let rows = totals_from(fields).expect("parse");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].arm, "arm:1");
        assert_eq!((rows[0].calls, rows[0].prompt_tokens), (2, 200));
        assert!((rows[0].cost_usd - 0.5).abs() < 1e-12);
        let bad: HashMap<String, String> = [(format!("bogus:{g}"), "1".to_string())]
            .into_iter()
            .collect();
        assert!(matches!(totals_from(bad), Err(StoreError::Corrupt { .. })));
    }

    #[test]
    fn ledger_entries_that_could_fail_half_way_are_refused() {
        let mut e = LedgerEntry {
            run: "r".into(),
            sweep: "s".into(),
            game: "g".into(),
            arm: "a".into(),
            model: "m".into(),
            phase: "gameplay".into(),
            framework: "player".into(),
            purpose: "p".into(),
            source: crate::CallSource::Live,
            prompt_tokens: 1,
            completion_tokens: 1,
            cached_tokens: 0,
            cost_usd: f64::NAN,
            key: None,
            latency_ms: None,
            retries: 0,
            id: None,
        };
        assert!(ledger_args(std::slice::from_ref(&e)).is_err());
        e.cost_usd = 0.1;
        e.prompt_tokens = u64::MAX;
        assert!(ledger_args(std::slice::from_ref(&e)).is_err());
        e.prompt_tokens = 7;
        assert_eq!(ledger_args(&[e]).expect("valid").len(), LEDGER_ARGS);
    }
}
