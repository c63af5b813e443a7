//! The papers' aggregate rows recomputed from their own detail tables with the functions the report
//! pools with, to the printed precision. MIRAGE's numbers are the report's own published data
//! (`report::mirage::published`, which the report prints beside its rows); PLAYER*'s few are written
//! here, with the table they come from; `docs/metrics.md` ("Pooling across scripts") says what these tests
//! establish and which printed cells no reading reproduces.

use crate::eval::formulas;
use crate::eval::stats::{self, Group, RunSummary};
use crate::report::mirage::published as mirage;
use crate::report::Bootstrap;

/// `x` printed with `decimals` decimals is `printed`.
fn prints_as(x: f64, decimals: i32, printed: f64) -> bool {
    let scale = 10f64.powi(decimals);
    (x * scale).round() == (printed * scale).round()
}

/// One game per script, weight 1: the report's mean over scripts of the scripts' values.
fn over_scripts(per_script: &[Option<f64>]) -> f64 {
    let values: Vec<Vec<f64>> = per_script
        .iter()
        .map(|x| x.iter().copied().collect())
        .collect();
    let groups: Vec<Group> = values.iter().map(|v| Group::unweighted(v)).collect();
    let mean = stats::mean_over_groups(&groups).expect("some script measured it");
    // The interval the report prints is centred on the same estimate.
    let iv = Bootstrap::default()
        .over_scripts(&groups)
        .expect("interval");
    assert_eq!(iv.estimate, mean);
    mean
}

/// MIRAGE Table 1, "#Clues", in its order (SOC … MUO): the published data the report prints.
fn mirage_clues() -> Vec<usize> {
    mirage::TABLE1.iter().map(|r| r.clues).collect()
}

/// A row of MIRAGE Table 11 as the tests below read it: Env tokens, Envs, User tokens, Users, Victory,
/// TII ("/" for MOC, whose two characters got no TII), CIC, ICI, SCI.
type Row = (f64, f64, f64, f64, f64, Option<f64>, f64, f64, f64);

/// MIRAGE Table 11's rows of one model (its place in `TABLE11_MODELS`), scripts in Table 1 order.
fn table11(model: usize) -> Vec<Row> {
    mirage::TABLE11
        .iter()
        .map(|script| {
            let s = script[model];
            (
                s.env_tokens,
                s.envs,
                s.user_tokens,
                s.users,
                s.victory,
                s.tii,
                s.cic,
                s.ici,
                s.sci,
            )
        })
        .collect()
}

/// MIRAGE Table 2's row of a model: Env tokens, Envs, User tokens, Users, Victory, TII, CIC, ICI, SCI.
fn table2(model: &str) -> [f64; 9] {
    let (_, s) = mirage::TABLE2
        .iter()
        .find(|(m, _)| *m == model)
        .expect("a model of Table 2");
    [
        s.env_tokens,
        s.envs,
        s.user_tokens,
        s.users,
        s.victory,
        s.tii.expect("Table 2 prints every TII"),
        s.cic,
        s.ici,
        s.sci,
    ]
}

#[test]
fn mirage_table2_is_the_mean_over_scripts_of_table11() {
    // MIRAGE Table 2: Env tokens, Envs, User tokens, Users, Victory, TII, CIC, ICI, SCI.
    let published = [
        ("GPT-3.5", table11(0), table2("GPT-3.5")),
        ("GPT-4", table11(1), table2("GPT-4")),
    ];
    for (model, rows, table2) in &published {
        let column = |f: fn(&Row) -> Option<f64>| rows.iter().map(f).collect::<Vec<_>>();
        let counts = [
            column(|r| Some(r.0)),
            column(|r| Some(r.1)),
            column(|r| Some(r.2)),
            column(|r| Some(r.3)),
        ];
        for (i, c) in counts.iter().enumerate() {
            assert!(
                prints_as(over_scripts(c), 0, table2[i]),
                "{model} column {i}"
            );
        }
        // Victory, TII, ICI, SCI: the inputs are rounded to 0.01, so their mean may be off by up to
        // 0.005 before its own rounding: the printed value is within 0.01.
        for (f, expected, what) in [
            (column(|r| Some(r.4)), table2[4], "Victory"),
            (
                column(|r| r.5),
                table2[5],
                "TII (MOC has none: a mean of 7 scripts)",
            ),
            (column(|r| Some(r.7)), table2[7], "ICI"),
            (column(|r| Some(r.8)), table2[8], "SCI"),
        ] {
            let x = over_scripts(&f);
            assert!((x - expected).abs() <= 0.01 + 1e-9, "{model} {what}: {x}");
        }
        // A mean over games would be the same here: the paper played each script once.
    }
}

