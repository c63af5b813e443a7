//! The interface every protocol driver implements, and what a played game hands back.
//!
//! A driver is a protocol's stage machine: it composes the shared steps (`steps.rs`) and its own
//! stages over the host's [`Run`], and returns the vote and outcome. The host knows drivers only
//! through this trait and the registry (`drivers/mod.rs`), so a new protocol is one new driver file
//! and one registration line, and no driver is ever imported back by the host.

use std::collections::BTreeMap;

use futures::future::BoxFuture;

use super::result::{MajorityOutcome, MirageOutcome, Winner};
use super::run::Run;
use super::GameError;

/// What the host hands back after the vote.
#[derive(Debug, Clone, Default)]
pub struct PlayOutcome {
    pub votes: BTreeMap<String, String>,
    pub counts: BTreeMap<String, u32>,
    /// `None` when nothing was played (PP and OP).
    pub winner: Option<Winner>,
    pub majority: Option<MajorityOutcome>,
    pub mirage: Option<MirageOutcome>,
}

/// A protocol's stage machine, holding its own knobs.
pub(crate) trait Driver: Send + Sync {
    /// Plays the protocol from the distribution of scripts to the reveal, writing through `run`.
    /// Boxed so that the host can hold any driver behind one `dyn Driver`.
    fn play<'r>(&'r self, run: &'r mut Run<'_>) -> BoxFuture<'r, Result<PlayOutcome, GameError>>;
}
