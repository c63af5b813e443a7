//! A character's reply to one request, and the bookkeeping that attributes every call's usage to exactly
//! one transcript event, so the transcript adds up to the bill.

use serde_json::Value;

use crate::transcript::Draft;
use sleuth_llm::Usage;

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
///
/// It keeps the spends and steps as they happened and attributes usage only when the turn finishes, so
/// that a unit of work run alongside others (with a builder of its own) can be [absorbed](Self::absorb)
/// afterwards exactly as if its calls had been made here, in order: the same steps carry the same
/// usage, down to the order in which floating-point costs were added.
#[derive(Debug, Default)]
pub(super) struct TurnBuilder {
    entries: Vec<Entry>,
}

/// What happened during a turn, in order.
#[derive(Debug)]
enum Entry {
    /// A call's usage.
    Spend(Usage),
    /// A private step (its usage is filled in when the turn finishes).
    Step(Draft),
}

impl TurnBuilder {
    pub(super) fn spend(&mut self, u: Usage) {
        self.entries.push(Entry::Spend(u));
    }

    pub(super) fn step(&mut self, kind: &str, speaker: &str, text: String, data: Option<Value>) {
        let mut d = Draft::private(kind, speaker, &[speaker], text);
        d.data = data;
        self.entries.push(Entry::Step(d));
    }

    /// Appends another builder's spends and steps, as if they had happened here after what is already
    /// recorded.
    pub(super) fn absorb(&mut self, other: TurnBuilder) {
        self.entries.extend(other.entries);
    }

    pub(super) fn finish(&mut self, text: String) -> Turn {
        let mut pending = Usage::default();
        let mut steps = Vec::new();
        for e in std::mem::take(&mut self.entries) {
            match e {
                Entry::Spend(u) => pending += u,
                Entry::Step(d) => steps.push(d.with_usage(std::mem::take(&mut pending))),
            }
        }
        Turn {
            text,
            steps,
            usage: pending,
            ..Turn::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(calls: u64, cost: f64) -> Usage {
        Usage {
            calls,
            cost_usd: cost,
            ..Usage::default()
        }
    }

    #[test]
    fn a_step_carries_the_usage_since_the_last_step_and_the_turn_the_rest() {
        let mut b = TurnBuilder::default();
        b.spend(usage(1, 0.1));
        b.spend(usage(1, 0.2));
        b.step("draft", "Ada", "d".into(), None);
        b.spend(usage(1, 0.3));
        let t = b.finish("done".into());
        assert_eq!(t.steps.len(), 1);
        assert_eq!(t.steps[0].usage.calls, 2);
        assert_eq!(t.steps[0].usage.cost_usd, 0.1 + 0.2);
        assert_eq!(t.usage.calls, 1);
    }

    #[test]
    fn an_absorbed_unit_reads_as_if_its_calls_were_made_in_place() {
        let record = |b: &mut TurnBuilder, i: u64| {
            b.spend(usage(1, 0.1 * i as f64));
            b.step("sensor", "Ada", format!("reading {i}"), None);
            b.spend(usage(1, 0.07));
        };
        let mut sequential = TurnBuilder::default();
        sequential.spend(usage(1, 0.3));
        for i in 0..3 {
            record(&mut sequential, i);
        }
        let mut together = TurnBuilder::default();
        together.spend(usage(1, 0.3));
        let mut units: Vec<TurnBuilder> = (0..3).map(|_| TurnBuilder::default()).collect();
        for i in (0..3).rev() {
            record(&mut units[i as usize], i);
        }
        for u in units {
            together.absorb(u);
        }
        let (a, b) = (sequential.finish("x".into()), together.finish("x".into()));
        assert_eq!(a.steps, b.steps);
        assert_eq!(a.usage, b.usage);
    }
}
