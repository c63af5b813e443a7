//! Which game is played: the protocols of the three papers and their knobs. Plain data (part of a
//! game's settings); the drivers that play them live in `game/drivers/`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A game protocol: the host's stage machine (PROTOCOLS.md §2-§4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// ThinkThrice (Jubensha): introductions with initial questioning, open rounds, clue cards, vote.
    #[default]
    ThinkThrice,
    /// PLAYER* / WellPlay: acts, self-introduction, n rounds × m questions per agent, majority vote.
    WellPlay,
    /// MIRAGE: open conversation and interaction (ask or investigate), then accusations and a vote.
    Mirage,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::ThinkThrice, Protocol::WellPlay, Protocol::Mirage];

    /// The name used on the command line, in results and in metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::ThinkThrice => "thinkthrice",
            Protocol::WellPlay => "wellplay",
            Protocol::Mirage => "mirage",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A protocol name that is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol `{0}` in --protocol (expected one of: thinkthrice, wellplay, mirage)")]
pub struct ProtocolError(pub String);

impl FromStr for Protocol {
    type Err = ProtocolError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ProtocolError(s.to_string()))
    }
}

/// The knobs of the ThinkThrice procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkThriceSettings {
    /// Open-questioning rounds before the clue cards (paper: 2).
    pub rounds_before_clues: u32,
    /// Open-questioning rounds after the clue cards (paper: 3).
    pub rounds_after_clues: u32,
    /// After each self-introduction, every other player asks the speaker one question.
    pub initial_questioning: bool,
}

impl Default for ThinkThriceSettings {
    fn default() -> Self {
        ThinkThriceSettings {
            rounds_before_clues: 2,
            rounds_after_clues: 3,
            initial_questioning: true,
        }
    }
}

/// The knobs of the WellPlay procedure (PLAYER* Appendix A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WellPlaySettings {
    /// Rounds of open questioning per act, `n` (paper: 3).
    pub rounds: u32,
    /// Questions each agent asks per round, `m` (paper: 1).
    pub questions_per_round: u32,
}

impl Default for WellPlaySettings {
    fn default() -> Self {
        WellPlaySettings {
            rounds: 3,
            questions_per_round: 1,
        }
    }
}

/// The knobs of the MIRAGE simulation (MIRAGE §3 and Appendix A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirageSettings {
    /// Alternations of Open Conversation and Interaction (paper: 5).
    pub iterations: u32,
    /// Culprits announce themselves at the start (MIRAGE Table 3, "forced exposure").
    pub force_expose: bool,
    /// Token cap of the script summary the Summarization module writes (paper: 1,500).
    pub script_summary_tokens: u32,
    /// Conversation history beyond this many tokens is compressed into a summary.
    pub history_tokens: u32,
    /// Multi-stage scripts: release the next stage after every this many iterations (0: spread the
    /// stages evenly over the iterations).
    pub stage_every: u32,
}

impl Default for MirageSettings {
    fn default() -> Self {
        MirageSettings {
            iterations: 5,
            force_expose: false,
            script_summary_tokens: 1500,
            history_tokens: 3000,
            stage_every: 0,
        }
    }
}

impl MirageSettings {
    /// The iterations (1-based) after which the next stage of a `stages`-stage script is released, one
    /// entry per stage after the first (an iteration may appear twice: two stages at once). Every stage
    /// is released: evenly spread, stage k+1 after iteration round(k × iterations / stages); with
    /// `stage_every`, after k × stage_every iterations. A release that would come after the last
    /// iteration comes at the last one, before the accusations, so no stage (and none of its clues) is
    /// ever silently dropped.
    pub fn stage_releases(&self, stages: u32) -> Vec<u32> {
        if stages <= 1 || self.iterations == 0 {
            return Vec::new();
        }
        let n = self.iterations;
        (1..stages)
            .map(|k| {
                let at = if self.stage_every > 0 {
                    k.saturating_mul(self.stage_every)
                } else {
                    (f64::from(k) * f64::from(n) / f64::from(stages)).round() as u32
                };
                at.clamp(1, n)
            })
            .collect()
    }
}

/// Protocol and settings together: what `GameConfig` carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProtocolSettings {
    pub protocol: Protocol,
    pub thinkthrice: ThinkThriceSettings,
    pub wellplay: WellPlaySettings,
    pub mirage: MirageSettings,
}

impl ProtocolSettings {
    /// The ThinkThrice protocol with these knobs.
    pub fn thinkthrice(settings: ThinkThriceSettings) -> ProtocolSettings {
        ProtocolSettings {
            protocol: Protocol::ThinkThrice,
            thinkthrice: settings,
            ..ProtocolSettings::default()
        }
    }

    /// The WellPlay protocol with these knobs.
    pub fn wellplay(settings: WellPlaySettings) -> ProtocolSettings {
        ProtocolSettings {
            protocol: Protocol::WellPlay,
            wellplay: settings,
            ..ProtocolSettings::default()
        }
    }

    /// The MIRAGE protocol with these knobs.
    pub fn mirage(settings: MirageSettings) -> ProtocolSettings {
        ProtocolSettings {
            protocol: Protocol::Mirage,
            mirage: settings,
            ..ProtocolSettings::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_spread_over_the_iterations() {
        let m = MirageSettings::default();
        assert_eq!(m.stage_releases(1), Vec::<u32>::new());
        // Five iterations: two stages → stage 2 after iteration 3 (2.5 rounded up); three → after 2 and 3.
        assert_eq!(m.stage_releases(2), vec![3]);
        assert_eq!(m.stage_releases(3), vec![2, 3]);
        // More stages than iterations: none is dropped, several come at once.
        let two = MirageSettings { iterations: 2, ..m };
        assert_eq!(two.stage_releases(3), vec![1, 1]);
        assert_eq!(two.stage_releases(4), vec![1, 1, 2]);
        let every = MirageSettings {
            stage_every: 2,
            ..m
        };
        assert_eq!(every.stage_releases(3), vec![2, 4]);
        // A release past the last iteration comes at the last one.
        let late = MirageSettings {
            stage_every: 3,
            ..m
        };
        assert_eq!(late.stage_releases(3), vec![3, 5]);
        assert_eq!("WellPlay".parse::<Protocol>(), Ok(Protocol::WellPlay));
        assert!("poker".parse::<Protocol>().is_err());
    }
}
