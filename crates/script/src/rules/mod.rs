//! The rules of a game as plain data: which protocol is played, its knobs, and the host's pre-set
//! lines in each language.
//!
//! It sits below `agent`, `eval` and `game` because all three read it: characters adapt their prompts
//! to the protocol and speak the host's language, the LLM judge borrows the host's persona line, and
//! the game's drivers play the protocol. It holds no behaviour that needs actors, so it depends only on
//! `script` (for the language).

mod lines;
mod protocol;

pub use lines::HostLines;
pub use protocol::{
    MirageSettings, Protocol, ProtocolError, ProtocolSettings, ThinkThriceSettings,
    WellPlaySettings,
};
