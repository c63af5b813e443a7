//! The papers' human evaluations from annotation campaigns (`docs/humans.md`): ThinkThrice
//! Appendix A (people score agents' responses, blind, on three 1–5 scales) and MIRAGE Table 7
//! (Kendall's τ between people's rankings of the characters and the judge's ICI and SCI). Pure
//! functions, no I/O: [`response_ratings`] and [`rankings`] check and type the stored JSON (items'
//! `hidden`, answers), [`appendix_a`] and [`table7`] compute, `_table` and `_markdown` forms show.
//!
//! Choices made:
//! - **Bootstrap over responses.** A response rated by two annotators is one observation, not two:
//!   each response (an item's label) counts with the mean of its annotators' scores, and the mean
//!   shown and its 95 % percentile bootstrap interval are both over these per-response means, so
//!   they agree, and a response rated more often does not weigh more.
//! - **Krippendorff's α, ordinal.** Likert scales are ordered, with no meaningful spacing; α copes
//!   with annotators who did not rate every response (their holes are missing values).
//! - **Kendall's τ-b.** The judge's scores may tie; τ-b corrects for ties. An annotator's order
//!   becomes scores (first = n, last = 1), so only the order matters. A ranking against scores that
//!   all tie has no τ and is counted as skipped, not as 0.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use sleuth_game::eval::agreement::{kendall_tau_b, krippendorff_alpha, Level};
use sleuth_game::eval::stats::{self, Interval};

use crate::metrics::Bootstrap;
use crate::mirage::published::paper_model;
use crate::table::{Cell, Column, Kind, Table};
use crate::tables::level_text;

/// File stem of the Appendix A table.
pub const APPENDIX_A_ID: &str = "thinkthrice_appendix_a";
/// File stem of the Table 7 table.
pub const TABLE7_ID: &str = "mirage_table7";

/// MIRAGE Table 7 (Appendix I, "Kendall Tau between human evaluation and LLMs evaluation on Script
/// Night at the Museum"), as printed: (model, K_ICI, K_SCI); the paper's K_Avg is their mean.
pub const PUBLISHED_TABLE7: [(&str, f64, f64); 5] = [
    ("GPT-3.5", 0.600, 0.600),
    ("GPT-4", 0.867, 0.600),
    ("GPT-4o", 0.867, 0.467),
    ("Qwen-2-7B", 0.867, 0.333),
    ("GLM-4-9B", 0.600, 0.467),
];

/// ThinkThrice Appendix A's three scales (their keys in an answer), in the paper's order. Arrays of
/// a value per scale ([`ResponseRating::scores`], [`AppendixA`]) follow this order.
pub const SCALES: [&str; 3] = ["naturalness", "truthfulness", "informativeness"];

pub use crate::campaign::answers::HumansError;

/// One annotator's scores (1 to 5) of one response (an item's label), with the condition the label
/// stands for (from the item's `hidden`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseRating {
    pub item: u32,
    pub label: String,
    pub condition: String,
    pub annotator: String,
    pub naturalness: u8,
    pub truthfulness: u8,
    pub informativeness: u8,
}

impl ResponseRating {
    /// The three scores, in the order of [`SCALES`].
    pub fn scores(&self) -> [u8; 3] {
        [self.naturalness, self.truthfulness, self.informativeness]
    }
}

/// Which MIRAGE judge score a ranking is of: ICI (information) or SCI (faithfulness to the script).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    Ici,
    Sci,
}

impl Metric {
    /// The metric's key in `hidden.scores` and in an answer, and its name: (`ici`, `ICI`).
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Metric::Ici => ("ici", "ICI"),
            Metric::Sci => ("sci", "SCI"),
        }
    }
}

/// One annotator's order of one game's characters on one metric, beside the judge's scores.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    pub item: u32,
    pub game: String,
    /// The model the game's agents played.
    pub model: String,
    /// The model that judged the game.
    pub judge: String,
    pub annotator: String,
    pub metric: Metric,
    /// Character names, best first.
    pub order: Vec<String>,
    /// The judge's score of each character on `metric`, in the order of `order`.
    pub judge_scores: Vec<(String, f64)>,
}

fn hidden<T: DeserializeOwned>(items: &[(u32, Value)]) -> Result<BTreeMap<u32, T>, HumansError> {
    let typed = |(item, h): &(u32, Value)| match T::deserialize(h) {
        Ok(t) => Ok((*item, t)),
        Err(e) => Err(HumansError::Hidden {
            item: *item,
            problem: e.to_string(),
        }),
    };
    items.iter().map(typed).collect()
}

