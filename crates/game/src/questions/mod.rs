//! Factual-question generation (ThinkThrice §5.1).
//!
//! An LLM reads each character's script and writes question/answer pairs, each with the sentence of the
//! script that answers it. A proposal is kept only if its source sentence really occurs in that script
//! (the exact script sentence is stored, so the validator's `source ⊂ script_text()` rule holds) and it
//! is not a near-duplicate of a question the script already has or one kept earlier. The paper had
//! human annotators review GPT-4's questions; [`append_to_file`] adds the kept ones to a script file
//! (layout and comments untouched) for the same review.
//!
//! Calls are tagged `Phase::Generation` / `generate_factual`, and their sample indices derive from
//! (seed, character, call number), so a run with the same seed asks the same requests.
//!
//! Three steps, one module each: [`generate`] prompts the model per character and parses its replies;
//! [`screen`] keeps a proposal only when it is grounded and new; [`append`] writes the kept questions into
//! the script file.

mod append;
mod generate;
mod screen;

use std::path::PathBuf;

use crate::agent::PromptError;
use sleuth_llm::LlmError;
use sleuth_script::ScriptError;

pub use append::{append_to_file, append_to_text};
pub use generate::{generate, CharacterReport, GenerateOptions, GenerateReport};
pub use screen::{missing_fields, Proposal, Screen, Verdict};

/// The prompt framework and purpose: `prompts/generate/<lang>/factual.j2`.
pub const FRAMEWORK: &str = "generate";
/// The template's purpose name.
pub const PURPOSE: &str = "factual";
/// The call purpose in tags and metrics.
pub const CALL_PURPOSE: &str = "generate_factual";

/// Why generation or appending failed.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// Boxed: an LLM error carries its usage and the provider's last error, and would make every
    /// `Result` of this module large.
    #[error(transparent)]
    Llm(Box<LlmError>),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("{path}: cannot read script")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot write script")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// The file with the questions appended would not be a valid script; it was left unchanged.
    #[error("the script with the new questions would be invalid, file left unchanged: {0}")]
    Invalid(#[source] Box<ScriptError>),
}

impl From<LlmError> for GenerateError {
    fn from(e: LlmError) -> Self {
        GenerateError::Llm(Box::new(e))
    }
}
