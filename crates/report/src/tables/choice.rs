//! PLAYER* Tables A3 and A4 (multiple-choice scores and voting per script × method) and their
//! measures from other protocols' games.
//!
//! **One rule for every spread.** Every ± of these tables is a population standard deviation:
//! divided by the number of values per script, by the sum of the weights in the pooled rows. The
//! paper is not consistent — its per-script Voting (".333 ± .471" is {0, 0, 1}) and its Appendix
//! B.3 pooling divide by n, its per-script category rows and its Overall Voting row by n − 1 — so a
//! table that copied each row's habit would print two spreads for the same runs (one script evaluated
//! nine times: .1293 in its own row, .1219 in the pooled row). B.3 is the one formula the paper
//! writes down, and its per-script Voting is the one place it spells out a unit, so the ÷ n form is
//! the rule here; the notes say what the paper's n − 1 rows would print instead.

use super::*;
use sleuth_script::Language;

/// WellPlay columns of Table A3, in the paper's row order.
const A3: [(Metric, &str); 4] = [
    (Metric::Objective, "objective"),
    (Metric::Reasoning, "reasoning"),
    (Metric::Relations, "relations"),
    (Metric::ChoiceScore, "overall"),
];

/// PLAYER* Table A3, transposed for a page: a row per script × method, a column per question
/// category; the last rows give each method's weighted mean ± std across scripts. The WellPlay
/// protocol's games only ([`choice`]).
pub fn player_table_a3(g: &Grouping) -> Option<Table> {
    choice(g, Protocol::WellPlay)
}

/// Table A3's measures for the games of one protocol that answered multiple-choice questions, titled
/// by the protocol unless it is WellPlay ([`papers`]).
pub fn choice(g: &Grouping, protocol: Protocol) -> Option<Table> {
    let heading = Measures::Choice.heading(protocol);
    let mut t = scores(g, protocol, heading.id, &heading.title, |_| true, true)?;
    t.note = format!(
        "Games played under the {protocol} protocol. {} Last rows, per method: PLAYER* Appendix \
         B.3's weighted mean of the per-script means ± its weighted std over every evaluation run \
         (weights: the category's question count per script, the script's possible points for \
         Overall, a script's weight shared among its runs, so scripts weigh the same however many \
         games they had); Voting: the unweighted mean of the per-script Voting values ± their std \
         over scripts (a spread between scripts, so 0 with one script). The paper's Overall Voting \
         row divides by n − 1 (PP: .117 over its twelve scripts, .112 by this table's rule). #QA: \
         questions per evaluation of a game (summed over scripts in the last rows). — : not \
         measured (a game that held no vote).",
        columns_note(protocol)
    );
    Some(t)
}

/// PLAYER* Table A4: Table A3's per-script rows for the WellPlay games played on scripts written in
/// English — the paper evaluated four of its scripts in English as well, to compare languages, and
/// printed them apart. A game counts when its script can be read back (the file its spec names, with
/// the recorded digest, as for Table A5's #Tokens): the language belongs to the script, and
/// `result.json` does not record it. Table A3 keeps every WellPlay game, so Figures 5 and 6 and
/// Table A6 (drawn from it) do not depend on the scripts' files being at hand. No pooled rows: the
/// paper's Table A4 has none. `None` when no such game answered multiple-choice questions.
pub fn player_table_a4(g: &Grouping, lengths: &ScriptLengths) -> Option<Table> {
    let english = |a: &Arm| lengths.language(a) == Some(Language::En);
    let mut t = scores(
        g,
        Protocol::WellPlay,
        A4_ID,
        "PLAYER* Table A4 — WellPlay scores on English scripts",
        english,
        false,
    )?;
    t.note = format!(
        "Table A3's rows for the WellPlay games played on a script written in English (the \
         script's `language`, read from the file the games' spec names while its content digest \
         is still the recorded one, as for Table A5's #Tokens; a game whose script cannot be read \
         back is in Table A3 only). The paper evaluated four of its scripts in English as well and \
         printed them apart; Table A3 keeps every WellPlay game, so an English script's rows are \
         in both tables — beside the paper's Chinese rows there, its English rows here. {} No \
         pooled rows (the paper's Table A4 has none).",
        columns_note(Protocol::WellPlay)
    );
    Some(t)
}

/// File stem of Table A4.
pub const A4_ID: &str = "player_table_a4";