fn item_of<'a, T>(items: &'a BTreeMap<u32, T>, item: u32, who: &str) -> Result<&'a T, HumansError> {
    let annotator = who.to_string();
    let found = items.get(&item);
    found.ok_or(HumansError::UnknownItem { item, annotator })
}

fn answer_err(item: u32, who: &str, field: &str, problem: impl Into<String>) -> HumansError {
    let (annotator, field, problem) = (who.to_string(), field.to_string(), problem.into());
    HumansError::Answer {
        item,
        annotator,
        field,
        problem,
    }
}

/// The scores of one label's rating, in the order of [`SCALES`].
fn scores(rating: &Value, item: u32, who: &str, label: &str) -> Result<[u8; 3], HumansError> {
    let mut out = [0; 3];
    for (slot, key) in out.iter_mut().zip(SCALES) {
        let field = format!("ratings.{label}.{key}");
        let missing = || answer_err(item, who, &field, "is missing");
        let v = rating.get(key).ok_or_else(missing)?;
        *slot = match v.as_u64() {
            Some(n @ 1..=5) => n as u8,
            _ => return Err(answer_err(item, who, &field, format!("is {v}, not 1 to 5"))),
        };
    }
    Ok(out)
}

/// The ratings of a `responses` campaign from (item, `hidden`) and (item, annotator, answer) shaped
/// as `docs/humans.md` says: one [`ResponseRating`] per response an answer rates, in the order of
/// `answers`. A label an answer leaves out is not rated; a rated label needs all three scales.
pub fn response_ratings(
    items: &[(u32, Value)],
    answers: &[(u32, String, Value)],
) -> Result<Vec<ResponseRating>, HumansError> {
    #[derive(Deserialize)]
    struct Hidden {
        responses: BTreeMap<String, Response>,
    }
    #[derive(Deserialize)]
    struct Response {
        condition: String,
    }
    let items: BTreeMap<u32, Hidden> = hidden(items)?;
    let mut out = Vec::new();
    for (item, who, answer) in answers {
        let (item, labels) = (*item, &item_of(&items, *item, who)?.responses);
        let not_object = || answer_err(item, who, "ratings", "is missing or not an object");
        let ratings = answer.get("ratings").and_then(Value::as_object);
        for (label, rating) in ratings.ok_or_else(not_object)? {
            let field = format!("ratings.{label}");
            let Some(response) = labels.get(label) else {
                let known = labels.keys().cloned().collect::<Vec<_>>().join(", ");
                let problem = format!("is not a label of the item (it has {known})");
                return Err(answer_err(item, who, &field, problem));
            };
            let [naturalness, truthfulness, informativeness] = scores(rating, item, who, label)?;
            out.push(ResponseRating {
                item,
                label: label.clone(),
                condition: response.condition.clone(),
                annotator: who.clone(),
                naturalness,
                truthfulness,
                informativeness,
            });
        }
    }
    Ok(out)
}

/// `order` with the judge's score of each name, if it is a permutation of `scored`'s names.
fn permuted(order: &[String], scored: &BTreeMap<String, f64>) -> Option<Vec<(String, f64)>> {
    let unique: BTreeSet<&String> = order.iter().collect();
    (unique.len() == order.len() && order.len() == scored.len()).then_some(())?;
    let scored = |c: &String| Some((c.clone(), *scored.get(c)?));
    order.iter().map(scored).collect()
}

/// The rankings of a `rankings` campaign from (item, `hidden`) and (item, annotator, answer) shaped
/// as `docs/humans.md` says: one [`Ranking`] per metric an answer orders (not null), in the order
/// of `answers`. A metric missing or null in `hidden.scores` has no characters: any order errs.
pub fn rankings(
    items: &[(u32, Value)],
    answers: &[(u32, String, Value)],
) -> Result<Vec<Ranking>, HumansError> {
    #[derive(Deserialize)]
    struct Hidden {
        game: String,
        model: String,
        judge: String,
        scores: PerMetric<BTreeMap<String, f64>>,
    }
    #[derive(Deserialize)]
    struct PerMetric<T> {
        ici: Option<T>,
        sci: Option<T>,
    }
    let items: BTreeMap<u32, Hidden> = hidden(items)?;
    let mut out = Vec::new();
    for (item, who, answer) in answers {
        let (item, it) = (*item, item_of(&items, *item, who)?);
        let a = PerMetric::<Vec<String>>::deserialize(answer);
        let a = a.map_err(|e| answer_err(item, who, "answer", e.to_string()))?;
        let none = BTreeMap::new();
        let (ici, sci) = (it.scores.ici.as_ref(), it.scores.sci.as_ref());
        for (metric, order, scored) in [(Metric::Ici, a.ici, ici), (Metric::Sci, a.sci, sci)] {
            let (Some(order), scored) = (order, scored.unwrap_or(&none)) else {
                continue;
            };
            let Some(judge_scores) = permuted(&order, scored) else {
                let scored: Vec<&str> = scored.keys().map(String::as_str).collect();
                let (order, scored) = (order.join(", "), scored.join(", "));
                let problem = format!("orders [{order}], not a permutation of [{scored}]");
                return Err(answer_err(item, who, metric.names().0, problem));
            };
            out.push(Ranking {
                item,
                game: it.game.clone(),
                model: it.model.clone(),
                judge: it.judge.clone(),
                annotator: who.clone(),
                metric,
                order,
                judge_scores,
            });
        }
    }
    Ok(out)
}