#[test]
fn mirage_cic_pools_the_clue_counts_of_all_scripts() {
    // MIRAGE Table 11's CIC column per model (scripts in Table 1 order) and Table 2's CIC.
    let published: Vec<(&str, Vec<f64>, f64)> = mirage::TABLE11_MODELS
        .iter()
        .enumerate()
        .map(|(i, &model)| {
            let cic = table11(i).iter().map(|r| r.6).collect();
            (model, cic, table2(model)[6])
        })
        .collect();
    let clues = mirage_clues();
    let total: usize = clues.iter().sum();
    assert_eq!(total, 284);
    assert_eq!(total, mirage::all_clues());
    for (model, per_script, table2) in published {
        // Every per-script entry is a whole number of clues over the dataset's 284: the script's
        // investigations, not its own share (MOC's 5.99 is all 17 of its clues).
        let found: Vec<usize> = per_script
            .iter()
            .map(|&x: &f64| {
                let k = x * total as f64 / 100.0;
                assert!((k - k.round()).abs() < 0.015, "{model}: {x} is not k/284");
                k.round() as usize
            })
            .collect();
        assert!(found.iter().zip(&clues).all(|(&k, &n)| k <= n));
        // The report's CIC: each script's CIC weighted by its clues = Σ found / Σ clues.
        let cic: Vec<Vec<f64>> = found
            .iter()
            .zip(&clues)
            .map(|(&k, &n)| vec![100.0 * k as f64 / n as f64])
            .collect();
        let groups: Vec<Group> = cic
            .iter()
            .zip(&clues)
            .map(|(values, &n)| Group {
                values,
                weight: n as f64,
            })
            .collect();
        let pooled = Bootstrap::default()
            .over_scripts(&groups)
            .expect("CIC")
            .estimate;
        assert!(prints_as(pooled, 2, table2), "{model}: {pooled}");
        // The unweighted mean of the scripts' own CIC — another reading — is far off.
        let plain: Vec<Group> = cic.iter().map(|v| Group::unweighted(v)).collect();
        let mean_of_shares = stats::mean_over_groups(&plain).expect("mean");
        assert!(
            (mean_of_shares - table2).abs() > 1.0,
            "{model}: {mean_of_shares}"
        );
    }
}

#[test]
fn mirage_script_tii_is_the_mean_over_characters() {
    // MIRAGE Table 12 (SOC, "Bride in Filial Dress"), TII of the ten characters, and Table 11's SOC
    // TII: the per-script value averages the characters, as a game's does.
    for model in [0, 1] {
        let characters: Vec<f64> = mirage::CHARACTERS[0]
            .iter()
            .filter_map(|c| c.rows[model].tii)
            .collect();
        assert_eq!(characters.len(), 10);
        let soc = mirage::TABLE11[0][model].tii.expect("SOC TII");
        let m = stats::mean(&characters).expect("mean");
        assert!((m - soc).abs() <= 0.01, "{m}");
    }
}

/// PLAYER* Table A3's twelve Chinese scripts in its order (Death Wears White, Ghost Revenge, Danshui
/// Villa, Unfinished Love, Cruise Incident, Sin, Deadly Fountain, Unbelievable Incident, Desperate
/// Sunshine, Riverside Inn, Solitary Boat Firefly, Manna): #QA of Objective, Reasoning, Relations.
const QUESTIONS: [[usize; 3]; 12] = [
    [10, 102, 72],
    [19, 152, 69],
    [12, 128, 63],
    [12, 61, 72],
    [4, 24, 30],
    [3, 20, 21],
    [3, 21, 12],
    [4, 24, 15],
    [3, 18, 36],
    [3, 18, 18],
    [20, 109, 69],
    [24, 123, 88],
];

