//! The papers' aggregate rows recomputed from their own detail tables with the functions the report
//! pools with, to the printed precision. The numbers are the report's own published data:
//! `report::mirage::published` and `report::player::published_scripts`, which the report prints
//! beside its rows. `docs/metrics.md` ("Pooling across scripts") says what these tests establish and
//! which printed cells no reading reproduces.

use crate::mirage::published as mirage;
use crate::player::published_scripts::{ScriptRows, A3_SCRIPTS};
use crate::Bootstrap;
use sleuth_game::eval::formulas;
use sleuth_game::eval::stats::{self, Group, RunSummary};

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

/// PLAYER* Table A3's twelve Chinese scripts, as the report prints them
/// (`report::player::published_scripts`).
const A3: &[ScriptRows] = &A3_SCRIPTS;

/// Table A3's #QA of Objective, Reasoning, Relations per script.
fn questions() -> impl Iterator<Item = [usize; 3]> {
    A3.iter().map(|s| s.questions)
}

/// Table A3's (mean, std) per script of one category (0 Objective … 3 Overall) and method.
fn column(category: usize, method: usize) -> Vec<(f64, f64)> {
    A3.iter().map(|s| s.scores[category][method]).collect()
}

/// PLAYER* evaluates every game three times (§4, Table A3's "mean ± std of 3 runs").
fn runs((mean, std): (f64, f64)) -> RunSummary {
    RunSummary { mean, std, runs: 3 }
}

/// A script's possible points: 10, 5 and 2 per Objective, Reasoning and Relations question.
fn possible(q: [usize; 3]) -> f64 {
    (10 * q[0] + 5 * q[1] + 2 * q[2]) as f64
}

/// The paper's Overall Voting row is the n − 1 spread of its scripts' values; the report prints
/// every spread of Table A3 ÷ n (`tables::choice` says why), which for the PP column is .112.
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
        let xs: Vec<f64> = A3
            .iter()
            .map(|s| s.voting.expect("Table A3 prints Voting")[method].0)
            .collect();
        let (m, s) = formulas::wellplay_voting(&xs).expect("voting");
        assert!(
            prints_as(m, 3, mean) && prints_as(s, 3, std),
            "method {method}: {m} ± {s}"
        );
        if method == 0 {
            let (m, s) = crate::metrics::mean_std_population(&xs).expect("voting");
            assert!(prints_as(m, 3, mean) && prints_as(s, 3, 0.112), "{m} ± {s}");
        }
    }
}

/// Table A5's per-script rows, as typed in, add up to its Overall rows: #Tokens exactly, every USD
/// cell within the rounding of twelve printed values.
#[test]
fn player_a5_scripts_sum_to_its_overall_rows() {
    use crate::player::published::{A5_OVERALL, A5_TOKENS, METHODS};
    use crate::player::published_scripts::A5_SCRIPTS;
    let tokens: f64 = A5_SCRIPTS.iter().map(|s| s.tokens).sum();
    assert_eq!(tokens, A5_TOKENS);
    for (m, (gameplay, evaluation)) in A5_OVERALL.into_iter().enumerate() {
        let play: Option<f64> = A5_SCRIPTS.iter().map(|s| s.gameplay[m]).sum();
        let eval: f64 = A5_SCRIPTS.iter().map(|s| s.evaluation[m]).sum();
        let near = |a: f64, b: f64| (a - b).abs() <= 12.0 * 0.0005 + 1e-9;
        match (play, gameplay) {
            (Some(a), Some(b)) => assert!(near(a, b), "{}: gameplay {a} vs {b}", METHODS[m]),
            (None, None) => {}
            other => panic!("{}: {other:?}", METHODS[m]),
        }
        assert!(
            near(eval, evaluation),
            "{}: evaluation {eval} vs {evaluation}",
            METHODS[m]
        );
    }
}

#[test]
fn player_overall_row_is_b3_weighted_by_possible_points_over_the_runs() {
    // Table A3, "Overall" row of the Overall block: PP .386 ± .057, OP .484 ± .072.
    for (method, (mean, std)) in [(0.386, 0.057), (0.484, 0.072)].into_iter().enumerate() {
        let overall = column(3, method);
        let scripts: Vec<(RunSummary, f64)> = overall
            .iter()
            .zip(questions())
            .map(|(&x, q)| (runs(x), possible(q)))
            .collect();
        let (m, s) = formulas::wellplay_overall(&scripts).expect("overall");
        assert!(
            prints_as(m, 3, mean) && prints_as(s, 3, std),
            "method {method}: {m} ± {s}"
        );
        // B.3 over the per-script means alone gives the same mean and a narrower spread (.053 and
        // .067), and weighting by question count instead of points misses the mean (.389, .485).
        let means: Vec<(f64, f64)> = overall
            .iter()
            .zip(questions())
            .map(|(x, q)| (x.0, possible(q)))
            .collect();
        let (_, narrow) = stats::weighted_mean_std(&means).expect("b3");
        assert!(!prints_as(narrow, 3, std), "method {method}: {narrow}");
        let by_count: Vec<(RunSummary, f64)> = overall
            .iter()
            .zip(questions())
            .map(|(&x, q)| (runs(x), q.iter().sum::<usize>() as f64))
            .collect();
        let (wrong, _) = formulas::wellplay_overall(&by_count).expect("by count");
        assert!(!prints_as(wrong, 3, mean), "method {method}: {wrong}");
    }
}

#[test]
fn player_category_rows_are_b3_weighted_by_question_count() {
    // The cells of Table A3's Objective and Reasoning rows that the per-script rows reproduce (the
    // others do not under any weighting tried; docs/metrics.md lists them).
    let category = |c: usize, method: usize| {
        let scripts: Vec<(RunSummary, usize)> = column(c, method)
            .into_iter()
            .zip(questions())
            .map(|(x, q)| (runs(x), q[c]))
            .collect();
        formulas::wellplay_category(&scripts).expect("category")
    };
    let (m, _) = category(0, 0);
    assert!(prints_as(m, 3, 0.256), "PP Objective {m}");
    let (_, s) = category(0, 1);
    assert!(prints_as(s, 3, 0.184), "OP Objective std {s}");
    let (m, _) = category(1, 0);
    assert!(prints_as(m, 3, 0.417), "PP Reasoning {m}");
    let (m, _) = category(1, 1);
    assert!(prints_as(m, 3, 0.508), "OP Reasoning {m}");
    // Werewolf's Objective means alone (its spreads are not used here).
    let werewolf: Vec<(RunSummary, usize)> = column(0, 2)
        .into_iter()
        .zip(questions())
        .map(|((x, _), q)| (runs((x, 0.0)), q[0]))
        .collect();
    let (m, _) = formulas::wellplay_category(&werewolf).expect("werewolf");
    assert!(prints_as(m, 3, 0.293), "Werewolf Objective {m}");
}