/// One condition's row of Appendix A.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionScores {
    pub condition: String,
    /// Responses rated (item × label) and ratings (response × annotator).
    pub responses: usize,
    pub ratings: usize,
    /// Per scale ([`SCALES`]), the mean over responses of their mean score, with its interval.
    pub means: [Option<Interval>; 3],
}

/// ThinkThrice Appendix A from human ratings.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendixA {
    /// One row per condition, sorted by name.
    pub conditions: Vec<ConditionScores>,
    /// Per scale ([`SCALES`]), Krippendorff's α (ordinal), all conditions' responses × annotators;
    /// `None` when no response was rated by two annotators, or α is undefined (no variation).
    pub alpha: [Option<f64>; 3],
    /// Distinct annotators, and the responses rated by at least two (the units α compares).
    pub annotators: usize,
    pub shared_responses: usize,
    /// The intervals' resamples, level and seed.
    pub bootstrap: Bootstrap,
}

/// Appendix A: per condition, the numbers of responses and ratings and, per scale, the mean score
/// with a 95 % percentile bootstrap interval (`bootstrap_mean` via [`Bootstrap::mean`], default
/// resamples, `seed`) resampling *responses* (an item's label): each contributes the mean of its
/// annotators' scores, and the mean shown is over those per-response means, so it matches the
/// interval. Then Krippendorff's α (ordinal) per scale over responses × annotators, pooled over
/// conditions. An annotator who rated a response twice counts once, with their last rating.
pub fn appendix_a(ratings: &[ResponseRating], seed: u64) -> AppendixA {
    let bootstrap = Bootstrap {
        seed,
        ..Bootstrap::default()
    };
    let coders: BTreeSet<&str> = ratings.iter().map(|r| r.annotator.as_str()).collect();
    // (condition, item, label) → each annotator's scores, in the order of `coders`.
    type Grid<'a> = BTreeMap<(&'a str, u32, &'a str), Vec<Option<[u8; 3]>>>;
    let mut grid = Grid::new();
    for r in ratings {
        let coder = coders.range(..r.annotator.as_str()).count();
        let unit = grid.entry((&r.condition, r.item, &r.label));
        unit.or_insert_with(|| vec![None; coders.len()])[coder] = Some(r.scores());
    }
    let mean = |rs: &Vec<[u8; 3]>, s: usize| {
        rs.iter().map(|r| f64::from(r[s])).sum::<f64>() / rs.len() as f64
    };
    let condition = |name: &str| {
        let rows = grid.iter().filter(|((c, _, _), _)| *c == name);
        let rated = |(_, row): (_, &Vec<_>)| row.iter().flatten().copied().collect();
        let units: Vec<Vec<[u8; 3]>> = rows.map(rated).collect();
        let means = [0, 1, 2].map(|s| {
            let per_response: Vec<f64> = units.iter().map(|rs| mean(rs, s)).collect();
            bootstrap.mean(&per_response)
        });
        ConditionScores {
            condition: name.to_string(),
            responses: units.len(),
            ratings: units.iter().map(Vec::len).sum(),
            means,
        }
    };
    let names: BTreeSet<&str> = grid.keys().map(|(c, _, _)| *c).collect();
    let alpha = [0, 1, 2].map(|s| {
        let cell = |c: &Option<[u8; 3]>| c.map(|r| f64::from(r[s]));
        let unit = |row: &Vec<Option<[u8; 3]>>| row.iter().map(cell).collect();
        let units: Vec<Vec<Option<f64>>> = grid.values().map(unit).collect();
        krippendorff_alpha(&units, Level::Ordinal).ok()
    });
    let shared = |row: &&Vec<Option<_>>| row.iter().flatten().count() >= 2;
    AppendixA {
        conditions: names.into_iter().map(condition).collect(),
        alpha,
        annotators: coders.len(),
        shared_responses: grid.values().filter(shared).count(),
        bootstrap,
    }
}

