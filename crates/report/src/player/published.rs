//! PLAYER*'s published numbers, as data: the paper's own values typed in from Table A3's Overall block
//! (every method's weighted rows over the 12 scripts) and Table A6, so the report prints the paper's
//! rows beside sleuth's and a reader sees the reproduction gap at a glance. The paper ran
//! gpt-35-turbo-16k 0613 (Table A3) and the open models of Appendix C.4 (Table A6).

use super::super::table::{Cell, Table};

/// Table A3's methods, in the paper's column order, as sleuth names their frameworks.
pub const METHODS: [&str; 6] = ["PP", "OP", "Werewolf", "O-CoT", "ThinkThrice", "PLAYER*"];

/// Table A3, Overall block, per method ([`METHODS`] order): Voting, Objective, Reasoning, Relations
/// and Overall, each (mean, std) as printed.
pub const A3_OVERALL: [[(f64, f64); 5]; 6] = [
    [
        (0.074, 0.117),
        (0.256, 0.121),
        (0.417, 0.095),
        (0.411, 0.102),
        (0.386, 0.057),
    ],
    [
        (0.326, 0.342),
        (0.370, 0.184),
        (0.508, 0.094),
        (0.513, 0.110),
        (0.484, 0.072),
    ],
    [
        (0.176, 0.257),
        (0.293, 0.157),
        (0.437, 0.104),
        (0.466, 0.090),
        (0.415, 0.074),
    ],
    [
        (0.058, 0.115),
        (0.333, 0.140),
        (0.430, 0.077),
        (0.495, 0.133),
        (0.424, 0.067),
    ],
    [
        (0.245, 0.326),
        (0.328, 0.187),
        (0.449, 0.113),
        (0.444, 0.089),
        (0.426, 0.087),
    ],
    [
        (0.282, 0.308),
        (0.407, 0.227),
        (0.465, 0.106),
        (0.500, 0.109),
        (0.461, 0.086),
    ],
];

/// Table A3's question count of the Overall block (objective + reasoning + relations: 117 + 800 +
/// 565).
pub const A3_QUESTIONS: f64 = 1482.0;

/// Table A5's Overall rows per method ([`METHODS`] order): USD of one complete gameplay and of one
/// evaluation process, summed over the 12 scripts (`None`: PP and OP play no game).
pub const A5_OVERALL: [(Option<f64>, f64); 6] = [
    (None, 2.578),
    (None, 10.819),
    (Some(38.329), 5.813),
    (Some(46.162), 5.831),
    (Some(40.464), 5.789),
    (Some(33.702), 5.825),
];

/// Table A5's Overall #Tokens: the scripts' per-character lengths summed over the 12 scripts.
pub const A5_TOKENS: f64 = 47_906.0;

/// Table A6: PLAYER*'s overall score per open model on Solitary Boat Firefly.
pub const A6: [(&str, f64); 4] = [
    ("Llama2 70b", 0.312),
    ("Llama2 13b", 0.281),
    ("Llama2 7b", 0.267),
    ("gemma 7b", 0.273),
];

/// Appends Table A3's published Overall rows to `a3` (the WellPlay protocol's Table A3): the rows of
/// the methods the games played (by framework name), or all six when none of them played.
pub fn a3_rows(a3: &mut Table) {
    let Some(method_col) = a3.column("Method") else {
        return;
    };
    let played = played_methods(a3, method_col);
    let matches = |name: &str| played.iter().any(|m| m.split(' ').next() == Some(name));
    let any = METHODS.iter().any(|m| matches(m));
    for (name, values) in METHODS.iter().zip(A3_OVERALL) {
        if any && !matches(name) {
            continue;
        }
        let mut cells = vec![
            Cell::Text("All scripts (published)".into()),
            Cell::Text(format!("Published: {name}")),
            Cell::Number(None),
            Cell::Number(Some(A3_QUESTIONS)),
        ];
        cells.extend(values.iter().map(|&v| Cell::MeanStd(Some(v))));
        if cells.len() == a3.columns.len() {
            a3.push(cells, true);
        }
    }
    a3.note.push_str(
        " Rows \"Published: METHOD\": PLAYER* Table A3's Overall block as printed (gpt-35-turbo-16k, \
         12 Chinese scripts, 3 evaluation runs), for the methods played here (all six when none).",
    );
}

/// Appends Table A5's published Overall rows to `a5` (the WellPlay protocol's Table A5), for the
/// methods its games played (all six when none of them did): gameplay and per-evaluation-process USD
/// as printed; the paper gives no tokens or calls, so those cells are empty.
pub fn a5_rows(a5: &mut Table) {
    let Some(method_col) = a5.column("Method") else {
        return;
    };
    let played = played_methods(a5, method_col);
    let matches = |name: &str| played.iter().any(|m| m.split(' ').next() == Some(name));
    let any = METHODS.iter().any(|m| matches(m));
    for (name, (gameplay, evaluation)) in METHODS.iter().zip(A5_OVERALL) {
        if any && !matches(name) {
            continue;
        }
        let by_heading = |heading: &str| match heading {
            "Script" => Cell::Text("All scripts (published)".into()),
            "#Tokens" => Cell::Number(Some(A5_TOKENS)),
            "Method" => Cell::Text(format!("Published: {name}")),
            "Gameplay USD" => Cell::Number(gameplay),
            "Evaluation USD" => Cell::Number(Some(evaluation)),
            _ => Cell::Number(None),
        };
        let cells: Vec<Cell> = a5.columns.iter().map(|c| by_heading(&c.heading)).collect();
        a5.push(cells, true);
    }
    a5.note.push_str(
        " Rows \"Published: METHOD\": PLAYER* Table A5's Overall rows as printed (gpt-35-turbo-16k, \
         the 12 Chinese scripts summed: USD of one gameplay and one evaluation process; the paper \
         prints no tokens or calls), for the methods played here (all six when none).",
    );
}

/// The Method cells of `t`'s rows.
fn played_methods(t: &Table, method_col: usize) -> Vec<String> {
    t.rows
        .iter()
        .filter_map(|r| match r.cells.get(method_col) {
            Some(Cell::Text(m)) => Some(m.clone()),
            _ => None,
        })
        .collect()
}

/// Appends Table A6's published rows to `a6`.
pub fn a6_rows(a6: &mut Table) {
    for (model, score) in A6 {
        let cells = vec![
            Cell::Text("Published: PLAYER*".into()),
            Cell::Text(model.into()),
            Cell::Number(Some(1.0)),
            Cell::Number(None),
            Cell::MeanStd(Some((score, 0.0))),
        ];
        if cells.len() == a6.columns.len() {
            a6.push(cells, true);
        }
    }
    a6.note.push_str(
        " Rows \"Published: PLAYER*\": the paper's Table A6 (one script, Solitary Boat Firefly; no \
         spread printed, shown as ± 0.000).",
    );
}
