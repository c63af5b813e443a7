//! Unit tests of the WellPlay importer and its repair rules, on small synthetic folders.

use super::truth::parse_truth;
use super::*;
use crate::{Category, ChoiceRule};

#[test]
fn names_that_would_leave_the_folder_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::create_dir_all(d.join("json")).unwrap();
    std::fs::write(
        d.join("json/script_info.json"),
        r#"{"script_name": "T", "character_name": ["A", "../outside"], "acts_num": 1}"#,
    )
    .unwrap();
    let err = import(d).unwrap_err().to_string();
    assert!(err.contains("character_name[1]"), "{err}");
}

#[test]
fn truth_letters_are_normalised() {
    let t = |s: &str| parse_truth(s).map(|v| v.join(""));
    assert_eq!(t("a").as_deref(), Some("A"));
    assert_eq!(t("AB").as_deref(), Some("AB"));
    assert_eq!(t("a,b").as_deref(), Some("AB"));
    assert_eq!(t("b c").as_deref(), Some("BC"));
    assert_eq!(t(" c, a ;b ").as_deref(), Some("ABC"));
    assert_eq!(t("aa").as_deref(), Some("A"));
    assert_eq!(t(""), None);
    assert_eq!(t(" , "), None);
    assert_eq!(t("1"), None);
    assert_eq!(parse_truth("a,b").unwrap(), vec!["A", "B"]);
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A minimal synthetic folder (no dataset text) with names containing parentheses.
fn synthetic() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(
        d,
        "json/script_info.json",
        r#"{"script_name": "T", "character_name": ["A (x)", "B"], "acts_num": 2}"#,
    );
    write(
        d,
        "json/A (x).json",
        r#"{"script": ["One.\\nTwo.", "Three."], "acts_goal": ["", "Win."], "final_goal": "Hide.",
            "acts_performance": [""], "secrets": "", "questions": [""], "victims": ["V"],
            "kill_by_me": [1], "is_murderer": 1}"#,
    );
    write(
        d,
        "json/B.json",
        r#"{"script": ["『Note』 B."], "victims": ["V", "W"], "kill_by_me": [0, 0], "is_murderer": 0,
            "secrets": "A secret."}"#,
    );
    let head = "value,type,question,a,b,c,d,e,truth\n";
    write(
        d,
        "final_result/A (x).csv",
        &format!("\u{feff}{head}a,a,\"Who, then?\",A (x),B,,,,a\n"),
    );
    write(
        d,
        "final_result/B.csv",
        &format!("{head}b,b,Which?,p,q,r,,,\"a, c\"\nc,a,Rel?,s,t,,,,b\n"),
    );
    write(d, "final_result/FSA.csv", head);
    tmp
}

#[test]
fn imports_a_synthetic_folder() {
    let tmp = synthetic();
    let s = import(tmp.path()).unwrap();
    assert_eq!(s.title, "T");
    assert_eq!(s.acts, 2);
    assert_eq!(s.language, crate::Language::En);
    assert_eq!(s.source.as_deref(), Some("wellplay"));
    let a = &s.characters[0];
    assert_eq!(a.name, "A (x)");
    assert_eq!(a.acts, vec!["One.\nTwo.", "Three."]);
    assert_eq!(a.goals, vec!["Win.", "Hide."]);
    assert!(a.performance.is_empty() && a.secrets.is_empty());
    assert_eq!(a.killed, vec!["V"]);
    assert!(a.is_murderer());
    assert_eq!(s.characters[1].acts, vec!["『Note』 B."]);
    assert_eq!(s.characters[1].secrets, vec!["A secret."]);
    let victims: Vec<_> = s.victims.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(victims, vec!["V", "W"]);
    assert_eq!(s.truth.culprits[0].by, vec!["A (x)"]);
    assert!(s.truth.culprits[1].by.is_empty());
    assert_eq!(s.choice.len(), 3);
    assert_eq!(s.choice[0].character.as_deref(), Some("A (x)"));
    assert_eq!(s.choice[0].question, "Who, then?");
    assert_eq!(s.choice[0].options, vec!["A (x)", "B"]);
    assert_eq!(s.choice[0].category, Category::Objective);
    assert!(s.choice[1].multiple);
    assert_eq!(s.choice[1].truth, vec!["A", "C"]);
    assert_eq!(s.choice[1].rule, ChoiceRule::Includes);
    assert_eq!(s.choice[0].rule, ChoiceRule::Exact);
    assert_eq!(s.choice[2].category, Category::Relations);
}