/// One row of Table 7: one model (the one the games' agents played) and one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Table7Row {
    pub model: String,
    pub metric: Metric,
    /// Mean τ-b over the rankings that have one; `None` when every ranking was skipped.
    pub mean_tau: Option<f64>,
    /// Distinct games and rankings averaged, and rankings without a τ-b (skipped).
    pub games: usize,
    pub rankings: usize,
    pub skipped: usize,
    /// MIRAGE's published τ for the paper's model of the same name or version ([`published_tau`]).
    pub published: Option<f64>,
}

/// Kendall's τ-b between an annotator's order (first = n, …, last = 1) and the judge's scores;
/// `None` when undefined (scores all tied, fewer than two characters, a name the judge lacks).
pub fn ranking_tau(r: &Ranking) -> Option<f64> {
    let n = r.order.len();
    let score = |name: &String| r.judge_scores.iter().find(|(c, _)| c == name);
    let judge: Option<Vec<f64>> = r.order.iter().map(|c| Some(score(c)?.1)).collect();
    let human: Vec<f64> = (0..n).map(|i| (n - i) as f64).collect();
    kendall_tau_b(&human, &judge?).ok()
}

/// MIRAGE's published τ ([`PUBLISHED_TABLE7`]) for `model` on `metric`, the model matched as the
/// report's other MIRAGE tables match it: by the paper's name or version ([`paper_model`]).
pub fn published_tau(model: &str, metric: Metric) -> Option<f64> {
    let name = paper_model(model)?;
    let (_, ici, sci) = PUBLISHED_TABLE7.iter().find(|(m, _, _)| *m == name)?;
    Some(if metric == Metric::Ici { *ici } else { *sci })
}

/// MIRAGE Table 7: per (model, metric), sorted by model then metric, the mean over rankings (games
/// × annotators) of [`ranking_tau`]; rankings without a τ are counted in `skipped`, not averaged.
pub fn table7(rankings: &[Ranking]) -> Vec<Table7Row> {
    type Acc<'a> = (Vec<f64>, BTreeSet<&'a str>, usize);
    let mut rows: BTreeMap<(&str, Metric), Acc> = BTreeMap::new();
    for r in rankings {
        let (taus, games, skipped) = rows.entry((&r.model, r.metric)).or_default();
        match ranking_tau(r) {
            Some(t) => {
                taus.push(t);
                games.insert(&r.game);
            }
            None => *skipped += 1,
        }
    }
    rows.into_iter()
        .map(|((model, metric), (taus, games, skipped))| Table7Row {
            model: model.to_string(),
            metric,
            mean_tau: stats::mean(&taus),
            games: games.len(),
            rankings: taus.len(),
            skipped,
            published: published_tau(model, metric),
        })
        .collect()
}

/// The sentence on Krippendorff's α that ends Appendix A's note.
pub fn alpha_line(a: &AppendixA) -> String {
    if a.shared_responses == 0 {
        return "Krippendorff's α: not computed, no response was rated by two annotators.".into();
    }
    let value = |x: &Option<f64>| x.map_or("— (no variation)".into(), |x| format!("{x:.3}"));
    let named = |(k, x): (&&str, _)| format!("{k} {}", value(x));
    let values: Vec<String> = SCALES.iter().zip(&a.alpha).map(named).collect();
    let (n, coders) = (a.shared_responses, a.annotators);
    format!(
        "Krippendorff's α (ordinal; responses × annotators, {n} responses rated by two or more of \
         {coders} annotators): {}.",
        values.join(", ")
    )
}

/// Appendix A as a report table; its note ends with [`alpha_line`].
pub fn appendix_a_table(a: &AppendixA) -> Table {
    let number = |h: &str| Column::new(h, &h.to_lowercase(), Kind::Number(0));
    let mut columns = vec![Column::new("Condition", "condition", Kind::Text)];
    columns.extend(["Responses", "Ratings"].map(number));
    let heading = |k: &str| k[..1].to_uppercase() + &k[1..];
    columns.extend(SCALES.map(|k| Column::new(&heading(k), k, Kind::MeanCi(2))));
    let title = "ThinkThrice Appendix A — human ratings of responses";
    let mut t = Table::new(APPENDIX_A_ID, title, columns);
    let b = &a.bootstrap;
    let (level, resamples, seed) = (level_text(b.level), b.resamples, b.seed);
    t.note = format!(
        "Blind human scores, 1–5 (docs/humans.md). Each response counts once, with the mean of its \
         annotators' scores; means and {level} percentile bootstrap intervals are over responses \
         ({resamples} resamples, seed {seed}). {}",
        alpha_line(a)
    );
    for c in &a.conditions {
        let count = |n: usize| Cell::Number(Some(n as f64));
        let (condition, counts) = (Cell::Text(c.condition.clone()), [c.responses, c.ratings]);
        let cells = [condition].into_iter().chain(counts.map(count));
        t.push(cells.chain(c.means.map(Cell::MeanCi)).collect(), false);
    }
    t
}

