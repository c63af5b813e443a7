//! MIRAGE's published numbers, as data: the paper's own values, typed in from its tables (the source
//! of each constant names the table), so the report can print the paper's row beside sleuth's and the
//! tests can check the report's pooling against the paper's.
//!
//! - Table 1: each script's structure, type and ending, stages, agents, clues and words ([`TABLE1`]);
//!   the script types of Figures 3–8 come from here (`super::categories`).
//! - Table 8: the models' names and versions ([`TABLE8`]), to tell which of the paper's rows belongs
//!   beside a model sleuth played.
//! - Tables 2, 9 and 10: one [`Summary`] per model; Table 3: TII without and with forced exposure.
//! - Table 11: one [`Summary`] per script and model (`table11`); Tables 12–19: one [`CharacterRow`]
//!   per character and model ([`CHARACTERS`], `characters`).
//!
//! Scales as printed: Victory, TII and CIC ×100, ICI and SCI 0-100, the judge's sub-scores (RP, RA,
//! CC, DO, CT) 0-20. A cell the paper leaves empty ("/" or "-") is `None`.

use super::script_type::{Ending, ScriptType, Setting, Structure};

mod characters;
mod table11;

pub use characters::{Character, CharacterRow, CHARACTERS};
pub use table11::{TABLE11, TABLE11_MODELS};

/// A row of MIRAGE Table 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table1Row {
    /// The title as Table 1 prints it, then the other spellings dataset folders give it.
    pub titles: &'static [&'static str],
    pub kind: ScriptType,
    pub stages: u32,
    pub agents: u32,
    pub clues: usize,
    pub words: u32,
}

const fn kind(structure: Structure, setting: Setting, ending: Ending) -> ScriptType {
    ScriptType {
        structure,
        setting,
        ending,
    }
}

use Ending::{Close, Open};
use Setting::{Orthodox, Unorthodox};
use Structure::{Multi, Single};

/// MIRAGE Table 1, in its order (SOC, SOO, SUC, SUO, MOC, MOO, MUC, MUO: Appendix C's names of the
/// eight types, one script each). "Artical 22 School Rules" is how the English dataset spells that
/// folder (`shared/datasets/README.md`).
pub const TABLE1: [Table1Row; 8] = [
    Table1Row {
        titles: &["Bride in Filial Dress"],
        kind: kind(Single, Orthodox, Close),
        stages: 1,
        agents: 10,
        clues: 39,
        words: 27_503,
    },
    Table1Row {
        titles: &["The Eastern Star Cruise Ship"],
        kind: kind(Single, Orthodox, Open),
        stages: 1,
        agents: 5,
        clues: 42,
        words: 3_039,
    },
    Table1Row {
        titles: &["Night at the Museum"],
        kind: kind(Single, Unorthodox, Close),
        stages: 1,
        agents: 6,
        clues: 82,
        words: 6_480,
    },
    Table1Row {
        titles: &["Li Chuan Strange Talk Book"],
        kind: kind(Single, Unorthodox, Open),
        stages: 1,
        agents: 7,
        clues: 14,
        words: 45_666,
    },
    Table1Row {
        titles: &["The Final Performance of a Big Star"],
        kind: kind(Multi, Orthodox, Close),
        stages: 7,
        agents: 2,
        clues: 17,
        words: 5_794,
    },
    Table1Row {
        titles: &["Raging Sea of Rest Life"],
        kind: kind(Multi, Orthodox, Open),
        stages: 2,
        agents: 6,
        clues: 27,
        words: 6_804,
    },
    Table1Row {
        titles: &["Article 22 School Rules", "Artical 22 School Rules"],
        kind: kind(Multi, Unorthodox, Close),
        stages: 5,
        agents: 7,
        clues: 17,
        words: 41_728,
    },
    Table1Row {
        titles: &["Fox Hotel"],
        kind: kind(Multi, Unorthodox, Open),
        stages: 2,
        agents: 7,
        clues: 46,
        words: 62_224,
    },
];

/// The clues of all eight scripts (Table 1's #Clues summed): what Table 11's per-script CIC is a share
/// of ([`Summary::cic`]).
pub fn all_clues() -> usize {
    TABLE1.iter().map(|r| r.clues).sum()
}

