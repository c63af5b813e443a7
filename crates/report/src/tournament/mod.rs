//! Tournaments: models against each other, one on the culprit's side and one on the civilians'.
//!
//! Games are pooled into a tournament when they were played the same way but for their models — the
//! same condition ([`super::arms::Condition`]) with `model` and `murderer_model` left out — and at
//! least one of them put two different models on the two sides (a sweep's `[tournament]`,
//! `sweep/tournament.rs`). Each tournament gives three tables:
//!
//! - `tournament_ratings`: per model, Bradley–Terry ratings on the Elo scale, overall and per side
//!   ([`sleuth_game::eval::rating`]) — only those the games connect ([`Connected`]) — its win rates
//!   on each side, and what its wins cost;
//! - `tournament_matrix`: how often the row's model beat the column's, both sides pooled;
//! - `tournament_sides`: how often the culprit's side won with the row's model as culprit against
//!   the column's as civilians.
//!
//! **People on the ladder.** A game with a person at the table (`sleuth play --human`, the result's
//! `seats`) is a match between the person and the model across the table: the side a person sat on
//! is theirs, `human:NAME` (people on one side are one entrant, their labels joined by ` + `), as
//! TextArena and game arenas rate people and models on one ladder. Agents beside the person play on
//! the person's side and are not rated for that game; their calls are not what the person spent.
//!
//! Rates and ratings come with the two-stage percentile bootstrap over scripts and games
//! ([`sleuth_game::eval::stats::bootstrap_over_groups`], [`sleuth_game::eval::rating::bootstrap`]). What a model
//! spent is read from the games' transcripts: a gameplay event's calls are its speaker's, and a
//! murderer's calls are the culprit model's, everyone else's the civilians' model's (as the sweep's
//! estimate attributes them).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;

use serde::Deserialize;

mod connected;

use connected::Connected;

use super::arms::{Condition, Grouping};
use super::metrics::Bootstrap;
use super::table::{Cell, Column, Kind, Table};
use super::tables::level_text;
use sleuth_game::eval::rating::{self, FitIntervals, Match};
use sleuth_game::eval::stats::{Group, Interval};
use sleuth_game::game::{GameResult, Winner};
use sleuth_llm::Usage;

/// Table ids, for the report's list of files it may write.
pub const IDS: [&str; 3] = [
    "tournament_ratings",
    "tournament_matrix",
    "tournament_sides",
];

/// Decimals of rates; ratings are whole Elo points.
const RATE: usize = 3;

/// A game's two entrants: (culprit's, civilians').
type Sides<'a> = (Cow<'a, str>, Cow<'a, str>);

/// Who played a game's two sides: (culprit's, civilians') — a model, or the people seated on that
/// side (see the module docs).
fn sides(r: &GameResult) -> Sides<'_> {
    let culprit = r
        .spec
        .as_ref()
        .and_then(|s| s.murderer_model.as_deref())
        .unwrap_or(&r.model);
    let (culprit_people, civilian_people) = people(r);
    (
        culprit_people.map_or(Cow::Borrowed(culprit), Cow::Owned),
        civilian_people.map_or(Cow::Borrowed(r.model.as_str()), Cow::Owned),
    )
}

/// The people seated on each side, as one entrant's label per side: (culprit's, civilians').
fn people(r: &GameResult) -> (Option<String>, Option<String>) {
    let side = |culprit: bool| {
        let labels: BTreeSet<&str> = r
            .seats
            .iter()
            .filter(|(character, _)| r.murderers.contains(*character) == culprit)
            .map(|(_, label)| label.as_str())
            .collect();
        (!labels.is_empty()).then(|| labels.into_iter().collect::<Vec<_>>().join(" + "))
    };
    (side(true), side(false))
}

/// One game of a tournament.
#[derive(Debug, Clone)]
struct Game {
    /// Index into [`Grouping::games`].
    index: usize,
    script: String,
    culprit: usize,
    civilians: usize,
    culprit_won: bool,
}