#[test]
fn missing_character_file_names_the_path() {
    let tmp = synthetic();
    std::fs::remove_file(tmp.path().join("json/B.json")).unwrap();
    let err = import(tmp.path()).unwrap_err();
    match err {
        ImportError::Format { path, .. } => {
            assert_eq!(path, character_json_path(tmp.path(), "B"))
        }
        other => panic!("expected Format, got {other}"),
    }
}

#[test]
fn bad_rows_name_file_row_and_column() {
    let tmp = synthetic();
    let head = "value,type,question,a,b,c,d,e,truth\n";
    let csv = tmp.path().join("final_result/B.csv");
    for (body, column) in [
        ("x,a,Q?,p,q,,,,a\n", "value"),
        ("a,z,Q?,p,q,,,,a\n", "type"),
        ("a,a,Q?,p,,r,,,a\n", "b"),
        ("a,a,Q?,p,q,,,,7\n", "truth"),
    ] {
        std::fs::write(&csv, format!("{head}c,a,Ok?,s,t,,,,a\n{body}")).unwrap();
        let err = import_logged(tmp.path(), true).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("B.csv") && msg.contains(&format!("row 3, column {column}")),
            "{msg}"
        );
    }
}

/// Each repair rule on a synthetic file: tolerant imports what the row means and logs file, row and
/// column; strict refuses the same row.
#[test]
fn repairs_are_logged_and_strict_refuses_them() {
    let head = "value,type,question,a,b,c,d,e,truth\n";
    for (body, column, check) in [
        ("a,a,Q?,p,q,,,,a,\n", "10", "trailing"),
        ("a,a,Q?,p,q,,,b,\n", "e", "truth-in-option"),
        ("a,a,Q?,p,,r,,,a\n", "b", "option-gap"),
        ("a,a, ,p,q,,,,a\n", "question", "blank"),
    ] {
        let tmp = synthetic();
        let csv = tmp.path().join("final_result/B.csv");
        std::fs::write(&csv, format!("{head}{body}")).unwrap();
        let got = import_logged(tmp.path(), false).unwrap();
        assert_eq!(got.repairs.len(), 1, "{check}: {:?}", got.repairs);
        let r = &got.repairs[0];
        assert!(
            r.path.ends_with("B.csv") && r.row == Some(2) && r.column == column,
            "{check}: {r}"
        );
        let q = got
            .script
            .choice
            .iter()
            .find(|q| q.character.as_deref() == Some("B"))
            .unwrap();
        match check {
            "trailing" => assert_eq!(q.truth, vec!["A"]),
            "truth-in-option" => assert_eq!(
                (q.options.len(), q.truth.clone()),
                (2, vec!["B".to_string()])
            ),
            "option-gap" => assert_eq!(q.options, vec!["p", "r"]),
            _ => assert!(q.unscored),
        }
        let err = import_logged(tmp.path(), true).unwrap_err().to_string();
        assert!(
            err.contains("B.csv") && err.contains("row 2"),
            "{check}: {err}"
        );
    }
    // Truth naming an option after the gap: ambiguous, refused even when tolerant.
    let tmp = synthetic();
    std::fs::write(
        tmp.path().join("final_result/B.csv"),
        format!("{head}a,a,Q?,p,,r,,,c\n"),
    )
    .unwrap();
    assert!(import_logged(tmp.path(), false).is_err());
}

#[test]
fn victims_spelled_differently_are_one_victim_and_gm_is_the_omniscient_file() {
    let tmp = synthetic();
    let d = tmp.path();
    write(
        d,
        "json/B.json",
        r#"{"script": ["B."], "victims": ["Aunt(V)", "W"], "kill_by_me": [0, 0], "is_murderer": 0}"#,
    );
    std::fs::rename(
        d.join("final_result/FSA.csv"),
        d.join("final_result/GM.csv"),
    )
    .unwrap();
    // The omniscient file repeats one character question: folded, counted once.
    write(
        d,
        "final_result/GM.csv",
        "value,type,question,a,b,c,d,e,truth\nc,a,Rel?,s,t,,,,b\nc,a,Only?,s,t,,,,a\n",
    );
    let got = import_logged(d, false).unwrap();
    let names: Vec<_> = got.script.victims.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, vec!["V", "W"]);
    assert_eq!(got.repairs.len(), 1);
    assert_eq!(got.repairs[0].column, "victims[0]");
    let s = &got.script;
    assert_eq!(s.choice.iter().filter(|q| q.character.is_some()).count(), 3);
    assert_eq!(s.choice.iter().filter(|q| q.in_full_access()).count(), 2);
    assert_eq!(s.choice.iter().filter(|q| q.character.is_none()).count(), 1);
    assert!(import_logged(d, true).is_err());
}