/// Table 1's row of a script, by title: any of its English spellings, or its Chinese title as the
/// importer's table of the set names it ([`sleuth_script::import::mirage::KNOWN_CULPRITS`]); titles
/// compared ignoring case, spaces and punctuation. `None` for a script outside the MIRAGE set.
pub fn table1(title: &str) -> Option<(usize, &'static Table1Row)> {
    let key = title_key(title);
    if key.is_empty() {
        return None;
    }
    let english = |t: &str| {
        TABLE1
            .iter()
            .enumerate()
            .find(|(_, r)| r.titles.iter().any(|s| title_key(s) == title_key(t)))
    };
    english(title).or_else(|| {
        sleuth_script::import::mirage::KNOWN_CULPRITS
            .iter()
            .find(|k| title_key(k.zh_title) == key)
            .and_then(|k| k.en_titles.iter().find_map(|t| english(t)))
    })
}

/// A title or name reduced to lower-case letters and digits, for lenient comparison.
pub fn title_key(title: &str) -> String {
    title
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// MIRAGE Table 8: each model's name in the tables and the version it ran.
pub const TABLE8: [(&str, &str); 9] = [
    ("GPT-3.5", "gpt-3.5-turbo-0125"),
    ("GPT-4", "gpt-4-0125-preview"),
    ("GPT-4o", "gpt-4o-2024-08-06"),
    ("GPT-4-Turbo", "gpt-4-turbo"),
    ("Qwen-1-7B", "Qwen-7B-Chat"),
    ("Qwen-1.5-7B", "Qwen1.5-7B-Chat"),
    ("Qwen-2-7B", "Qwen2-7B-Instruct"),
    ("GLM-4-9B", "glm-4-9b-chat"),
    ("Yi-1.5-9B", "Yi-1.5-9B-Chat"),
];

/// The paper's name of the model sleuth calls `model`: the same name or version (Table 8) ignoring
/// case, after any `provider/` prefix (`Qwen/Qwen2-7B-Instruct` is Qwen-2-7B). `None` for a model the
/// paper did not run (the simulated model, any other).
pub fn paper_model(model: &str) -> Option<&'static str> {
    let bare = model.rsplit('/').next().unwrap_or(model).trim();
    TABLE8
        .iter()
        .find(|(name, version)| {
            name.eq_ignore_ascii_case(bare) || version.eq_ignore_ascii_case(bare)
        })
        .map(|(name, _)| *name)
}

/// One model's row of Tables 2, 9, 10 and 11.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub env_tokens: f64,
    pub envs: f64,
    pub user_tokens: f64,
    pub users: f64,
    pub victory: f64,
    /// `None` where the paper prints "/" (MOC, whose two characters got no TII).
    pub tii: Option<f64>,
    /// As printed. In Table 11 a script's investigations over the clues of *all eight* scripts
    /// ([`all_clues`]), not over its own: every entry is a whole number of clues over 284 (MOC's 5.99 is
    /// all 17 of its clues), and Table 2's CIC is their sum ([`Summary::cic_of_script`] gives the
    /// script's own share).
    pub cic: f64,
    pub ici: f64,
    pub sci: f64,
}

impl Summary {
    /// Clues investigated, read back from a Table 11 CIC: the whole number of clues that CIC is of the
    /// 284.
    pub fn clues_found(&self) -> usize {
        (self.cic * all_clues() as f64 / 100.0).round() as usize
    }

    /// A Table 11 row's CIC as a share of the script's own clues (×100), as sleuth's Table 11 prints a
    /// script's CIC: [`Summary::clues_found`] over the script's #Clues of Table 1.
    pub fn cic_of_script(&self, clues: usize) -> Option<f64> {
        (clues > 0).then(|| 100.0 * self.clues_found() as f64 / clues as f64)
    }
}