/// One tournament: games played the same way but for their models.
#[derive(Debug, Clone)]
struct Tournament {
    /// How its games were played ("" when the report holds one tournament).
    setup: String,
    models: Vec<String>,
    games: Vec<Game>,
}

impl Tournament {
    fn scripts(&self) -> Vec<&str> {
        let set: BTreeSet<&str> = self.games.iter().map(|g| g.script.as_str()).collect();
        set.into_iter().collect()
    }

    /// Per script, the value of each game `f` gives one for: the groups of a mean over scripts.
    fn groups(&self, f: impl Fn(&Game) -> Option<f64>) -> Vec<Vec<f64>> {
        self.scripts()
            .into_iter()
            .map(|s| {
                self.games
                    .iter()
                    .filter(|g| g.script == s)
                    .filter_map(&f)
                    .collect()
            })
            .collect()
    }

    fn rate(&self, b: &Bootstrap, f: impl Fn(&Game) -> Option<f64>) -> Option<Interval> {
        let values = self.groups(f);
        let groups: Vec<Group> = values.iter().map(|v| Group::unweighted(v)).collect();
        b.over_scripts(&groups)
    }
}

/// The tournaments among the games, in the order of their first condition.
fn tournaments(g: &Grouping) -> Vec<Tournament> {
    let script_of: BTreeMap<usize, &str> = g
        .arms
        .iter()
        .flat_map(|a| a.games.iter().map(move |&i| (i, a.script_label.as_str())))
        .collect();
    // Setup → (its label, its games).
    let mut setups: Vec<(Condition, String, Vec<usize>)> = Vec::new();
    for c in &g.conditions {
        let key = Condition {
            model: String::new(),
            murderer_model: None,
            ..c.key.clone()
        };
        let label = format!("{} · {}", c.key.protocol, c.method_without_model());
        match setups.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, _, games)) => games.extend(&c.games),
            None => setups.push((key, label, c.games.clone())),
        }
    }
    let mut out: Vec<Tournament> = Vec::new();
    for (_, setup, mut games) in setups {
        games.sort_unstable();
        let played: Vec<(usize, &GameResult)> = games
            .iter()
            .map(|&i| (i, &g.games[i].result))
            .filter(|(_, r)| r.winner.is_some())
            .collect();
        let played: Vec<(usize, &GameResult, Sides)> =
            played.into_iter().map(|(i, r)| (i, r, sides(r))).collect();
        if !played.iter().any(|(_, _, (c, v))| c != v) {
            continue;
        }
        let models: Vec<String> = played
            .iter()
            .flat_map(|(_, _, (c, v))| [c.as_ref(), v.as_ref()])
            .collect::<BTreeSet<&str>>()
            .into_iter()
            .map(str::to_string)
            .collect();
        let at = |m: &str| models.iter().position(|x| x == m).unwrap_or(0);
        let games = played
            .iter()
            .map(|(index, r, (c, v))| Game {
                index: *index,
                script: script_of.get(index).copied().unwrap_or(&r.script).into(),
                culprit: at(c),
                civilians: at(v),
                culprit_won: r.winner == Some(Winner::Murderer),
            })
            .collect();
        out.push(Tournament {
            setup,
            models,
            games,
        });
    }
    if out.len() == 1 {
        out[0].setup.clear();
    }
    out
}

/// What each side's model spent in one game's gameplay, read from its transcript: (culprit's,
/// civilians'); `None` without a readable transcript. A side people played spent nothing of its own:
/// the calls of the agents beside them are left out.
fn spent(g: &Grouping, index: usize) -> Option<(Usage, Usage)> {
    #[derive(Deserialize)]
    struct Line {
        stage: String,
        speaker: String,
        usage: Option<Usage>,
    }
    let record = &g.games[index];
    let seated = people(&record.result);
    let file = std::fs::File::open(record.transcript.as_deref()?).ok()?;
    let mut culprit = Usage::default();
    let mut civilians = Usage::default();
    for line in std::io::BufReader::new(file).lines() {
        let line = line.ok()?;
        if line.trim().is_empty() {
            continue;
        }
        let e: Line = serde_json::from_str(&line).ok()?;
        let Some(u) = e.usage.filter(|_| e.stage != "evaluation") else {
            continue;
        };
        if record.result.murderers.contains(&e.speaker) {
            if seated.0.is_none() {
                culprit += u;
            }
        } else if seated.1.is_none() {
            civilians += u;
        }
    }
    Some((culprit, civilians))
}