/// Table 7 as a report table, MIRAGE's published τ beside each row.
pub fn table7_table(rows: &[Table7Row]) -> Table {
    let column = |(h, kind): (&str, Kind)| Column::new(h, &h.to_lowercase(), kind);
    let (text, number) = (Kind::Text, Kind::Number(0));
    let spec = [("Model", text), ("Metric", text), ("Games", number)];
    let mut columns = spec.map(column).to_vec();
    columns.extend([("Rankings", number), ("Skipped", number)].map(column));
    columns.push(Column::new("Mean τ-b", "mean_tau_b", Kind::Number(3)));
    let published = "MIRAGE (published)";
    columns.push(Column::new(published, "published_tau", Kind::Number(3)));
    let title = "MIRAGE Table 7 — Kendall's τ-b between human rankings and the judge";
    let mut t = Table::new(TABLE7_ID, title, columns);
    t.note = "Mean over rankings (annotator × game) of Kendall's τ-b between the annotator's \
              order and the judge's scores; Skipped: the judge's scores all tie. MIRAGE \
              (published): its Table 7 (Night at the Museum), same model (name or version)."
        .into();
    for r in rows {
        let text = [r.model.clone(), r.metric.names().1.to_string()].map(Cell::Text);
        let counts = [r.games, r.rankings, r.skipped].map(|n| Cell::Number(Some(n as f64)));
        let taus = [r.mean_tau, r.published].map(Cell::Number);
        t.push(text.into_iter().chain(counts).chain(taus).collect(), false);
    }
    t
}

/// Text safe in a Markdown table cell, escaped as `report.md` escapes it.
fn escape(s: &str) -> String {
    let s = s.replace('&', "&amp;").replace('<', "&lt;");
    let s = s.replace('>', "&gt;").replace('|', "\\|");
    s.replace('*', "\\*").replace('\n', " ")
}

/// A table as `report.md` prints one: title, note, header, rows.
fn markdown(t: &Table) -> String {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let (title, note) = (escape(&t.title), escape(&t.note));
    let headings = t.columns.iter().map(|c| escape(&c.heading));
    let mut o = format!("## {title}\n\n{note}\n\n{}", line(headings.collect()));
    let rule = |c: &Column| if c.kind == Kind::Text { "---" } else { "---:" };
    let rules: Vec<&str> = t.columns.iter().map(rule).collect();
    o.push_str(&format!("|{}|\n", rules.join("|")));
    for row in &t.rows {
        let cell = |(cell, c): (&Cell, &Column)| escape(&cell.display(c.kind));
        o.push_str(&line(row.cells.iter().zip(&t.columns).map(cell).collect()));
    }
    o
}

/// Appendix A in Markdown ([`appendix_a_table`]), the α line in its note.
pub fn appendix_a_markdown(a: &AppendixA) -> String {
    markdown(&appendix_a_table(a))
}

/// Table 7 in Markdown ([`table7_table`]), with the published column.
pub fn table7_markdown(rows: &[Table7Row]) -> String {
    markdown(&table7_table(rows))
}

/// Checks one answer as the report will read it, before it is stored: the one rule behind
/// `sleuth annotate answer` and the viewer's annotation pages, so a page cannot keep what the
/// command would refuse. `kind` is the campaign's, `hidden` the item's. A *responses* answer must
/// rate every response of the group (a group half rated would weigh its conditions unequally).
pub fn check_answer(
    kind: &str,
    item: u32,
    annotator: &str,
    hidden: &Value,
    answer: &Value,
) -> Result<(), HumansError> {
    let items = [(item, hidden.clone())];
    let answers = [(item, annotator.to_string(), answer.clone())];
    match kind {
        "responses" => {
            let rated = response_ratings(&items, &answers)?;
            let labels = hidden["responses"].as_object().map_or(0, |m| m.len());
            if rated.len() != labels {
                let problem = format!(
                    "rates {} of the {labels} responses: every response must be rated",
                    rated.len()
                );
                return Err(answer_err(item, annotator, "ratings", problem));
            }
        }
        "rankings" => {
            rankings(&items, &answers)?;
        }
        "questions" => {
            question_reviews(&items, &answers)?;
        }
        other => {
            return Err(HumansError::UnknownKind {
                kind: other.to_string(),
            })
        }
    }
    Ok(())
}