/// MIRAGE Table 2.
pub const TABLE2: [(&str, Summary); 5] = [
    (
        "GPT-3.5",
        summary([
            2_719_895.0,
            883.0,
            121_378.0,
            580.0,
            29.11,
            47.13,
            27.46,
            70.06,
            49.10,
        ]),
    ),
    (
        "GPT-4",
        summary([
            2_431_142.0,
            759.0,
            172_128.0,
            587.0,
            34.69,
            76.32,
            19.01,
            76.54,
            50.42,
        ]),
    ),
    (
        "GPT-4o",
        summary([
            6_252_580.0,
            1_328.0,
            204_772.0,
            574.0,
            47.01,
            78.69,
            35.92,
            76.80,
            51.29,
        ]),
    ),
    (
        "Qwen-2-7B",
        summary([
            2_204_029.0,
            743.0,
            192_158.0,
            588.0,
            51.81,
            75.78,
            18.66,
            74.92,
            50.57,
        ]),
    ),
    (
        "GLM-4-9B",
        summary([
            4_071_805.0,
            1_328.0,
            204_772.0,
            574.0,
            31.89,
            53.85,
            20.07,
            71.60,
            48.13,
        ]),
    ),
];

/// MIRAGE Table 9: more open models, without forced self-exposure (the Summarization module run by
/// Qwen-2-7B for all, Appendix E).
pub const TABLE9: [(&str, Summary); 4] = [
    (
        "Qwen-1-7B",
        summary([
            2_208_273.0,
            722.0,
            127_161.0,
            589.0,
            38.66,
            51.02,
            16.90,
            50.80,
            37.81,
        ]),
    ),
    (
        "Qwen-1.5-7B",
        summary([
            2_078_196.0,
            720.0,
            149_314.0,
            585.0,
            49.70,
            73.00,
            22.18,
            61.06,
            42.59,
        ]),
    ),
    (
        "Yi-1.5-9B",
        summary([
            2_129_287.0,
            716.0,
            189_201.0,
            576.0,
            31.28,
            55.73,
            34.16,
            59.21,
            40.71,
        ]),
    ),
    (
        "GLM-4-9B",
        summary([
            2_102_389.0,
            732.0,
            174_345.0,
            589.0,
            38.96,
            57.82,
            16.55,
            57.29,
            43.04,
        ]),
    ),
];

/// MIRAGE Table 10: the same models with forced self-exposure.
pub const TABLE10: [(&str, Summary); 4] = [
    (
        "Qwen-1-7B",
        summary([
            2_144_055.0,
            718.0,
            127_661.0,
            586.0,
            24.52,
            50.69,
            21.13,
            51.68,
            38.20,
        ]),
    ),
    (
        "Qwen-1.5-7B",
        summary([
            2_059_610.0,
            712.0,
            147_243.0,
            581.0,
            45.83,
            69.14,
            28.52,
            62.70,
            43.01,
        ]),
    ),
    (
        "Yi-1.5-9B",
        summary([
            2_108_145.0,
            716.0,
            194_031.0,
            590.0,
            50.00,
            57.57,
            35.56,
            59.36,
            42.40,
        ]),
    ),
    (
        "GLM-4-9B",
        summary([
            2_199_180.0,
            730.0,
            174_006.0,
            590.0,
            23.80,
            55.94,
            16.20,
            56.84,
            41.12,
        ]),
    ),
];

/// MIRAGE Table 3: TII without forced exposure, with it, and the difference (Qwen-2-7B playing the
/// culprit). The first two are Tables 9's and 10's TII.
pub const TABLE3: [(&str, [f64; 3]); 4] = [
    ("Qwen-1-7B", [51.02, 50.69, -0.33]),
    ("Qwen-1.5-7B", [73.00, 69.14, -3.86]),
    ("Yi-1.5-9B", [55.73, 57.57, 1.84]),
    ("GLM-4-9B", [57.82, 55.94, -1.88]),
];

/// A [`Summary`] from a row as printed: Env tokens, Envs, User tokens, Users, Victory, TII, CIC, ICI,
/// SCI.
const fn summary(v: [f64; 9]) -> Summary {
    Summary {
        env_tokens: v[0],
        envs: v[1],
        user_tokens: v[2],
        users: v[3],
        victory: v[4],
        tii: Some(v[5]),
        cic: v[6],
        ici: v[7],
        sci: v[8],
    }
}