/// Per model: USD and tokens its characters spent in games against other models; `None` when a
/// game's transcript could not be read (named in `notes`).
fn costs(g: &Grouping, t: &Tournament, notes: &mut Vec<String>) -> Option<Vec<(f64, f64)>> {
    let mut out = vec![(0.0, 0.0); t.models.len()];
    let mut missing = Vec::new();
    for game in t.games.iter().filter(|x| x.culprit != x.civilians) {
        match spent(g, game.index) {
            Some((c, v)) => {
                for (who, u) in [(game.culprit, c), (game.civilians, v)] {
                    out[who].0 += u.cost_usd;
                    out[who].1 += (u.prompt_tokens + u.completion_tokens) as f64;
                }
            }
            None => missing.push(g.games[game.index].path.display().to_string()),
        }
    }
    if missing.is_empty() {
        return Some(out);
    }
    notes.push(format!(
        "Tournament{}: the cost per win is — because {} had no readable {} beside it (the first: {})",
        if t.setup.is_empty() {
            String::new()
        } else {
            format!(" {}", t.setup)
        },
        super::plural(missing.len(), "game"),
        super::load::TRANSCRIPT_FILE,
        missing[0]
    ));
    None
}

/// A tournament with its ratings, and its models in rating order (best first, unrated ones last).
struct Rated {
    t: Tournament,
    iv: FitIntervals,
    order: Vec<usize>,
}

fn rate(t: Tournament, b: &Bootstrap) -> Option<Rated> {
    let per_script: Vec<Vec<Match>> = t
        .scripts()
        .into_iter()
        .map(|s| {
            t.games
                .iter()
                .filter(|x| x.script == s)
                .map(|x| Match {
                    culprit: x.culprit,
                    civilians: x.civilians,
                    culprit_won: x.culprit_won,
                })
                .collect()
        })
        .collect();
    let k = t.models.len();
    let (_, iv) = rating::bootstrap(k, &per_script, b.resamples, b.level, b.seed)?;
    let mut order: Vec<usize> = (0..k).collect();
    let r = |i: usize| iv.overall[i].map_or(f64::NEG_INFINITY, |v| v.estimate);
    order.sort_by(|&x, &y| r(y).total_cmp(&r(x)).then(x.cmp(&y)));
    Some(Rated { t, iv, order })
}

/// 1 when `yes`, else 0: a game's contribution to a rate.
fn one(yes: bool) -> f64 {
    f64::from(u8::from(yes))
}