/// A single-choice row with two true letters is no fault: it imports as single choice, either letter
/// right (the reference scorer's rule), with nothing repaired and under strict too.
#[test]
fn single_choice_with_two_true_letters_accepts_either() {
    let tmp = synthetic();
    std::fs::write(
        tmp.path().join("final_result/B.csv"),
        "value,type,question,a,b,c,d,e,truth\nb,a,Why?,p,q,r,,,ac\n",
    )
    .unwrap();
    let got = import_logged(tmp.path(), true).unwrap();
    assert!(got.repairs.is_empty(), "{:?}", got.repairs);
    let q = got
        .script
        .choice
        .iter()
        .find(|q| q.character.as_deref() == Some("B"))
        .unwrap();
    assert!(!q.multiple);
    assert_eq!(q.truth, vec!["A", "C"]);
    assert_eq!(q.rule, ChoiceRule::AnyOf);
    // It validates (the synthetic folder's victim W has no culprit: not this test's concern).
    let errors: Vec<_> = got
        .script
        .errors()
        .into_iter()
        .filter(|p| p.field.starts_with("choice"))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// The question of `character` at `index` among theirs (`None`: the omniscient file's own questions).
fn question_of<'a>(s: &'a Script, character: Option<&str>, index: usize) -> &'a ChoiceQuestion {
    s.choice
        .iter()
        .filter(|q| q.character.as_deref() == character)
        .nth(index)
        .unwrap()
}

/// A row one field short — its last option column left out, so the truth letter sits in option column e
/// and column truth is empty — reads its last field as the truth when that is a valid answer, with a
/// repair naming the file, the line the row starts on and column e; strict refuses it.
#[test]
fn a_row_one_field_short_reads_its_last_field_as_the_truth() {
    let head = "value,type,question,a,b,c,d,e,truth\n";
    let tmp = synthetic();
    // After a question written over two lines: the row starts on line 4.
    std::fs::write(
        tmp.path().join("final_result/B.csv"),
        format!("{head}a,a,\"Who,\nthen?\",p,q,,,,a\nb,b,Which two?,p,q,r,s,bd\n"),
    )
    .unwrap();
    let got = import_logged(tmp.path(), false).unwrap();
    assert_eq!(got.repairs.len(), 1, "{:?}", got.repairs);
    let r = &got.repairs[0];
    assert!(r.path.ends_with("final_result/B.csv"), "{r}");
    assert_eq!((r.row, r.column.as_str()), (Some(4), "e"), "{r}");
    assert!(r.action.contains("one field short"), "{r}");
    let q = question_of(&got.script, Some("B"), 1);
    assert_eq!(q.options, vec!["p", "q", "r", "s"]);
    assert_eq!(q.truth, vec!["B", "D"]);
    let err = import_logged(tmp.path(), true).unwrap_err().to_string();
    assert!(
        err.contains("B.csv") && err.contains("row 4, column e"),
        "{err}"
    );
}

/// The same in a Chinese folder as the Chinese set writes one: the English column names with Chinese
/// names and texts, the omniscient file named GM.csv; here with CRLF line ends, as files saved on
/// Windows have.
#[test]
fn a_row_one_field_short_in_a_chinese_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(
        d,
        "json/script_info.json",
        r#"{"script_name": "雨夜山庄", "character_name": ["陈默", "林雪"], "acts_num": 1}"#,
    );
    write(
        d,
        "json/陈默.json",
        r#"{"script": ["那晚你在书房。"], "victims": ["周老爷"], "kill_by_me": [1], "is_murderer": 1}"#,
    );
    write(
        d,
        "json/林雪.json",
        r#"{"script": ["那晚你在花园。"], "victims": ["周老爷"], "kill_by_me": [0], "is_murderer": 0}"#,
    );
    let head = "value,type,question,a,b,c,d,e,truth\r\n";
    write(
        d,
        "final_result/陈默.csv",
        &format!("{head}a,a,你几点到的书房？,八点,九点,,,,a\r\n"),
    );
    write(
        d,
        "final_result/林雪.csv",
        &format!("{head}b,a,谁最可疑？,陈默,林雪,管家,厨师,a\r\n"),
    );
    write(
        d,
        "final_result/GM.csv",
        &format!("{head}c,a,陈默和周老爷是什么关系？,父子,师徒,主仆,朋友,c\r\n"),
    );
    let got = import_logged(d, false).unwrap();
    let s = &got.script;
    assert_eq!(s.language, crate::Language::Zh);
    let at: Vec<_> = got
        .repairs
        .iter()
        .map(|r| {
            let file = r.path.file_name().unwrap().to_string_lossy().into_owned();
            (file, r.row, r.column.clone())
        })
        .collect();
    assert_eq!(
        at,
        vec![
            ("林雪.csv".to_string(), Some(2), "e".to_string()),
            ("GM.csv".to_string(), Some(2), "e".to_string()),
        ]
    );
    let q = question_of(s, Some("林雪"), 0);
    assert_eq!(q.options, vec!["陈默", "林雪", "管家", "厨师"]);
    assert_eq!(q.truth, vec!["A"]);
    let q = question_of(s, None, 0);
    assert_eq!(q.truth, vec!["C"]);
    assert_eq!(q.category, Category::Relations);
    assert!(import_logged(d, true).is_err());
}

