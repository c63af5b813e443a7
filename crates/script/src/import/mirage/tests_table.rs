//! The built-in culprit table ([`KNOWN_CULPRITS`]) against the reference implementation, and a synthetic
//! import of every title of it in both languages.
//!
//! What can be checked here, without the Chinese set (not on this project's machines): that each Chinese
//! entry is a well-formed Chinese name, is one the reference's own file for that script gives for `Zh`, at
//! the place of the English entry among the names it gives for `En`, and that a folder of that title
//! imports with it as the culprit. What cannot: that the Chinese set's files spell the person so (the
//! English entries are checked against the English set's characters and clue owners in
//! `tests/it/import_mirage_full.rs`).

use std::path::Path;

use serde_json::{json, Map, Value};

use super::{import, MirageOptions, KNOWN_CULPRITS};

/// One file of the reference: its Chinese and English titles and the names it gives for `Zh` and `En`.
struct RefScript {
    file: &'static str,
    zh_title: &'static str,
    en_title: &'static str,
    zh: &'static [&'static str],
    en: &'static [&'static str],
}

/// The reference implementation's per-script files, transcribed for this test: lime728/MIRAGE,
/// `ScriptEnvs/<file>` (SOO, SUC, SUO at commit ec1a7431993a, the others at 747d086d0d23): the Chinese and
/// English titles of the file's header comment, and the names the file gives for `Zh` and for `En` —
/// its culprit list, or for MOC.py, which sets no culprit, its list of the people voted among.
const REFERENCE: &[RefScript] = &[
    RefScript {
        file: "SOC.py",
        zh_title: "孝衣新娘",
        en_title: "Bride in filial dress",
        zh: &["方医生"],
        en: &["Doctor Fang"],
    },
    RefScript {
        file: "SOO.py",
        zh_title: "东方之星号游轮事件",
        en_title: "The Eastern Star cruise ship",
        zh: &["修经理"],
        en: &["Manager Xiu"],
    },
    RefScript {
        file: "SUC.py",
        zh_title: "博物馆奇妙夜",
        en_title: "Night at the Museum",
        zh: &["撒干事"],
        en: &["Manager Sa"],
    },
    RefScript {
        file: "SUO.py",
        zh_title: "漓川怪谈簿",
        en_title: "Li Chuan strange talk book",
        zh: &["衣衫褴褛的老人"],
        en: &["Elderly in Tattered"],
    },
    RefScript {
        file: "MOC.py",
        zh_title: "大明星最后的演出",
        en_title: "The final performance of a big star",
        zh: &["黄迪", "李察德", "周雄", "王纱", "吕智", "强尼", "齐思"],
        en: &[
            "Di Huang",
            "Richard",
            "Xiong Zhou",
            "Sha Wang",
            "Zhi Lv",
            "Jonny",
            "Si Qi",
        ],
    },
    RefScript {
        file: "MOO.py",
        zh_title: "怒海余生",
        en_title: "Raging Sea of Rest Life",
        zh: &["约翰"],
        en: &["John"],
    },
    RefScript {
        file: "MUC.py",
        zh_title: "第二十二条校规",
        en_title: "Article 22 School Rules",
        zh: &["皇甫青"],
        en: &["Fuqing Huang"],
    },
    RefScript {
        file: "MUO.py",
        zh_title: "狐狸旅馆",
        en_title: "Fox Hotel",
        zh: &["滑头鬼", "桐生一郎（滑头鬼）"],
        en: &["Nopperabo", "Ichiro Kiryu (Nopperabo)"],
    },
];

fn han(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c)
}

/// A Chinese person's name as the scripts write one: two to eight Han characters, optionally followed by
/// an alias of one to eight in full-width parentheses; no Latin letters, digits, spaces or other marks.
fn well_formed_chinese_name(name: &str) -> bool {
    let (main, alias) = match name.strip_suffix('）').and_then(|r| r.split_once('（')) {
        Some((m, a)) => (m, Some(a)),
        None => (name, None),
    };
    let chars = |s: &str, min: usize| (min..=8).contains(&s.chars().count()) && s.chars().all(han);
    chars(main, 2) && alias.is_none_or(|a| chars(a, 1))
}