/// What the per-script columns of Tables A3 and A4 hold, and the table's one rule for spreads.
fn columns_note(protocol: Protocol) -> String {
    format!(
        "Voting: per victim, 1 when the vote eliminated one of its culprits, else 0 (one ballot \
         round per victim, as PLAYER* counts it; with one victim, 1 when the civilians won under \
         {}); a script's row is the mean ± std over the victims of all the arm's games, PLAYER*'s \
         unit (.333 ± .471: one victim of three found). Objective, Reasoning, Relations: share of \
         that category's multiple-choice questions answered right under the question's rule \
         (exactly the true letters for sleuth's own scripts; WellPlay's two-pick rows when the true \
         letter is among the picks, its single-choice rows when the letter chosen is a true one, as \
         PLAYER* scored them); Overall: awarded / possible points (10, 5, 2 per question); a \
         script's row is the mean ± std over the evaluation runs of the arm's games (PLAYER* \
         evaluates 3 times, `--eval-repeats`; a result without runs counts once). Every ± in this \
         table is a population std (÷ n; ÷ Σw in pooled rows), B.3's form, so one script's runs \
         print the same spread in its row and in a pooled row; the paper's per-script category rows \
         divide by n − 1 instead, which for three runs prints spreads √(3/2) ≈ 1.22 times these.",
        papers::win_rule(protocol)
    )
}

/// The rows of Table A3's shape for `protocol`'s arms that `keep` keeps and that answered
/// multiple-choice questions, with each method's pooled rows when `pooled`; the note is the
/// caller's. `None` when no arm qualifies.
fn scores(
    g: &Grouping,
    protocol: Protocol,
    id: &'static str,
    title: &str,
    keep: impl Fn(&Arm) -> bool,
    pooled: bool,
) -> Option<Table> {
    let with_choice = |games: &[usize]| g.results(games).any(|r| r.choice.is_some());
    let arms: Vec<&Arm> = g
        .arms
        .iter()
        .filter(|a| {
            g.conditions[a.condition].key.protocol == protocol.as_str()
                && with_choice(&a.games)
                && keep(a)
        })
        .collect();
    if arms.is_empty() {
        return None;
    }
    let mut columns = vec![
        Column::new("Script", "script", Kind::Text),
        Column::new("Method", "method", Kind::Text),
        Column::new("Games", "games", Kind::Number(0)),
        Column::new("#QA", "questions", Kind::Number(0)),
        Column::new("Voting", "voting", Kind::MeanStd(RATE)),
    ];
    for (m, f) in A3 {
        let heading = if m == Metric::ChoiceScore {
            "Overall"
        } else {
            m.name()
        };
        columns.push(Column::new(heading, f, Kind::MeanStd(RATE)));
    }
    let mut t = Table::new(id, title, columns);
    // Per condition: the inputs of the pooled rows.
    let mut per_script: BTreeMap<usize, Vec<ScriptScores>> = BTreeMap::new();
    for arm in arms {
        let c = &g.conditions[arm.condition];
        let rs: Vec<&GameResult> = g.results(&arm.games).collect();
        let repeats: Vec<u32> = arm
            .games
            .iter()
            .map(|&gi| {
                // The tallies sum over the evaluation repeats; results from before repeats say 0.
                g.games[gi]
                    .result
                    .choice
                    .as_ref()
                    .map_or(1, |c| c.repeats.max(1))
            })
            .collect();
        let s = ScriptScores::of(&rs, &repeats);
        let mut cells = vec![
            Cell::Text(arm.script_label.clone()),
            Cell::Text(c.method()),
            Cell::Number(Some(arm.games.len() as f64)),
            Cell::Number(s.questions),
            Cell::MeanStd(s.voting),
        ];
        cells.extend(s.shown.iter().map(|&v| Cell::MeanStd(v)));
        t.push(cells, false);
        per_script.entry(arm.condition).or_default().push(s);
    }
    if !pooled {
        return Some(t);
    }
    for (ci, scripts) in &per_script {
        let c = &g.conditions[*ci];
        let voting: Vec<f64> = scripts.iter().filter_map(|s| Some(s.voting?.0)).collect();
        let mut cells = vec![
            Cell::Text("All scripts (weighted)".into()),
            Cell::Text(c.method()),
            Cell::Number(Some(c.games.len() as f64)),
            Cell::Number(Some(scripts.iter().filter_map(|s| s.questions).sum())),
            Cell::MeanStd(metrics::mean_std_population(&voting)),
        ];
        for (i, (m, _)) in A3.iter().enumerate() {
            let v = if *m == Metric::ChoiceScore {
                let xs: Vec<(RunSummary, f64)> = scripts
                    .iter()
                    .filter_map(|s| Some((s.runs[i]?, s.possible?)))
                    .collect();
                formulas::wellplay_overall(&xs)
            } else {
                let xs: Vec<(RunSummary, usize)> = scripts
                    .iter()
                    .filter_map(|s| Some((s.runs[i]?, s.category_questions[i])))
                    .collect();
                formulas::wellplay_category(&xs)
            };
            cells.push(Cell::MeanStd(v));
        }
        t.push(cells, true);
    }
    Some(t)
}