/// *questions* campaigns are checked where the other kinds are: `question_reviews` reads and checks
/// their answers (accept, reject, edit) as `response_ratings` and `rankings` do theirs; its module
/// (`campaign::questions`) also holds the keep rule.
pub use crate::campaign::questions::{question_reviews, QuestionReview, ReviewAction};

#[cfg(test)]
mod tests {
    use super::*;

    type Answers = [(u32, String, Value)];

    fn parse<T: DeserializeOwned>(json: &str) -> T {
        serde_json::from_str(json).expect("test JSON")
    }

    fn response_items() -> Vec<(u32, Value)> {
        parse(
            r#"[[0, {"script": "s", "character": "c", "stage": "introduction", "responses":
                    {"A": {"condition": "full", "game": "g1"}, "B": {"condition": "base", "game": "g2"}}}],
                [1, {"script": "s", "character": "c", "stage": "introduction", "responses":
                    {"A": {"condition": "base", "game": "g3"}, "B": {"condition": "full", "game": "g4"}}}]]"#,
        )
    }

    /// ann rates both items, bob item 0 only.
    fn ratings() -> Vec<ResponseRating> {
        let answers: Vec<(u32, String, Value)> = parse(
            r#"[[0, "ann", {"ratings": {"A": {"naturalness": 4, "truthfulness": 5, "informativeness": 3},
                                         "B": {"naturalness": 2, "truthfulness": 3, "informativeness": 2}}}],
                [1, "ann", {"ratings": {"A": {"naturalness": 3, "truthfulness": 3, "informativeness": 1},
                                         "B": {"naturalness": 5, "truthfulness": 4, "informativeness": 4}}}],
                [0, "bob", {"ratings": {"A": {"naturalness": 5, "truthfulness": 5, "informativeness": 3},
                                         "B": {"naturalness": 2, "truthfulness": 4, "informativeness": 2}}}]]"#,
        );
        response_ratings(&response_items(), &answers).expect("valid ratings")
    }

    /// Every error message of `cases` (item, answer, expected text) names the item and annotator.
    fn assert_errors<T>(cases: &str, f: impl Fn(&Answers) -> Result<T, HumansError>) {
        for (item, answer, text) in parse::<Vec<(u32, Value, String)>>(cases) {
            let e = f(&[(item, "bob".to_string(), answer)]).err();
            let e = e.map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(&format!("item {item}, annotator bob")), "{e}");
            assert!(e.contains(&text), "{e}");
        }
    }

    #[test]
    fn response_ratings_parse_good_input() {
        let r = ratings();
        let names = |r: &ResponseRating| [r.label.as_str(), &r.condition, &r.annotator].join(" ");
        let row = |r: &ResponseRating| format!("{} {} {:?}", r.item, names(r), r.scores());
        let rows: Vec<String> = r.iter().map(row).collect();
        let want = "0 A full ann [4, 5, 3]|0 B base ann [2, 3, 2]|1 A base ann [3, 3, 1]|\
                    1 B full ann [5, 4, 4]|0 A full bob [5, 5, 3]|0 B base bob [2, 4, 2]";
        assert_eq!(rows.join("|"), want);
    }

    #[test]
    fn response_ratings_errors_name_item_annotator_field() {
        let cases = r#"[
            [1, {"ratings": {"A": {"naturalness": 6, "truthfulness": 5, "informativeness": 3}}}, "ratings.A.naturalness is 6"],
            [0, {"ratings": {"C": {"naturalness": 1, "truthfulness": 1, "informativeness": 1}}}, "ratings.C is not a label"],
            [7, {"ratings": {"A": {"naturalness": 1, "truthfulness": 1, "informativeness": 1}}}, "no such item"],
            [0, {"ratings": {"A": {"naturalness": 3}}}, "ratings.A.truthfulness is missing"]]"#;
        let items = response_items();
        assert_errors(cases, |answers| response_ratings(&items, answers));
    }

    #[test]
    fn appendix_a_means_per_condition() {
        let a = appendix_a(&ratings(), 7);
        // base: (0,B) = mean(2,2), mean(3,4), mean(2,2) and (1,A) = 3, 3, 1;
        // full: (0,A) = mean(4,5), mean(5,5), mean(3,3) and (1,B) = 5, 4, 4.
        let expected = [("base", [2.5, 3.25, 1.5]), ("full", [4.75, 4.5, 3.5])];
        assert_eq!(a.conditions.len(), 2);
        for (c, (name, means)) in a.conditions.iter().zip(expected) {
            assert_eq!((c.condition.as_str(), c.responses, c.ratings), (name, 2, 3));
            for (iv, want) in c.means.iter().zip(means) {
                let iv = iv.expect("an interval");
                assert!((iv.estimate - want).abs() < 1e-12, "{name}: {iv:?}");
                assert!(iv.low <= iv.estimate && iv.estimate <= iv.high && iv.n == 2);
            }
        }
    }

    #[test]
    fn appendix_a_alpha_matches_agreement_module_and_needs_two_annotators() {
        let a = appendix_a(&ratings(), 7);
        assert_eq!((a.annotators, a.shared_responses), (2, 2));
        // Units (0,A), (0,B), (1,A), (1,B); coders ann, bob.
        let direct = |rows: [[Option<f64>; 2]; 4]| {
            let units: Vec<Vec<Option<f64>>> = rows.iter().map(|r| r.to_vec()).collect();
            krippendorff_alpha(&units, Level::Ordinal).ok()
        };
        let (s, n) = (Some, None);
        let natural = direct([[s(4.), s(5.)], [s(2.), s(2.)], [s(3.), n], [s(5.), n]]);
        let truth = direct([[s(5.), s(5.)], [s(3.), s(4.)], [s(3.), n], [s(4.), n]]);
        assert_eq!(a.alpha, [natural, truth, Some(1.0)]);
        // By hand, ordinal δ² (Krippendorff 2011): 1 − (4 − 1) · 2 / 36 for both.
        for x in [natural, truth] {
            assert!(x.is_some_and(|x| (x - 5.0 / 6.0).abs() < 1e-12), "{x:?}");
        }
        // One annotator: nothing to compare.
        let mut only_ann = ratings();
        only_ann.retain(|r| r.annotator == "ann");
        let a = appendix_a(&only_ann, 7);
        assert_eq!((a.alpha, a.shared_responses), ([None; 3], 0));
        assert!(alpha_line(&a).contains("not computed"));
    }

    fn ranking_items() -> Vec<(u32, Value)> {
        parse(
            r#"[[0, {"game": "g1", "model": "gpt-4o-2024-08-06", "judge": "j", "scores":
                    {"ici": {"A": 0.9, "B": 0.5, "C": 0.1}, "sci": {"A": 1, "B": 1, "C": 1}}}],
                [1, {"game": "g2", "model": "gpt-4o-2024-08-06", "judge": "j", "scores":
                    {"ici": {"A": 0.2, "B": 0.6, "C": 0.4}, "sci": {"A": 1, "B": 3, "C": 2}}}],
                [2, {"game": "g3", "model": "sim", "judge": "j", "scores":
                    {"ici": {"A": 1.0, "B": 2.0}, "sci": null}}]]"#,
        )
    }

    fn all_rankings() -> Vec<Ranking> {
        let answers: Vec<(u32, String, Value)> = parse(
            r#"[[0, "ann", {"ici": ["A", "B", "C"], "sci": ["C", "A", "B"]}],
                [0, "bob", {"ici": ["C", "B", "A"]}],
                [1, "ann", {"ici": ["B", "C", "A"], "sci": ["B", "A", "C"]}],
                [2, "ann", {"ici": ["A", "B"], "sci": null}]]"#,
        );
        rankings(&ranking_items(), &answers).expect("valid rankings")
    }

    #[test]
    fn rankings_parse_good_input() {
        let r = all_rankings();
        let names = |r: &Ranking| [r.game.as_str(), &r.model, &r.annotator].join(" ");
        let row = |r: &Ranking| format!("{} {} {:?}", r.item, names(r), r.metric);
        let rows: Vec<String> = r.iter().map(row).collect();
        let want = "0 g1 gpt-4o-2024-08-06 ann Ici|0 g1 gpt-4o-2024-08-06 ann Sci|\
                    0 g1 gpt-4o-2024-08-06 bob Ici|1 g2 gpt-4o-2024-08-06 ann Ici|\
                    1 g2 gpt-4o-2024-08-06 ann Sci|2 g3 sim ann Ici";
        assert_eq!(rows.join("|"), want);
        let want: Vec<(String, f64)> = parse(r#"[["C", 0.1], ["B", 0.5], ["A", 0.9]]"#);
        assert_eq!((&r[2].judge_scores, r[2].judge.as_str()), (&want, "j"));
        assert_eq!(r[2].order, ["C", "B", "A"]);
    }

    #[test]
    fn rankings_errors_name_item_annotator_metric() {
        let cases = r#"[[1, {"ici": ["A", "B"]}, "ici orders [A, B], not a permutation of [A, B, C]"],
                        [1, {"ici": ["A", "A", "C"]}, "ici orders [A, A, C], not a permutation"],
                        [1, {"sci": ["A", "B", "D"]}, "sci orders [A, B, D], not a permutation"],
                        [2, {"sci": ["A", "B"]}, "sci orders [A, B], not a permutation of []"],
                        [9, {"ici": ["A"]}, "no such item"]]"#;
        assert_errors(cases, |answers| rankings(&ranking_items(), answers));
    }

    #[test]
    fn check_answer_wants_every_response_rated_and_knows_the_kinds() {
        let hidden = response_items().remove(0).1;
        let r =
            |n: u8| serde_json::json!({"naturalness": n, "truthfulness": n, "informativeness": n});
        let both = serde_json::json!({"ratings": {"A": r(3), "B": r(4)}});
        assert_eq!(check_answer("responses", 0, "ann", &hidden, &both), Ok(()));
        let half = serde_json::json!({"ratings": {"A": r(3)}});
        let err = check_answer("responses", 0, "ann", &hidden, &half).unwrap_err();
        assert!(
            err.to_string().contains("rates 1 of the 2 responses"),
            "{err}"
        );
        let bad = serde_json::json!({"ratings": {"A": r(3), "B": r(6)}});
        let err = check_answer("responses", 0, "ann", &hidden, &bad).unwrap_err();
        assert!(
            err.to_string().contains("ratings.B.naturalness is 6"),
            "{err}"
        );
        let hidden = ranking_items().remove(0).1;
        let order = serde_json::json!({"ici": ["C", "A", "B"]});
        assert_eq!(check_answer("rankings", 0, "ann", &hidden, &order), Ok(()));
        let err = check_answer("votes", 0, "ann", &hidden, &order).unwrap_err();
        assert_eq!(
            err,
            HumansError::UnknownKind {
                kind: "votes".into()
            }
        );
    }

    #[test]
    fn table7_taus_means_and_skips() {
        let r = all_rankings();
        let taus = [0, 2, 1].map(|i| ranking_tau(&r[i]));
        assert_eq!(taus, [Some(1.0), Some(-1.0), None]);
        let rows = table7(&r);
        let counts = |r: &Table7Row| (r.metric, [r.games, r.rankings, r.skipped]);
        let row = |r: &Table7Row| format!("{} {:?}", r.model, counts(r));
        let got: Vec<String> = rows.iter().map(row).collect();
        let want = "gpt-4o-2024-08-06 (Ici, [2, 3, 0])|gpt-4o-2024-08-06 (Sci, [1, 1, 1])|\
                    sim (Ici, [1, 1, 0])";
        assert_eq!(got.join("|"), want);
        // ICI: (1 − 1 + 1) / 3. SCI: g2 only, B > A > C against B 3, C 2, A 1: (2 − 1) / 3.
        let close = |x: Option<f64>, want: f64| x.is_some_and(|x| (x - want).abs() < 1e-12);
        assert!(close(rows[0].mean_tau, 1.0 / 3.0) && close(rows[1].mean_tau, 1.0 / 3.0));
        assert_eq!(rows[2].mean_tau, Some(-1.0));
        let published: Vec<Option<f64>> = rows.iter().map(|r| r.published).collect();
        assert_eq!(published, [Some(0.867), Some(0.467), None]);
        let qwen = published_tau("Qwen/Qwen2-7B-Instruct", Metric::Sci);
        assert_eq!(qwen, Some(0.333));
    }

    #[test]
    fn rendering_shows_conditions_alpha_and_published() {
        let md = appendix_a_markdown(&appendix_a(&ratings(), 7));
        let md = md + &table7_markdown(&table7(&all_rankings()));
        let want = "| base | 2 | 3 | 2.50 [;| full | 2 | 3 | 4.75 [;| Naturalness |;α (ordinal;\
                    naturalness 0.833;| gpt-4o-2024-08-06 | ICI | 2 | 3 | 0 | 0.333 | 0.867 |;\
                    | sim | ICI | 1 | 1 | 0 | -1.000 | — |;MIRAGE (published)";
        for want in want.split(';') {
            assert!(md.contains(want), "{want}: {md}");
        }
    }
}
