//! Evaluation after the game: factual and inferential QA, judged and aggregated.

mod evaluator;
pub mod formulas;
mod judge;
mod mirage;
pub mod rouge;
pub mod stats;

pub use evaluator::{EvalReport, Evaluator, EvaluatorArgs, EvaluatorMsg};
pub use judge::{
    lexical_rationale_score, CharacterView, Judge, LlmJudge, RationaleVerdict, Verdict,
    DEFAULT_LEXICAL_THRESHOLD, JUDGE_PURPOSES,
};
