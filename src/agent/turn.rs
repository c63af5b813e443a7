//! A character's reply to one request, and the bookkeeping that attributes every call's usage to exactly
//! one transcript event, so the transcript adds up to the bill.

use serde_json::Value;

use crate::llm::Usage;
use crate::transcript::Draft;

/// A character's reply to one request.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    /// What the character says (an introduction, a question, an answer) or a vote's reason.
    pub text: String,
    /// For questions and votes: whom.
    pub target: Option<String>,
    /// For multiple-choice answers: the letter.
    pub choice: Option<String>,
    /// For multiple-choice questions with several answers: every letter chosen.
    pub choices: Vec<String>,
    /// Structured results: an interaction (`{"action": "ask"|"investigate", …}`), trust and suspicion
    /// scores, sensor readings.
    pub data: Option<Value>,
    /// Private module steps, in order, each with the usage of the calls it made.
    pub steps: Vec<Draft>,
    /// Usage of calls not attributed to a step.
    pub usage: Usage,
}

/// Collects a turn's steps and attributes usage: a step takes the usage accrued since the last step.
#[derive(Debug, Default)]
pub(super) struct TurnBuilder {
    steps: Vec<Draft>,
    pending: Usage,
}

impl TurnBuilder {
    pub(super) fn spend(&mut self, u: Usage) {
        self.pending += u;
    }

    pub(super) fn step(&mut self, kind: &str, speaker: &str, text: String, data: Option<Value>) {
        let mut d = Draft::private(kind, speaker, &[speaker], text)
            .with_usage(std::mem::take(&mut self.pending));
        d.data = data;
        self.steps.push(d);
    }

    pub(super) fn finish(&mut self, text: String) -> Turn {
        Turn {
            text,
            steps: std::mem::take(&mut self.steps),
            usage: std::mem::take(&mut self.pending),
            ..Turn::default()
        }
    }
}
