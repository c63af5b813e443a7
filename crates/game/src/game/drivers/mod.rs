//! The registry of protocol drivers: one module per protocol, one line each in [`driver`].
//!
//! Drivers depend on the shared steps and the host's run handle; only this registry names them, and
//! only the host calls it.

mod handout;
mod mirage;
mod thinkthrice;
mod wellplay;

use super::driver::Driver;
use super::{Protocol, ProtocolSettings};

/// The driver of the chosen protocol, holding that protocol's knobs; the hand-out when the frameworks
/// do not play (`plays` false: PP and OP), with WellPlay's final vote under that protocol.
pub(crate) fn driver(settings: &ProtocolSettings, plays: bool) -> Box<dyn Driver> {
    if !plays {
        return Box::new(handout::Handout {
            vote: settings.protocol == Protocol::WellPlay,
        });
    }
    match settings.protocol {
        Protocol::ThinkThrice => Box::new(thinkthrice::ThinkThrice(settings.thinkthrice)),
        Protocol::WellPlay => Box::new(wellplay::WellPlay(settings.wellplay)),
        Protocol::Mirage => Box::new(mirage::Mirage(settings.mirage)),
    }
}
