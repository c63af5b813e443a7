//! The papers' tables, built from grouped games.
//!
//! - `arms`: every arm (script version × condition) with its games and seeds — the index of the report.
//! - ThinkThrice Table 4: factual QA (Own, CQ, MQ, Others), civilian win rate and murderer detection
//!   per condition, pooled over scripts, with bootstrap intervals over games.
//! - PLAYER* Table A3: WellPlay voting and multiple-choice scores per script × method, mean ± std
//!   over repeats, then per method the weighted mean ± std across scripts (Appendix B.3, over the
//!   evaluation runs).
//! - PLAYER* Table A5: each script's length (#Tokens per character), cost and tokens per script and
//!   phase (gameplay, evaluation), mean per game; evaluation per evaluation process as the paper
//!   reports it, with the total of every run beside it.
//! - MIRAGE Table 2: tokens and requests, Victory, TII (suspicion share), CIC, ICI, SCI and parse
//!   failures per condition, pooled over scripts as the paper pools Table 11 (means over scripts, CIC
//!   as counts).
//! - `paired`: two conditions compared on the same scripts and seeds.
//!
//! A table appears only when some game measured what it shows. A paper's table holds only games of
//! that paper's protocol; Table 4's, A3's and A5's measures from other protocols are built by the
//! same functions under a title naming the protocol ([`super::papers`]).

use std::collections::{BTreeMap, BTreeSet};

use super::arms::{script_digest, Arm, ConditionInfo, Grouping};
use super::clues::Timeline;
use super::metrics::{self, category, values, Bootstrap, Metric};
use super::papers::{self, Measures};
use super::scripts::ScriptLengths;
use super::table::{Cell, Column, Kind, Table};
use crate::eval::formulas;
use crate::eval::stats::{self, Group, RunSummary};
use crate::game::GameResult;
use crate::game::MirageScores;
use crate::game::Protocol;

/// Decimals of accuracies and rates (the papers print three).
const RATE: usize = 3;

/// The index of arms.
pub fn arms(g: &Grouping) -> Table {
    let mut t = Table::new(
        "arms",
        "Arms",
        vec![
            Column::new("Script", "script", Kind::Text),
            Column::new("Script digest", "script_digest", Kind::Text),
            Column::new("Protocol", "protocol", Kind::Text),
            Column::new("Method", "method", Kind::Text),
            Column::new("Model", "model", Kind::Text),
            Column::new("Games", "games", Kind::Number(0)),
            Column::new("Seeds", "seeds", Kind::Text),
            Column::new("Settings", "settings", Kind::Text),
        ],
    );
    t.note = "An arm is one version of one script played under one condition (protocol, framework, \
              murderers' framework, modules, model and protocol settings); its games are the repeats \
              over seeds. A version is the script's content digest as the games' spec recorded it \
              (empty for results written before games recorded a spec): games of an edited script — \
              another culprit, other clues — are another arm. Tables add a short digest to the \
              script's name (\"Inn @ab12cd\") only when the report holds several versions of it. \
              Method names a condition by what sets it apart from the others in this report."
        .into();
    for arm in &g.arms {
        let c = &g.conditions[arm.condition];
        let seeds: Vec<String> = g.results(&arm.games).map(|r| r.seed.to_string()).collect();
        let settings: Vec<String> = c
            .key
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        t.push(
            vec![
                Cell::Text(arm.script_label.clone()),
                Cell::Text(arm.digest.clone().unwrap_or_default()),
                Cell::Text(c.key.protocol.clone()),
                Cell::Text(c.method()),
                Cell::Text(c.key.model.clone()),
                Cell::Number(Some(arm.games.len() as f64)),
                Cell::Text(seeds.join(" ")),
                Cell::Text(settings.join(", ")),
            ],
            false,
        );
    }
    t
}

/// ThinkThrice Table 4, with Figure 4's win rate and detection accuracy as columns: the ThinkThrice
/// protocol's games only ([`factual`]).
pub fn thinkthrice_table4(g: &Grouping, boot: &Bootstrap) -> Option<Table> {
    factual(g, boot, Protocol::ThinkThrice)
}

