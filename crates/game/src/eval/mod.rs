//! Evaluation after the game: factual and inferential QA, judged and aggregated.
//!
//! `eval` sits above `agent` (the evaluator asks characters questions) and below `game` (the game
//! supervisor spawns the evaluator and folds its report into the result): it owns the scores it
//! computes ([`scores`]) and its own error, [`EvalError`], which `game::GameError` absorbs.

pub mod agreement;
pub mod choice;
mod evaluator;
pub mod formulas;
mod judge;
mod mirage;
pub mod rating;
pub mod rouge;
pub mod scores;
pub mod stats;

pub use evaluator::{EvalReport, Evaluator, EvaluatorArgs, EvaluatorMsg};
pub use judge::{
    lexical_rationale_score, CharacterView, Judge, Judges, LlmJudge, RationaleVerdict, Verdict,
    DEFAULT_LEXICAL_THRESHOLD, JUDGE_PURPOSES,
};
pub use mirage::{reads_after_play, retained_after_play};

/// Why evaluation did not finish: a character (or the judge) failed or is gone, or the transcript could
/// not be written. Messages are those of the underlying error.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Request(#[from] crate::agent::RequestError),
    #[error(transparent)]
    Transcript(#[from] crate::transcript::TranscriptError),
}
