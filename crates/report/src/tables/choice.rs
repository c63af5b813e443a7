//! PLAYER* Table A3 (multiple-choice scores and voting per script × method) and its measures from
//! other protocols' games.

use super::*;

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
    let with_choice = |games: &[usize]| g.results(games).any(|r| r.choice.is_some());
    let conditions: Vec<usize> = (0..g.conditions.len())
        .filter(|&ci| {
            let c = &g.conditions[ci];
            c.key.protocol == protocol.as_str() && with_choice(&c.games)
        })
        .collect();
    if conditions.is_empty() {
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
    let heading = Measures::Choice.heading(protocol);
    let mut t = Table::new(heading.id, &heading.title, columns);
    t.note = format!(
        "Games played under the {protocol} protocol. Voting: per game, victims whose culprit the vote \
         eliminated / victims (one ballot round per victim, as PLAYER* counts it); with one victim, \
         1 when the civilians won under {}, else 0. Objective, Reasoning, Relations: share of that \
         category's multiple-choice questions answered right under the question's rule (exactly the \
         true letters for sleuth's own scripts; WellPlay's two-pick rows when the true letter is among \
         the picks, its single-choice rows when the letter chosen is a true one, as PLAYER* scored \
         them); Overall: awarded / possible points (10, 5, 2 per question). Per script: mean ± \
         sample std over the evaluation runs of the arm's games (PLAYER* evaluates 3 times, \
         `--eval-repeats`; a result without runs counts once); Voting: over games (seeds). Last rows: \
         per method, PLAYER* Appendix B.3's weighted mean of the per-script means ± weighted std over \
         every evaluation run (weights: the category's question count per script, the script's \
         possible points for Overall, a script's weight shared among its runs, so scripts weigh the \
         same however many games they had); Voting: mean ± sample std of the per-script Voting \
         values, unweighted, as the paper's Overall Voting row. #QA: questions per evaluation of a \
         game (summed over scripts in the last rows). — : not measured (a game that held no vote).",
        papers::win_rule(protocol)
    );
    // Per (condition, script): the inputs of the weighted rows.
    let mut per_script: BTreeMap<usize, Vec<ScriptScores>> = BTreeMap::new();
    for arm in &g.arms {
        if !conditions.contains(&arm.condition) || !with_choice(&arm.games) {
            continue;
        }
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
            Cell::MeanStd(metrics::mean_std(&values(
                Metric::Voting,
                rs.iter().copied(),
            ))),
        ];
        cells.extend(
            s.runs
                .iter()
                .map(|r| Cell::MeanStd(r.map(|r| (r.mean, r.std)))),
        );
        t.push(cells, false);
        per_script.entry(arm.condition).or_default().push(s);
    }
    for (ci, scripts) in &per_script {
        let c = &g.conditions[*ci];
        let voting: Vec<f64> = scripts.iter().filter_map(|s| s.voting).collect();
        let mut cells = vec![
            Cell::Text("All scripts (weighted)".into()),
            Cell::Text(c.method()),
            Cell::Number(Some(c.games.len() as f64)),
            Cell::Number(Some(scripts.iter().filter_map(|s| s.questions).sum())),
            Cell::MeanStd(formulas::wellplay_voting(&voting)),
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

/// What one arm contributes to a method's weighted row in Table A3.
struct ScriptScores {
    voting: Option<f64>,
    /// Objective, reasoning, relations accuracy and the overall score over the evaluation runs of
    /// the arm's games ([`A3`] order): the per-script cells, and the inputs of the weighted rows.
    runs: [Option<RunSummary>; 4],
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
        ScriptScores {
            voting: stats::mean(&values(Metric::Voting, rs.iter().copied())),
            runs: A3.map(|(m, name)| RunSummary::of(&repeat_values(m, name, rs))),
            category_questions: [count("objective"), count("reasoning"), count("relations")],
            possible: per_game(&|r| r.choice.as_ref().map(|c| f64::from(c.overall.possible))),
            questions: per_game(&|r| r.choice.as_ref().map(|c| c.overall.questions as f64)),
        }
    }
}