#[test]
fn the_chinese_name_check_refuses_what_is_no_name() {
    for ok in ["方医生", "衣衫褴褛的老人", "桐生一郎（滑头鬼）"] {
        assert!(well_formed_chinese_name(ok), "{ok}");
    }
    for bad in [
        "",
        "方",
        "Doctor Fang",
        "方 医生",
        "桐生一郎(滑头鬼)",
        "桐生一郎（）",
        "方医生2",
        "方医生。",
    ] {
        assert!(!well_formed_chinese_name(bad), "{bad}");
    }
}

fn key(title: &str) -> String {
    title
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The table has the 8 scripts of the reference, each in both languages: the Chinese title is the one the
/// reference file gives, the English title its (case-insensitively), and each Chinese culprit is a
/// well-formed name the file gives for `Zh`, at the same place in its list as the English culprit in the
/// file's `En` list (so the two entries name one person).
#[test]
fn the_table_has_every_script_of_the_reference_in_both_languages() {
    assert_eq!(KNOWN_CULPRITS.len(), REFERENCE.len());
    for r in REFERENCE {
        let (file, zh_title, en_title, zh_names, en_names) =
            (r.file, r.zh_title, r.en_title, r.zh, r.en);
        let entries: Vec<_> = KNOWN_CULPRITS
            .iter()
            .filter(|s| s.zh_title == zh_title)
            .collect();
        assert_eq!(entries.len(), 1, "{file}: one entry titled {zh_title}");
        let e = entries[0];
        assert_eq!(key(e.en_titles[0]), key(en_title), "{file}");
        assert!(!e.zh.is_empty(), "{file}: a Chinese culprit");
        assert_eq!(e.zh.len(), e.en.len(), "{file}: one person, two languages");
        for (zh, en) in e.zh.iter().zip(e.en) {
            assert!(well_formed_chinese_name(zh), "{file}: \"{zh}\"");
            let at = zh_names.iter().position(|n| n == zh);
            assert!(at.is_some(), "{file}: \"{zh}\" is not among {zh_names:?}");
            assert_eq!(
                at,
                en_names.iter().position(|n| n == en),
                "{file}: \"{zh}\" and \"{en}\" are not the same person of the reference"
            );
            assert_eq!(
                zh.contains('（'),
                en.contains('('),
                "{file}: both aliased or neither"
            );
        }
    }
}

fn role(text: &str) -> Value {
    json!({
        "Story": text,
        "Script": text,
        "Relationship": "",
        "Performance": text,
        "Purpose": text,
        "Ability": text
    })
}

/// A folder titled `title` whose cast is the `culprits` and two others, with no true account: the table
/// alone can name the culprit.
fn folder(root: &Path, title: &str, culprits: &[&str], chinese: bool) -> std::path::PathBuf {
    let (others, text, clue): (&[&str], &str, &str) = if chinese {
        (&["路人甲", "路人乙"], "那晚你在大厅。", "一只打翻的茶杯。")
    } else {
        (
            &["Ann Other", "Bo Other"],
            "You were in the hall that night.",
            "A spilt cup.",
        )
    };
    let script: Map<String, Value> = culprits
        .iter()
        .chain(others)
        .map(|n| (n.to_string(), role(text)))
        .collect();
    let dir = root.join(title);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("script.json"), Value::Object(script).to_string()).unwrap();
    let hall = if chinese { "大厅" } else { "Hall" };
    std::fs::write(dir.join("clues.json"), json!({ hall: [clue] }).to_string()).unwrap();
    dir
}

/// Every title of the table, English spellings and Chinese, imports with the table's culprits in that
/// language — the Chinese "第二十二条校规" was refused as not in the table before the table was completed.
#[test]
fn every_title_of_the_table_imports_with_its_culprit() {
    let tmp = tempfile::tempdir().unwrap();
    for s in KNOWN_CULPRITS {
        let titles = s
            .en_titles
            .iter()
            .map(|t| (*t, s.en, false))
            .chain([(s.zh_title, s.zh, true)]);
        for (title, culprits, chinese) in titles {
            let dir = folder(tmp.path(), title, culprits, chinese);
            let script =
                import(&dir, &MirageOptions::default()).unwrap_or_else(|e| panic!("{title}: {e}"));
            assert_eq!(script.murderers(), culprits, "{title}");
        }
    }
}
