//! Evaluation after the game: factual and inferential QA, judged and aggregated.

mod evaluator;
mod judge;

pub use evaluator::{EvalReport, Evaluator, EvaluatorArgs, EvaluatorMsg};
pub use judge::{Judge, Verdict, DEFAULT_LEXICAL_THRESHOLD};
