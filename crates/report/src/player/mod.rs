//! PLAYER*'s figures and tables beyond Tables A3, A4 and A5 and Figure 7 (which `tables` and
//! `figures` build):
//!
//! - Figures 5 and 6: scores and cost per method, drawn from Table A3's and Table A5's rows
//!   ([`figures`]);
//! - Table A6: the overall score per model, when WellPlay conditions differ only by model
//!   ([`table_a6`]);
//! - the paper's published rows beside sleuth's in Tables A3, A5 and A6 ([`published`]), and its
//!   per-script rows of Tables A3, A4 and A5 under each script it also played
//!   ([`published_scripts`]).
//!
//! All are built from the WellPlay protocol's games only: they are the paper's setup
//! (`super::papers` says why other protocols' games never appear under a paper's name).

pub mod figures;
pub mod published;
pub mod published_scripts;
pub mod table_a6;

use super::arms::Grouping;
use super::scripts::ScriptLengths;
use super::tables;
use super::Section;

/// File stems of every section built here, so a rewrite removes what no longer applies.
pub const IDS: [&str; 3] = [figures::ID5, figures::ID6, table_a6::ID];

/// Adds the paper's published rows to the WellPlay protocol's Tables A3, A4 and A5 among `sections`
/// (built elsewhere); Figure 5 is drawn from sleuth's rows alone.
pub fn annotate(sections: &mut [Section]) {
    for s in sections {
        if let Section::Table(t) = s {
            match t.id.as_ref() {
                "player_table_a3" => {
                    published_scripts::insert_a3(t);
                    published::a3_rows(t);
                }
                tables::A4_ID => published_scripts::insert_a4(t),
                "player_table_a5" => {
                    published_scripts::insert_a5(t);
                    published::a5_rows(t);
                }
                _ => {}
            }
        }
    }
}

/// Figure 5, Figure 6 and Table A6 as the WellPlay games allow, in report order.
pub fn sections(g: &Grouping, lengths: &ScriptLengths) -> Vec<Section> {
    let mut out = Vec::new();
    let a3 = tables::player_table_a3(g);
    if let Some(a3) = &a3 {
        out.extend(figures::figure5(a3).map(Section::Figure));
    }
    if let Some(a5) = tables::player_table_a5(g, lengths) {
        out.extend(figures::figure6(&a5).map(Section::Figure));
    }
    if let Some(a3) = &a3 {
        out.extend(
            table_a6::table_a6(g, a3)
                .map(|mut t| {
                    published::a6_rows(&mut t);
                    t
                })
                .map(Section::Table),
        );
    }
    out
}