/// Table A3, Voting per script: PP, OP, Werewolf, O-CoT, ThinkThrice, PLAYER*.
const VOTING: [[f64; 6]; 12] = [
    [0.000, 0.333, 0.000, 0.000, 0.000, 0.000],
    [0.222, 0.333, 0.222, 0.111, 0.333, 0.333],
    [0.167, 0.000, 0.000, 0.000, 0.000, 0.000],
    [0.000, 0.000, 0.000, 0.000, 0.000, 0.000],
    [0.000, 0.000, 0.667, 0.000, 0.333, 0.333],
    [0.000, 0.333, 0.000, 0.000, 0.000, 0.333],
    [0.000, 0.667, 0.000, 0.000, 0.000, 0.000],
    [0.000, 0.000, 0.000, 0.000, 0.000, 0.000],
    [0.000, 0.667, 0.667, 0.000, 0.667, 1.000],
    [0.333, 1.000, 0.333, 0.000, 1.000, 0.333],
    [0.167, 0.583, 0.000, 0.250, 0.167, 0.500],
    [0.000, 0.000, 0.222, 0.333, 0.444, 0.556],
];

/// Table A3, per script, mean ± std over three evaluation runs of PP and OP: Objective.
const OBJECTIVE: [[(f64, f64); 2]; 12] = [
    [(0.233, 0.058), (0.467, 0.116)],
    [(0.333, 0.030), (0.334, 0.132)],
    [(0.389, 0.048), (0.222, 0.127)],
    [(0.167, 0.000), (0.167, 0.083)],
    [(0.167, 0.289), (0.250, 0.250)],
    [(0.000, 0.000), (0.333, 0.334)],
    [(0.000, 0.000), (0.556, 0.193)],
    [(0.083, 0.144), (0.083, 0.144)],
    [(0.333, 0.000), (0.556, 0.193)],
    [(0.444, 0.193), (0.889, 0.192)],
    [(0.267, 0.104), (0.500, 0.050)],
    [(0.250, 0.042), (0.389, 0.086)],
];

/// Table A3, Reasoning, PP and OP. (Solitary Boat Firefly's PP .318 is a score, not 1/π.)
#[allow(clippy::approx_constant)]
const REASONING: [[(f64, f64); 2]; 12] = [
    [(0.454, 0.012), (0.503, 0.015)],
    [(0.390, 0.020), (0.533, 0.030)],
    [(0.315, 0.020), (0.422, 0.016)],
    [(0.552, 0.025), (0.563, 0.025)],
    [(0.653, 0.064), (0.472, 0.064)],
    [(0.483, 0.058), (0.567, 0.029)],
    [(0.413, 0.153), (0.667, 0.126)],
    [(0.389, 0.105), (0.528, 0.064)],
    [(0.556, 0.056), (0.778, 0.096)],
    [(0.519, 0.032), (0.667, 0.056)],
    [(0.318, 0.014), (0.569, 0.018)],
    [(0.458, 0.005), (0.393, 0.040)],
];

/// Table A3, Overall score, PP and OP.
const OVERALL: [[(f64, f64); 2]; 12] = [
    [(0.420, 0.007), (0.480, 0.011)],
    [(0.362, 0.016), (0.483, 0.020)],
    [(0.326, 0.014), (0.403, 0.028)],
    [(0.457, 0.017), (0.475, 0.033)],
    [(0.459, 0.012), (0.415, 0.079)],
    [(0.397, 0.029), (0.531, 0.053)],
    [(0.319, 0.097), (0.604, 0.104)],
    [(0.330, 0.081), (0.481, 0.020)],
    [(0.514, 0.013), (0.680, 0.047)],
    [(0.479, 0.032), (0.671, 0.036)],
    [(0.332, 0.015), (0.544, 0.024)],
    [(0.408, 0.017), (0.434, 0.002)],
];

/// Table A3, Werewolf's Objective means.
const WEREWOLF_OBJECTIVE: [f64; 12] = [
    0.333, 0.368, 0.167, 0.167, 0.500, 0.111, 0.000, 0.333, 0.556, 0.444, 0.183, 0.403,
];

/// PLAYER* evaluates every game three times (§4, Table A3's "mean ± std of 3 runs").
fn runs((mean, std): (f64, f64)) -> RunSummary {
    RunSummary { mean, std, runs: 3 }
}