/// The three tables, when the games hold a tournament; notes for what could not be computed.
pub fn tables(g: &Grouping, b: &Bootstrap, notes: &mut Vec<String>) -> Vec<Table> {
    let rated: Vec<Rated> = tournaments(g)
        .into_iter()
        .filter_map(|t| rate(t, b))
        .collect();
    if rated.is_empty() {
        return Vec::new();
    }
    let many = rated.len() > 1;
    // Matrix columns: the models in rating order (of the first tournament that has them).
    let mut columns: Vec<&str> = Vec::new();
    for r in &rated {
        for &i in &r.order {
            if !columns.contains(&r.t.models[i].as_str()) {
                columns.push(&r.t.models[i]);
            }
        }
    }
    let level = level_text(b.level);
    let mut ratings = ratings_table(many);
    let mut matrix = grid(
        "tournament_matrix",
        "Tournament — pairwise win matrix",
        "Model",
        many,
        &columns,
    );
    matrix.note = format!(
        "The share of the games between the row's model and the column's that the row's model won, \
         on either side (a tournament plays each pair both ways round equally often); rows and \
         columns in rating order. {level} bootstrap intervals over scripts and games."
    );
    let mut sides = grid(
        "tournament_sides",
        "Tournament — culprit (row) against civilians (column)",
        "Culprit",
        many,
        &columns,
    );
    sides.note = format!(
        "The share of games the culprit's side won with the row's model as culprit against the \
         column's model as civilians; the diagonal is a model against itself (`self_play`), — when \
         not played. {level} bootstrap intervals over scripts and games."
    );
    let mut advantages = Vec::new();
    // Setups whose games leave the overall or the per-side ratings unconnected.
    let (mut split_overall, mut split_sides) = (Vec::new(), Vec::new());
    for Rated { t, iv, order } in &rated {
        let connected = Connected::of(t);
        let name = if t.setup.is_empty() {
            "this tournament".to_string()
        } else {
            t.setup.clone()
        };
        if !connected.overall {
            split_overall.push(name.clone());
        }
        if !connected.sides {
            split_sides.push(name);
        }
        let only = |ok: bool, v: Option<Interval>| v.filter(|_| ok);
        let a = iv.culprit_advantage;
        let at = if t.setup.is_empty() {
            String::new()
        } else {
            format!(" ({})", t.setup)
        };
        advantages.push(format!(
            "{:+.0} [{:+.0}, {:+.0}]{at}",
            a.estimate, a.low, a.high
        ));
        let costs = costs(g, t, notes);
        let lead = |cells: Vec<Cell>| -> Vec<Cell> {
            many.then(|| Cell::Text(t.setup.clone()))
                .into_iter()
                .chain(cells)
                .collect()
        };
        for &i in order {
            let others =
                |x: &Game| x.culprit != x.civilians && (x.culprit == i || x.civilians == i);
            let won = |x: &Game| (x.culprit == i) == x.culprit_won;
            let games = t.games.iter().filter(|x| others(x)).count();
            let wins = t.games.iter().filter(|x| others(x) && won(x)).count();
            let (usd, tokens) = match &costs {
                Some(c) => (Some(c[i].0), Some(c[i].1)),
                None => (None, None),
            };
            let per_win = |x: Option<f64>| x.filter(|_| wins > 0).map(|x| x / wins as f64);
            let name = Cell::Text(t.models[i].clone());
            ratings.push(
                lead(vec![
                    name.clone(),
                    Cell::Number(Some(games as f64)),
                    Cell::Number(Some(wins as f64)),
                    Cell::MeanCi(t.rate(b, |x| others(x).then(|| one(won(x))))),
                    Cell::MeanCi(only(connected.overall, iv.overall[i])),
                    Cell::MeanCi(only(connected.sides, iv.culprit[i])),
                    Cell::MeanCi(only(connected.sides, iv.civilians[i])),
                    Cell::MeanCi(t.rate(b, |x| (x.culprit == i).then(|| one(x.culprit_won)))),
                    Cell::MeanCi(t.rate(b, |x| (x.civilians == i).then(|| one(!x.culprit_won)))),
                    Cell::Number(usd),
                    Cell::Number(per_win(usd)),
                    Cell::Number(per_win(tokens)),
                ]),
                false,
            );
            let (mut row, mut side) = (vec![name.clone()], vec![name]);
            for m in &columns {
                let j = t.models.iter().position(|x| x == m);
                // Whether a game set c on the culprit's side against v on the civilians'.
                let pairing =
                    |c: usize, v: usize| move |x: &Game| x.culprit == c && x.civilians == v;
                row.push(Cell::MeanCi(j.filter(|&j| j != i).and_then(|j| {
                    let met = |x: &Game| pairing(i, j)(x) || pairing(j, i)(x);
                    t.rate(b, |x| met(x).then(|| one(won(x))))
                })));
                side.push(Cell::MeanCi(j.and_then(|j| {
                    t.rate(b, |x| pairing(i, j)(x).then(|| one(x.culprit_won)))
                })));
            }
            matrix.push(lead(row), false);
            sides.push(lead(side), false);
        }
    }
    ratings.note = format!(
        "Games played the same way but for their models, with different models on the culprit's \
         and the civilians' side in some of them (a sweep's [tournament]); rows in rating order. \
         Games, Wins and Win rate count games against another model. Rating is a Bradley–Terry \
         strength on the Elo scale (1000 = the models' geometric mean; d points apart = odds \
         10^(d/400) to 1), fitted by the MM algorithm with one factor for the culprit's side, which \
         is worth {} points here; Culprit and Civilians rating fit one strength per model and side \
         on one scale, so a culprit rating against a civilians rating gives the odds of that \
         pairing. Each strength (and the culprit's factor) carries a weak prior: two virtual \
         games, one won and one lost, against a fixed reference of strength 1 — the strength every \
         fit starts from, not the models' mean — so a clean sweep stays finite. A rating is printed \
         only when the games link it, directly or through other models, to every other rating on \
         its scale (the Culprit and Civilians ratings share one): ratings that no chain of games \
         connects would be placed apart by the prior alone.{} Culprit and Civilians win rate are the shares of the \
         model's games on that side its side won (games against itself included). Intervals are \
         {level} percentile bootstrap over scripts, then games within scripts ({} resamples, seed \
         {}). USD and tokens are what the model's own characters spent in gameplay (murderers' \
         calls are the culprit model's, everyone else's the civilians'; read from the \
         transcripts), in its games against other models; per win divides by Wins.",
        advantages.join(", "),
        unconnected(&split_overall, &split_sides),
        b.resamples,
        b.seed
    );
    vec![ratings, matrix, sides]
}

