//! ThinkThrice's module toggles, as given on the command line (`--modules mr,sr,sv=3`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which ThinkThrice modules an agent uses (the ablation rows of the paper's Table 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Modules {
    /// Memory Retrieval: top-k of everything the agent observed goes into each prompt. Off = memoryless.
    pub mr: bool,
    /// Self-Refinement: decompose the question and add facts from the script the answer left out.
    pub sr: bool,
    /// Self-Verification with at most this many attempts; `None` = off.
    pub sv: Option<u32>,
}

impl Modules {
    /// All modules off.
    pub const NONE: Modules = Modules {
        mr: false,
        sr: false,
        sv: None,
    };
}

/// A `--modules` value that names no module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown module `{0}` in --modules (expected a comma-separated list of mr, sr, sv, sv=N with N ≥ 1, or `none`)")]
pub struct ModulesError(pub String);

impl FromStr for Modules {
    type Err = ModulesError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut m = Modules::NONE;
        let s = s.trim();
        if s.eq_ignore_ascii_case("none") || s.is_empty() {
            return Ok(m);
        }
        for part in s.split(',').map(|p| p.trim().to_ascii_lowercase()) {
            match part.as_str() {
                "mr" => m.mr = true,
                "sr" => m.sr = true,
                "sv" => m.sv = Some(1),
                p if p.starts_with("sv=") => match p[3..].parse::<u32>() {
                    Ok(n) if n >= 1 => m.sv = Some(n),
                    _ => return Err(ModulesError(part.clone())),
                },
                _ => return Err(ModulesError(part.clone())),
            }
        }
        Ok(m)
    }
}

impl fmt::Display for Modules {
    /// The canonical spelling: `none`, or e.g. `mr,sr,sv=3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.mr {
            parts.push("mr".to_string());
        }
        if self.sr {
            parts.push("sr".to_string());
        }
        if let Some(n) = self.sv {
            parts.push(format!("sv={n}"));
        }
        if parts.is_empty() {
            write!(f, "none")
        } else {
            write!(f, "{}", parts.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_module_lists() {
        let m: Modules = "mr,sr,sv=3".parse().expect("valid");
        assert_eq!(
            m,
            Modules {
                mr: true,
                sr: true,
                sv: Some(3)
            }
        );
        assert_eq!(m.to_string(), "mr,sr,sv=3");
        assert_eq!("none".parse::<Modules>(), Ok(Modules::NONE));
        assert_eq!("SV".parse::<Modules>().map(|m| m.sv), Ok(Some(1)));
        assert!("mr,xx"
            .parse::<Modules>()
            .unwrap_err()
            .to_string()
            .contains("`xx`"));
        assert!("sv=0".parse::<Modules>().is_err());
    }
}
