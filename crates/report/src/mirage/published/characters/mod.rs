//! MIRAGE Tables 12–19 as printed: one [`CharacterRow`] per character and model.

#[cfg(doc)]
use super::TABLE11_MODELS;

mod table12;
mod table13;
mod table14;
mod table15;
mod table16;
mod table17;
mod table18;
mod table19;

use table12::TABLE12;
use table13::TABLE13;
use table14::TABLE14;
use table15::TABLE15;
use table16::TABLE16;
use table17::TABLE17;
use table18::TABLE18;
use table19::TABLE19;

/// One character's row of Tables 12–19.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CharacterRow {
    pub tii: Option<f64>,
    pub ici: Option<f64>,
    pub sci: Option<f64>,
    /// The judge's sub-scores (0-20): role-playing (SCI), then reasoning and analysis, communication
    /// and cooperation, detail observation and creative thinking (ICI).
    pub rp: f64,
    pub ra: f64,
    pub cc: f64,
    pub do_: f64,
    pub ct: f64,
}

/// One character of Tables 12–19 and its row per model ([`TABLE11_MODELS`] order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Character {
    /// As the dataset names it (the importer's name: Fox Hotel's characters under the full names its
    /// second stage gives them), which is how a game's result names it.
    pub name: &'static str,
    pub rows: [CharacterRow; 5],
}

/// MIRAGE Tables 12–19 (Table 6's catalogue: SOC Table 12, SOO 13, SUC 14, SUO 15, MOC 16, MOO 17,
/// MUC 18, MUO 19), per script in Table 1 order: each character in the table's order, named as the
/// dataset names it, and its row per model in [`TABLE11_MODELS`] order. Table 12 prints its ICI and
/// SCI headings the wrong way round — its "ICI" column holds SCI (role play and ROUGE-L, 37-56), its
/// "SCI" column ICI (the four abilities ×100/80, whose mean over characters is Table 11's SOC ICI) —
/// so they are typed in here under their true names. Table 16 leaves Manli Shen's GPT-3.5 TII, ICI and
/// SCI empty ("-") while printing the sub-scores.
pub const CHARACTERS: [&[Character]; 8] = [
    TABLE12, TABLE13, TABLE14, TABLE15, TABLE16, TABLE17, TABLE18, TABLE19,
];