/// Table 4's measures for one protocol's games: under the ThinkThrice protocol every condition (it is
/// the paper's table), under another only conditions that answered factual questions (their votes
/// have their own figure), titled by the protocol ([`papers`]).
pub fn factual(g: &Grouping, boot: &Bootstrap, protocol: Protocol) -> Option<Table> {
    let factual = [Metric::Own, Metric::Cq, Metric::Mq, Metric::Others];
    let paper = protocol == Measures::Factual.paper_protocol();
    let rows: Vec<&ConditionInfo> = g
        .conditions
        .iter()
        .filter(|c| {
            c.key.protocol == protocol.as_str()
                && (paper
                    || g.results(&c.games)
                        .any(|r| factual.iter().any(|m| m.of(r).is_some())))
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut columns = vec![
        Column::new("Method", "method", Kind::Text),
        Column::new("Scripts", "scripts", Kind::Number(0)),
        Column::new("Games", "games", Kind::Number(0)),
    ];
    let metrics = [
        Metric::Own,
        Metric::Cq,
        Metric::Mq,
        Metric::Others,
        Metric::CivilianWin,
        Metric::Detection,
    ];
    for m in metrics {
        columns.push(Column::new(m.name(), field(m), Kind::MeanCi(RATE)));
    }
    let heading = Measures::Factual.heading(protocol);
    let mut t = Table::new(heading.id, &heading.title, columns);
    t.note = format!(
        "Games played under the {protocol} protocol. Own: questions from the agent's own script; CQ: \
         from other civilians' scripts; MQ: from the murderer's; Others: CQ and MQ together. Win rate: \
         share of games the civilians won under {}; detection: votes received by the murderer / votes \
         cast (ThinkThrice Figure 4). Each cell is the mean over games (pooled over scripts) with its \
         {} bootstrap interval over games.",
        papers::win_rule(protocol),
        level_text(boot.level)
    );
    for c in rows {
        let mut cells = vec![
            Cell::Text(c.method()),
            Cell::Number(Some(c.arms.len() as f64)),
            Cell::Number(Some(c.games.len() as f64)),
        ];
        for m in metrics {
            cells.push(Cell::MeanCi(boot.mean(&values(m, g.results(&c.games)))));
        }
        t.push(cells, false);
    }
    Some(t)
}

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

/// PLAYER* Table A5: each script's length, then USD, tokens and calls per phase, mean per game, per
/// script × method. The WellPlay protocol's games only ([`cost`]).
pub fn player_table_a5(g: &Grouping, lengths: &ScriptLengths) -> Option<Table> {
    cost(g, Protocol::WellPlay, lengths)
}

/// Table A5's measures for one protocol's games, titled by the protocol unless it is WellPlay
/// ([`papers`]). `lengths` gives the #Tokens column: the paper prints each script's length beside its
/// cost because the length drives it, so a reader can tell a dear method from a long script.
pub fn cost(g: &Grouping, protocol: Protocol, lengths: &ScriptLengths) -> Option<Table> {
    let arms: Vec<&Arm> = g
        .arms
        .iter()
        .filter(|a| g.conditions[a.condition].key.protocol == protocol.as_str())
        .collect();
    if arms.is_empty() {
        return None;
    }
    let heading = Measures::Cost.heading(protocol);
    let mut t = Table::new(
        heading.id,
        &heading.title,
        vec![
            Column::new("Script", "script", Kind::Text),
            Column::new("#Tokens", "tokens_per_character", Kind::Number(0)),
            Column::new("Method", "method", Kind::Text),
            Column::new("Games", "games", Kind::Number(0)),
            Column::new("Gameplay USD", "gameplay_usd", Kind::Number(4)),
            Column::new("Gameplay tokens", "gameplay_tokens", Kind::Number(0)),
            Column::new("Gameplay calls", "gameplay_calls", Kind::Number(0)),
            Column::new("Evaluation USD", "evaluation_usd", Kind::Number(4)),
            Column::new("Evaluation tokens", "evaluation_tokens", Kind::Number(0)),
            Column::new("Evaluation calls", "evaluation_calls", Kind::Number(0)),
            Column::new(
                "Evaluation USD (all runs)",
                "evaluation_usd_all_runs",
                Kind::Number(4),
            ),
            Column::new(
                "Evaluation tokens (all runs)",
                "evaluation_tokens_all_runs",
                Kind::Number(0),
            ),
            Column::new(
                "Evaluation calls (all runs)",
                "evaluation_calls_all_runs",
                Kind::Number(0),
            ),
            Column::new(
                "Cacheable prompt %",
                "cacheable_prompt_pct",
                Kind::Number(1),
            ),
        ],
    );
    t.note = format!(
        "Games played under the {protocol} protocol. #Tokens is the script's length as PLAYER* \
         prints it: the tokens of one character's private script averaged over the characters \
         (`sleuth script stats`' Tokens/player: cl100k, in the language the script was played in), \
         read from the script file the games' spec names (as given, from the working directory) \
         when its content digest is still the recorded one; — when it is not (see the notes) or the \
         games recorded no script file. Mean per game over the arm's repeats; \
         tokens are prompt + completion tokens. Gameplay is — for a game with no gameplay call (PP and OP outside WellPlay; under WellPlay their gameplay is the final vote). Evaluation \
         USD, tokens and calls are per evaluation process, as PLAYER* reports them: a game's \
         evaluation cost divided by the times it asked its multiple-choice questions \
         (`--eval-repeats`, `choice.repeats` in result.json; 3 by default); the (all runs) columns are \
         the undivided cost of every run. A game that also answered questions asked once (factual, \
         inferential, MIRAGE's judge) cannot be split into runs: its per-process cells are —. The last \
         rows sum each method's per-script means over scripts, #Tokens included, as the paper's \
         Overall row does. USD is \
         priced from the pricing table the games ran with (the simulated model is free). Cacheable \
         prompt % is the mean per game of the share of prompt tokens a provider's prefix cache could \
         serve (prefixes shared with an earlier call of the model in the run, from 1,024 tokens in \
         128-token steps: OpenAI's rule); — for games recorded before it was measured."
    );
    let scripts: BTreeSet<&str> = arms.iter().map(|a| a.script_label.as_str()).collect();
    let multi_script = scripts.len() > 1;
    // Per condition: #Tokens, then the nine cost cells.
    let mut totals: BTreeMap<usize, [Option<f64>; 10]> = BTreeMap::new();
    for arm in arms {
        let c = &g.conditions[arm.condition];
        let rs: Vec<&GameResult> = g.results(&arm.games).collect();
        // USD, tokens and calls of one phase, each game's divided by `runs` (`None`: cannot be).
        let phase = |f: fn(&GameResult) -> &crate::llm::Usage,
                     runs: fn(&GameResult) -> Option<u32>|
         -> [Option<f64>; 3] {
            if rs.iter().all(|r| f(r).calls == 0) {
                return [None; 3];
            }
            let m = |v: fn(&crate::llm::Usage) -> f64| {
                let per_run: Option<Vec<f64>> = rs
                    .iter()
                    .map(|r| Some(v(f(r)) / f64::from(runs(r)?)))
                    .collect();
                stats::mean(&per_run?)
            };
            [
                m(|u| u.cost_usd),
                m(|u| (u.prompt_tokens + u.completion_tokens) as f64),
                m(|u| u.calls as f64),
            ]
        };
        let whole = |_: &GameResult| Some(1);
        let play = phase(|r| &r.usage_by_phase.gameplay, whole);
        let eval_one = phase(|r| &r.usage_by_phase.evaluation, evaluation_runs);
        let eval_all = phase(|r| &r.usage_by_phase.evaluation, whole);
        let length = lengths.tokens_per_character(arm);
        let values: Vec<Option<f64>> = play
            .iter()
            .chain(eval_one.iter())
            .chain(eval_all.iter())
            .copied()
            .collect();
        let total = totals.entry(arm.condition).or_insert([Some(0.0); 10]);
        for (acc, v) in total
            .iter_mut()
            .zip(std::iter::once(&length).chain(&values))
        {
            *acc = match (*acc, v) {
                (Some(a), Some(v)) => Some(a + v),
                _ => None,
            };
        }
        let mut cells = vec![
            Cell::Text(arm.script_label.clone()),
            Cell::Number(length),
            Cell::Text(c.method()),
            Cell::Number(Some(arm.games.len() as f64)),
        ];
        cells.extend(values.into_iter().map(Cell::Number));
        cells.push(Cell::Number(cacheable_percent(&rs)));
        t.push(cells, false);
    }
    if multi_script {
        for (ci, total) in totals {
            let c = &g.conditions[ci];
            let [length, costs @ ..] = total;
            let mut cells = vec![
                Cell::Text("All scripts (sum)".into()),
                Cell::Number(length),
                Cell::Text(c.method()),
                Cell::Number(Some(c.games.len() as f64)),
            ];
            cells.extend(costs.into_iter().map(Cell::Number));
            // A share does not add up over scripts.
            cells.push(Cell::Number(None));
            t.push(cells, true);
        }
    }
    Some(t)
}

/// How many evaluation processes a game's evaluation usage holds: the times it asked its
/// multiple-choice questions (`choice.repeats`, 0 in results from before repeats, read as 1), when they
/// were all it was asked. A game that also answered what is asked once (factual or inferential
/// questions, MIRAGE's judge) holds one process's worth of those beside several of the choices, which
/// the result does not split: `None`. A game that repeated nothing is one process.
fn evaluation_runs(r: &GameResult) -> Option<u32> {
    let repeats = r.choice.as_ref().map_or(1, |c| c.repeats.max(1));
    let asked_once = r.factual.counts.values().any(|&n| n > 0)
        || r.inferential_accuracy.is_some()
        || r.mirage_scores.is_some();
    match (repeats, asked_once) {
        (1, _) => Some(1),
        (_, true) => None,
        (n, false) => Some(n),
    }
}

/// The mean cacheable share of the games' prompts, in percent; `None` when no game recorded it.
fn cacheable_percent(rs: &[&GameResult]) -> Option<f64> {
    let shares: Vec<f64> = rs
        .iter()
        .filter_map(|r| r.usage.cacheable_share)
        .map(|s| s * 100.0)
        .collect();
    stats::mean(&shares)
}

/// MIRAGE Table 2 per condition, pooled over scripts as the paper pools its per-script Table 11: every
/// column the mean over scripts of the script's mean per game, CIC the clues investigated over the
/// clues available of all scripts. The MIRAGE protocol's games only (no other protocol records
/// Victory or investigations). The paper's rows follow sleuth's ([`super::mirage`]).
pub fn mirage_table2(
    g: &Grouping,
    boot: &Bootstrap,
    clues: &BTreeMap<usize, Timeline>,
) -> Option<Table> {
    let rows: Vec<(String, &ConditionInfo)> = g
        .conditions
        .iter()
        .filter(|c| c.key.protocol == Protocol::Mirage.as_str())
        .map(|c| (c.method(), c))
        .collect();
    let mut t = mirage_summary(
        g,
        boot,
        clues,
        ("mirage_table2", "MIRAGE Table 2 — results per simulation"),
        &rows,
    )?;
    super::mirage::append_summaries(
        &mut t,
        &super::mirage::published::TABLE2,
        rows.iter().map(|(_, c)| c.key.model.as_str()),
    );
    t.note.push(' ');
    t.note
        .push_str(&super::mirage::published_note("MIRAGE Table 2"));
    Some(t)
}

/// Table 2's columns for the given conditions, each row labelled as given: Table 2 itself, and
/// Tables 9 and 10 (the conditions without and with forced exposure).
pub fn mirage_summary(
    g: &Grouping,
    boot: &Bootstrap,
    clues: &BTreeMap<usize, Timeline>,
    (id, title): (&'static str, &str),
    rows: &[(String, &ConditionInfo)],
) -> Option<Table> {
    if rows.is_empty() {
        return None;
    }
    let pct = Kind::MeanCi(2);
    let mut t = Table::new(
        id,
        title,
        vec![
            Column::new("Model", "model", Kind::Text),
            Column::new("Scripts", "scripts", Kind::Number(0)),
            Column::new("Games", "games", Kind::Number(0)),
            Column::new("Env tokens", "env_tokens", Kind::Number(0)),
            Column::new("Envs", "envs", Kind::Number(0)),
            Column::new("User tokens", "user_tokens", Kind::Number(0)),
            Column::new("Users", "users", Kind::Number(0)),
            Column::new("Victory", "victory", pct),
            Column::new("TII (suspicion share)", "tii_suspicion_share", pct),
            Column::new("CIC", "cic", pct),
            Column::new("CIC key", "cic_key", pct),
            Column::new("ICI", "ici", pct),
            Column::new("SCI", "sci", pct),
            Column::new("Parse failures", "parse_failures", Kind::Number(1)),
        ],
    );
    t.note = format!(
        "Games played under the mirage protocol. Pooled over scripts as MIRAGE pools its per-script \
         results (Table 11 → Table 2): each value is the mean over scripts of the script's mean per \
         game, so a script played in more games does not weigh more; CIC and CIC key pool the counts \
         (clues investigated by all characters, summed over scripts / clues available, summed over \
         scripts). Scores ×100 as in the paper, with {} bootstrap intervals (scripts, then each \
         script's games, resampled). Env tokens / Envs: gameplay prompt tokens and calls; User tokens / \
         Users: gameplay completion tokens and calls (sleuth does not split environment requests from \
         player completions, so Envs = Users). Victory: reciprocal rank of the culprit in the vote \
         (MRR). TII: the suspicion share, suspicion / (suspicion + trust) the others gave a character, \
         averaged over characters — the convention of MIRAGE's published numbers and reference code \
         (the paper's Eq. 1 prints the trust share, 1 − this); higher means more suspected. CIC key: \
         key clues, from the transcript. ICI and SCI (judge scores, 0-100) as the games recorded them; \
         — where no game did. Parse failures: replies that could not be parsed, over gameplay and \
         evaluation.",
        level_text(boot.level)
    );
    for (label, c) in rows {
        let arms: Vec<&Arm> = c.arms.iter().map(|&ai| &g.arms[ai]).collect();
        // Per script (arm), the values its games measured.
        let per_script = |f: &dyn Fn(usize) -> Option<f64>| -> Vec<Vec<f64>> {
            arms.iter()
                .map(|a| a.games.iter().filter_map(|&gi| f(gi)).collect())
                .collect()
        };
        let result = |gi: usize| &g.games[gi].result;
        let number = |f: &dyn Fn(&GameResult) -> f64| {
            stats::mean_over_groups(&unweighted(&per_script(&|gi| Some(f(result(gi))))))
        };
        let interval = |f: &dyn Fn(&GameResult) -> Option<f64>, scale: f64| {
            boot.over_scripts(&unweighted(&per_script(&|gi| {
                f(result(gi)).map(|x| x * scale)
            })))
        };
        // CIC pools counts: each script weighs by its clues, so the weighted mean of the games'
        // CIC is (mean clues investigated, summed over scripts) / (clues, summed over scripts).
        let pooled = |key_only: bool| {
            let found = per_script(&|gi| {
                let m = result(gi).mirage.as_ref()?;
                if key_only {
                    // From the transcript's clue events: result.json does not say which were key.
                    formulas::cic(clues.get(&gi)?.total(true), m.key_clues_available)
                } else {
                    m.cic()
                }
                .map(|x| x * 100.0)
            });
            let available = per_script(&|gi| {
                let m = result(gi).mirage.as_ref()?;
                let n = if key_only {
                    clues.get(&gi).map(|_| m.key_clues_available)?
                } else {
                    m.clues_available
                };
                Some(n as f64)
            });
            let groups: Vec<Group> = found
                .iter()
                .zip(&available)
                .map(|(values, n)| Group {
                    values,
                    weight: stats::mean(n).unwrap_or(0.0),
                })
                .collect();
            boot.over_scripts(&groups)
        };
        let judged = |f: fn(&MirageScores) -> Option<f64>| {
            interval(&|r: &GameResult| f(r.mirage_scores.as_ref()?), 1.0)
        };
        let calls = number(&|r| r.usage_by_phase.gameplay.calls as f64);
        t.push(
            vec![
                Cell::Text(label.clone()),
                Cell::Number(Some(arms.len() as f64)),
                Cell::Number(Some(c.games.len() as f64)),
                Cell::Number(number(&|r| r.usage_by_phase.gameplay.prompt_tokens as f64)),
                Cell::Number(calls),
                Cell::Number(number(&|r| {
                    r.usage_by_phase.gameplay.completion_tokens as f64
                })),
                Cell::Number(calls),
                Cell::MeanCi(interval(&|r| Metric::Victory.of(r), 100.0)),
                Cell::MeanCi(interval(
                    &|r| r.mirage.as_ref()?.tii_suspicion_share(),
                    100.0,
                )),
                Cell::MeanCi(pooled(false)),
                Cell::MeanCi(pooled(true)),
                Cell::MeanCi(judged(|m| m.ici)),
                Cell::MeanCi(judged(|m| m.sci)),
                Cell::Number(number(&|r| r.usage.parse_failures as f64)),
            ],
            false,
        );
    }
    Some(t)
}

/// The headline metrics compared between conditions of a protocol.
fn paired_metrics(protocol: &str) -> &'static [Metric] {
    match protocol {
        "thinkthrice" => &[Metric::Others, Metric::CivilianWin, Metric::Detection],
        "wellplay" => &[Metric::ChoiceScore, Metric::CivilianWin, Metric::Detection],
        "mirage" => &[Metric::Victory, Metric::Cic],
        _ => &[Metric::CivilianWin, Metric::Detection],
    }
}

/// Every two conditions of the same protocol compared on the games they share: same script (same
/// version: title and content digest), same seed.
/// A is the later condition in report order, B the earlier (a reference such as PP or No MR comes
/// first), so Δ = A − B reads as "what A adds".
pub fn paired(g: &Grouping, boot: &Bootstrap) -> Option<Table> {
    let mut t = Table::new(
        "paired",
        "Paired comparisons — same scripts, same seeds",
        vec![
            Column::new("Protocol", "protocol", Kind::Text),
            Column::new("Metric", "metric", Kind::Text),
            Column::new("A", "a", Kind::Text),
            Column::new("B", "b", Kind::Text),
            Column::new("Pairs", "pairs", Kind::Number(0)),
            Column::new("Δ = A − B", "difference", Kind::MeanCi(RATE)),
        ],
    );
    t.note = format!(
        "Games of A and B are paired when they share script (the same version) and seed; Δ is the mean of the per-pair \
         differences with its {} paired bootstrap interval (whole pairs resampled). An interval that \
         excludes 0 says the two conditions differ at that level; pairing cancels what the two games \
         share (the script's difficulty, the seed's draws), so it is narrower than comparing the \
         arms' own intervals.",
        level_text(boot.level)
    );
    // (script, version, seed) → first game of each condition.
    type Key = (String, Option<String>, u64);
    let index: Vec<BTreeMap<Key, usize>> = g
        .conditions
        .iter()
        .map(|c| {
            let mut m = BTreeMap::new();
            for &gi in &c.games {
                let r = &g.games[gi].result;
                let version = script_digest(&g.games[gi]).map(str::to_string);
                m.entry((r.script.clone(), version, r.seed)).or_insert(gi);
            }
            m
        })
        .collect();
    for b in 0..g.conditions.len() {
        for a in b + 1..g.conditions.len() {
            let (ca, cb) = (&g.conditions[a], &g.conditions[b]);
            if ca.key.protocol != cb.key.protocol {
                continue;
            }
            let shared: Vec<(usize, usize)> = index[a]
                .iter()
                .filter_map(|(k, &ga)| index[b].get(k).map(|&gb| (ga, gb)))
                .collect();
            if shared.is_empty() {
                continue;
            }
            for &m in paired_metrics(&ca.key.protocol) {
                let (xa, xb): (Vec<f64>, Vec<f64>) = shared
                    .iter()
                    .filter_map(|&(ga, gb)| {
                        Some((m.of(&g.games[ga].result)?, m.of(&g.games[gb].result)?))
                    })
                    .unzip();
                if xa.is_empty() {
                    continue;
                }
                let d =
                    stats::paired_difference(&xa, &xb, boot.resamples, boot.level, boot.seed).ok();
                t.push(
                    vec![
                        Cell::Text(ca.key.protocol.clone()),
                        Cell::Text(m.name().into()),
                        Cell::Text(ca.method()),
                        Cell::Text(cb.method()),
                        Cell::Number(Some(xa.len() as f64)),
                        Cell::MeanCi(d),
                    ],
                    false,
                );
            }
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// Per-script values as groups of weight 1, for a plain mean over scripts.
fn unweighted(per_script: &[Vec<f64>]) -> Vec<Group<'_>> {
    per_script.iter().map(|v| Group::unweighted(v)).collect()
}

/// "95%" for 0.95.
pub fn level_text(level: f64) -> String {
    let pct = level * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("{pct:.0}%")
    } else {
        format!("{pct}%")
    }
}

/// CSV field stem of a metric.
fn field(m: Metric) -> &'static str {
    match m {
        Metric::CivilianWin => "civilian_win_rate",
        Metric::Voting => "voting",
        Metric::Detection => "murderer_detection",
        Metric::Own => "own",
        Metric::Cq => "cq",
        Metric::Mq => "mq",
        Metric::Others => "others",
        Metric::Objective => "objective",
        Metric::Reasoning => "reasoning",
        Metric::Relations => "relations",
        Metric::ChoiceScore => "overall",
        Metric::Victory => "victory",
        Metric::Cic => "cic",
    }
}