/// The note's sentences on ratings left out because the games do not connect them ("" when every
/// rating is connected), naming the setups.
fn unconnected(overall: &[String], sides: &[String]) -> String {
    let mut out = String::new();
    if !sides.is_empty() {
        out.push_str(&format!(
            " Culprit and Civilians rating are — in {}: some culprit and civilians strengths never \
             meet, directly or through other models (with two models and no self-play, each \
             model's culprit meets only the other's civilians), so comparing them would read the \
             prior; `self_play = true` in the sweep's [tournament] adds the games that connect \
             them, and the culprit × civilians table shows every pairing played.",
            sides.join(", ")
        ));
    }
    if !overall.is_empty() {
        out.push_str(&format!(
            " Rating is — in {}: its models fall in groups that never played each other.",
            overall.join(", ")
        ));
    }
    out
}

/// The Setup column, for reports that hold several tournaments.
fn setup_column(many: bool) -> Option<Column> {
    many.then(|| Column::new("Setup", "setup", Kind::Text))
}

fn ratings_table(many: bool) -> Table {
    let columns = setup_column(many).into_iter().chain([
        Column::new("Model", "model", Kind::Text),
        Column::new("Games", "games", Kind::Number(0)),
        Column::new("Wins", "wins", Kind::Number(0)),
        Column::new("Win rate", "win_rate", Kind::MeanCi(RATE)),
        Column::new("Rating", "rating", Kind::MeanCi(0)),
        Column::new("Culprit rating", "culprit_rating", Kind::MeanCi(0)),
        Column::new("Civilians rating", "civilians_rating", Kind::MeanCi(0)),
        Column::new("Culprit win rate", "culprit_win_rate", Kind::MeanCi(RATE)),
        Column::new(
            "Civilians win rate",
            "civilians_win_rate",
            Kind::MeanCi(RATE),
        ),
        Column::new("USD", "usd", Kind::Number(4)),
        Column::new("USD per win", "usd_per_win", Kind::Number(4)),
        Column::new("Tokens per win", "tokens_per_win", Kind::Number(0)),
    ]);
    Table::new(
        "tournament_ratings",
        "Tournament — Bradley–Terry ratings",
        columns.collect(),
    )
}

/// A model × model table: the row's model, then a rate per column model.
fn grid(id: &'static str, title: &str, first: &str, many: bool, models: &[&str]) -> Table {
    let columns = setup_column(many)
        .into_iter()
        .chain([Column::new(first, "model", Kind::Text)])
        .chain(
            models
                .iter()
                .map(|m| Column::new(m, &format!("vs_{m}"), Kind::MeanCi(RATE))),
        );
    Table::new(id, title, columns.collect())
}

#[cfg(test)]
mod tests;