/// A script's possible points: 10, 5 and 2 per Objective, Reasoning and Relations question.
fn possible(q: [usize; 3]) -> f64 {
    (10 * q[0] + 5 * q[1] + 2 * q[2]) as f64
}

#[test]
fn player_voting_row_is_the_unweighted_mean_and_sample_std_of_the_scripts() {
    // Table A3, "Overall Voting" row, all six methods.
    let published = [
        (0.074, 0.117),
        (0.326, 0.342),
        (0.176, 0.257),
        (0.058, 0.115),
        (0.245, 0.326),
        (0.282, 0.308),
    ];
    for (method, (mean, std)) in published.into_iter().enumerate() {
        let xs: Vec<f64> = VOTING.iter().map(|row| row[method]).collect();
        let (m, s) = formulas::wellplay_voting(&xs).expect("voting");
        assert!(
            prints_as(m, 3, mean) && prints_as(s, 3, std),
            "method {method}: {m} ± {s}"
        );
    }
}

#[test]
fn player_overall_row_is_b3_weighted_by_possible_points_over_the_runs() {
    // Table A3, "Overall" row of the Overall block: PP .386 ± .057, OP .484 ± .072.
    for (method, (mean, std)) in [(0.386, 0.057), (0.484, 0.072)].into_iter().enumerate() {
        let scripts: Vec<(RunSummary, f64)> = OVERALL
            .iter()
            .zip(QUESTIONS)
            .map(|(row, q)| (runs(row[method]), possible(q)))
            .collect();
        let (m, s) = formulas::wellplay_overall(&scripts).expect("overall");
        assert!(
            prints_as(m, 3, mean) && prints_as(s, 3, std),
            "method {method}: {m} ± {s}"
        );
        // B.3 over the per-script means alone gives the same mean and a narrower spread (.053 and
        // .067), and weighting by question count instead of points misses the mean (.389, .485).
        let means: Vec<(f64, f64)> = OVERALL
            .iter()
            .zip(QUESTIONS)
            .map(|(row, q)| (row[method].0, possible(q)))
            .collect();
        let (_, narrow) = stats::weighted_mean_std(&means).expect("b3");
        assert!(!prints_as(narrow, 3, std), "method {method}: {narrow}");
        let by_count: Vec<(RunSummary, f64)> = OVERALL
            .iter()
            .zip(QUESTIONS)
            .map(|(row, q)| (runs(row[method]), q.iter().sum::<usize>() as f64))
            .collect();
        let (wrong, _) = formulas::wellplay_overall(&by_count).expect("by count");
        assert!(!prints_as(wrong, 3, mean), "method {method}: {wrong}");
    }
}

#[test]
fn player_category_rows_are_b3_weighted_by_question_count() {
    // The cells of Table A3's Objective and Reasoning rows that the per-script rows reproduce (the
    // others do not under any weighting tried; docs/metrics.md lists them).
    let category = |rows: &[[(f64, f64); 2]; 12], method: usize, c: usize| {
        let scripts: Vec<(RunSummary, usize)> = rows
            .iter()
            .zip(QUESTIONS)
            .map(|(row, q)| (runs(row[method]), q[c]))
            .collect();
        formulas::wellplay_category(&scripts).expect("category")
    };
    let (m, _) = category(&OBJECTIVE, 0, 0);
    assert!(prints_as(m, 3, 0.256), "PP Objective {m}");
    let (_, s) = category(&OBJECTIVE, 1, 0);
    assert!(prints_as(s, 3, 0.184), "OP Objective std {s}");
    let (m, _) = category(&REASONING, 0, 1);
    assert!(prints_as(m, 3, 0.417), "PP Reasoning {m}");
    let (m, _) = category(&REASONING, 1, 1);
    assert!(prints_as(m, 3, 0.508), "OP Reasoning {m}");
    let werewolf: Vec<(RunSummary, usize)> = WEREWOLF_OBJECTIVE
        .iter()
        .zip(QUESTIONS)
        .map(|(&x, q)| (runs((x, 0.0)), q[0]))
        .collect();
    let (m, _) = formulas::wellplay_category(&werewolf).expect("werewolf");
    assert!(prints_as(m, 3, 0.293), "Werewolf Objective {m}");
}