/// A short row whose last field is no valid answer is refused as before, tolerant or strict: a fifth
/// option's text, a letter naming the missing option or one after it, a letter naming an empty option.
#[test]
fn a_short_row_whose_last_field_is_no_answer_is_refused() {
    let head = "value,type,question,a,b,c,d,e,truth\n";
    for body in [
        "a,a,Who?,p,q,r,s,t\n",
        "a,a,Who?,p,q,r,s,e\n",
        "a,a,Who?,p,q,r,s,f\n",
        "a,a,Who?,p,,r,s,b\n",
    ] {
        let tmp = synthetic();
        std::fs::write(
            tmp.path().join("final_result/B.csv"),
            format!("{head}{body}"),
        )
        .unwrap();
        for strict in [false, true] {
            let err = import_logged(tmp.path(), strict).unwrap_err().to_string();
            assert!(
                err.contains("B.csv") && err.contains("row 2"),
                "{body}: {err}"
            );
        }
    }
}

/// A full row whose last fields are shifted one column left — column truth empty, the truth letters
/// in option column e after four options — reads them as the truth, with a repair naming the file,
/// the row and column e; strict refuses it. With one trailing empty field too many (the shift left
/// it at the end) the same, after that field's own repair.
#[test]
fn a_row_shifted_left_reads_its_last_option_cell_as_the_truth() {
    let head = "value,type,question,a,b,c,d,e,truth\n";
    for (tail, repairs) in [(",\n", 1), (",,\n", 2)] {
        let tmp = synthetic();
        std::fs::write(
            tmp.path().join("final_result/B.csv"),
            format!("{head}a,a,Ok?,p,q,,,,a\nb,b,Which two?,p,q,r,s,\"b, d\"{tail}"),
        )
        .unwrap();
        let got = import_logged(tmp.path(), false).unwrap();
        assert_eq!(got.repairs.len(), repairs, "{:?}", got.repairs);
        let r = got.repairs.last().unwrap();
        assert!(r.path.ends_with("final_result/B.csv"), "{r}");
        assert_eq!((r.row, r.column.as_str()), (Some(3), "e"), "{r}");
        assert!(r.action.contains("shifted one column left"), "{r}");
        let q = question_of(&got.script, Some("B"), 1);
        assert_eq!(q.options, vec!["p", "q", "r", "s"]);
        assert_eq!(q.truth, vec!["B", "D"]);
        let err = import_logged(tmp.path(), true).unwrap_err().to_string();
        assert!(err.contains("B.csv") && err.contains("row 3"), "{err}");
    }
}

/// Shifted-looking rows that could be read another way are refused, tolerant or strict, for their
/// empty truth: a word of option letters, letters out of order, a letter naming the cell itself or
/// no option, options that are letters themselves, an empty option before the cell, and a header
/// whose truth column does not follow the options.
#[test]
fn a_shifted_row_that_reads_two_ways_is_refused() {
    let head = "value,type,question,a,b,c,d,e,truth\n";
    let cases = [
        (head, "a,a,Who?,p,q,r,s,Bad,\n"),
        (head, "a,a,Who?,p,q,r,s,ca,\n"),
        (head, "a,a,Who?,p,q,r,s,e,\n"),
        (head, "a,a,Who?,p,q,r,s,f,\n"),
        (head, "a,a,Who?,a,b,c,d,b,\n"),
        (head, "a,a,Who?,p,,r,s,c,\n"),
        (
            "value,type,question,truth,a,b,c,d,e\n",
            "a,a,Who?,,p,q,r,s,b\n",
        ),
    ];
    for (head, body) in cases {
        let tmp = synthetic();
        std::fs::write(
            tmp.path().join("final_result/B.csv"),
            format!("{head}{body}"),
        )
        .unwrap();
        for strict in [false, true] {
            let err = import_logged(tmp.path(), strict).unwrap_err().to_string();
            assert!(
                err.contains("B.csv") && err.contains("row 2"),
                "{body}: {err}"
            );
        }
    }
}