/// The values a per-script cell of Table A3 is the mean ± std of: every evaluation run of every game of
/// the arm (PLAYER* reports mean ± std over its three evaluation runs). A result that recorded no runs
/// contributes its one value.
fn repeat_values(m: Metric, category: &str, rs: &[&GameResult]) -> Vec<f64> {
    let mut out = Vec::new();
    for r in rs {
        let runs = r.choice.as_ref().and_then(|c| match m {
            Metric::ChoiceScore => Some(&c.repeat_scores),
            _ => c.repeat_accuracy.get(category),
        });
        match runs.filter(|v| !v.is_empty()) {
            Some(v) => out.extend(v.iter().copied()),
            None => out.extend(values(m, std::iter::once(*r))),
        }
    }
    out
}

/// One game's Voting outcomes, one per victim: 1 when the vote eliminated one of the victim's
/// culprits, else 0 — PLAYER*'s unit, which its per-script spreads are taken over (Ghost Revenge's
/// ".222 ± .416" is 2 victims of 9 over three games). A game that voted once (one victim, or one vote
/// on the culprits) gives one outcome; so does a result that kept only its fraction. None for a game
/// that held no vote.
fn victim_outcomes(r: &GameResult) -> Vec<f64> {
    match r.majority.as_ref().filter(|m| !m.cases.is_empty()) {
        Some(m) => m
            .cases
            .iter()
            .map(|c| f64::from(u8::from(c.identified)))
            .collect(),
        None => Metric::Voting.of(r).into_iter().collect(),
    }
}

/// What one arm contributes to Table A3: its row's cells and the inputs of its method's pooled rows.
struct ScriptScores {
    /// Mean ± population std over the victims of the arm's games ([`victim_outcomes`]).
    voting: Option<(f64, f64)>,
    /// Objective, reasoning, relations accuracy and the overall score over the evaluation runs of
    /// the arm's games ([`A3`] order), summarised as B.3's pooling takes them (sample std inside).
    runs: [Option<RunSummary>; 4],
    /// The same runs as the row prints them: mean ± population std.
    shown: [Option<(f64, f64)>; 4],
    /// Question counts per game of the three categories.
    category_questions: [usize; 3],
    possible: Option<f64>,
    questions: Option<f64>,
}

impl ScriptScores {
    /// `repeats[i]`: how many times game i asked each question (its tallies sum over them).
    fn of(rs: &[&GameResult], repeats: &[u32]) -> ScriptScores {
        // Every game asks the same questions; the mean guards against a result from another
        // version of the script without failing the table.
        let per_game = |f: &dyn Fn(&GameResult) -> Option<f64>| {
            let xs: Vec<f64> = rs
                .iter()
                .zip(repeats)
                .filter_map(|(r, &k)| Some(f(r)? / f64::from(k.max(1))))
                .collect();
            stats::mean(&xs)
        };
        let count = |name: &str| {
            per_game(&|r| category(r, name).map(|t| t.questions as f64))
                .map_or(0, |m| m.round() as usize)
        };
        let outcomes: Vec<f64> = rs.iter().flat_map(|r| victim_outcomes(r)).collect();
        let runs = A3.map(|(m, name)| repeat_values(m, name, rs));
        ScriptScores {
            voting: metrics::mean_std_population(&outcomes),
            runs: runs.each_ref().map(|xs| RunSummary::of(xs)),
            shown: runs.each_ref().map(|xs| metrics::mean_std_population(xs)),
            category_questions: [count("objective"), count("reasoning"), count("relations")],
            possible: per_game(&|r| r.choice.as_ref().map(|c| f64::from(c.overall.possible))),
            questions: per_game(&|r| r.choice.as_ref().map(|c| c.overall.questions as f64)),
        }
    }
}
