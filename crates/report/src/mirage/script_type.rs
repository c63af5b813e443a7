//! MIRAGE's three script types (Table 1, §2.5): the values [`super::categories`] reads per script and
//! [`super::published`] types in for the paper's eight scripts.

/// Single or Multi (Table 1's "Structure").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Structure {
    Single,
    Multi,
}

/// Orthodox or Unorthodox (Table 1's "Type").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Setting {
    Orthodox,
    Unorthodox,
}

/// Close or Open (Table 1's "Ending").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ending {
    Close,
    Open,
}

/// A script's three types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptType {
    pub structure: Structure,
    pub setting: Setting,
    pub ending: Ending,
}

impl ScriptType {
    /// Appendix C's three-letter name: "SOC" for Single, Orthodox, Close.
    pub fn code(&self) -> String {
        let s = match self.structure {
            Structure::Single => 'S',
            Structure::Multi => 'M',
        };
        let t = match self.setting {
            Setting::Orthodox => 'O',
            Setting::Unorthodox => 'U',
        };
        let e = match self.ending {
            Ending::Close => 'C',
            Ending::Open => 'O',
        };
        [s, t, e].into_iter().collect()
    }

    /// The detail table of that type (Table 6): SOC Table 12, SOO 13, SUC 14, SUO 15, MOC 16, MOO 17,
    /// MUC 18, MUO 19.
    pub fn detail_table(&self) -> u32 {
        12 + 4 * u32::from(self.structure == Structure::Multi)
            + 2 * u32::from(self.setting == Setting::Unorthodox)
            + u32::from(self.ending == Ending::Open)
    }
}
