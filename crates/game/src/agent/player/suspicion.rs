//! The agent's beliefs and the pruner's formula (see the module documentation of `player`): suspicion
//! states per victim, sensor readings, and the priorities that order the suspect lists.

use std::collections::BTreeMap;

use super::sensors::{Reading, Sensor, SensorRole};
use super::Player;
use sleuth_script::Language;

/// Weight of the newest evidence in the suspicion state (α).
const ALPHA: f64 = 0.6;
/// Suspicion of every player before any reading: no opinion either way.
pub(super) const PRIOR: f64 = 0.5;
/// Share of the priority that depends on the information value (β).
const BETA: f64 = 0.5;
/// Slack when comparing a priority with the mean, so that equal priorities all stay despite rounding.
const TIE: f64 = 1e-9;
/// Information value assumed before the information sensor has read a player.
pub(super) const INFO_PRIOR: f64 = 0.5;

/// The agent's belief about one victim.
#[derive(Debug, Clone)]
pub(super) struct VictimState {
    pub(super) name: String,
    /// Suspicion s_kj of each other player, in [0, 1].
    pub(super) suspicion: BTreeMap<String, f64>,
    /// Whom the agent is questioning about this victim, by priority.
    pub(super) suspects: Vec<String>,
}

/// The probability that questioning a player again is informative: their information value,
/// discounted in proportion to the questions already asked of them.
pub(super) fn informative(value: f64, asked: u32) -> f64 {
    value.clamp(0.0, 1.0) / (1.0 + f64::from(asked))
}

/// The suspicion state after a round's evidence.
pub(super) fn update_suspicion(prev: f64, evidence: f64) -> f64 {
    ((1.0 - ALPHA) * prev + ALPHA * evidence).clamp(0.0, 1.0)
}

/// How much a player is worth questioning about a victim.
pub(super) fn priority(suspicion: f64, p_informative: f64) -> f64 {
    suspicion * (1.0 - BETA + BETA * p_informative)
}

/// The weighted mean of (weight, value) pairs; `None` without any weight.
fn weighted_mean(parts: &[(f64, f64)]) -> Option<f64> {
    let w: f64 = parts.iter().map(|p| p.0).sum();
    (w > 0.0).then(|| parts.iter().map(|(w, x)| w * x).sum::<f64>() / w)
}

/// The suspect list: players at or above the mean priority, best first (cast order on ties). Never
/// empty when there is anyone to suspect.
pub(super) fn suspect_list(priorities: &[(String, f64)]) -> Vec<String> {
    if priorities.is_empty() {
        return Vec::new();
    }
    let mean = priorities.iter().map(|p| p.1).sum::<f64>() / priorities.len() as f64;
    let mut kept: Vec<(usize, &(String, f64))> = priorities
        .iter()
        .enumerate()
        .filter(|(_, p)| p.1 + TIE >= mean)
        .collect();
    kept.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1).then(a.0.cmp(&b.0)));
    kept.into_iter().map(|(_, p)| p.0.clone()).collect()
}

pub(super) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub(super) fn percent(x: f64) -> u32 {
    (x.clamp(0.0, 1.0) * 100.0).round() as u32
}

impl Player {
    /// The latest reading of `sensor` about `target` (and `victim`, for a sensor read per victim).
    pub(super) fn reading(&self, sensor: &Sensor, target: &str, victim: &str) -> Option<&Reading> {
        self.readings.get(&(
            sensor.name.clone(),
            target.to_string(),
            sensor.victim_key(victim).to_string(),
        ))
    }

    /// The information value v_j of a player (the prior before any reading).
    pub(super) fn information_value(&self, sensors: &[Sensor], target: &str) -> f64 {
        sensors
            .iter()
            .find(|s| s.role == SensorRole::Information)
            .and_then(|s| self.reading(s, target, "").map(|r| s.expectation(r)))
            .unwrap_or(INFO_PRIOR)
    }

    /// Evidence x_kj from the latest suspicion readings; `None` before any.
    pub(super) fn evidence(&self, sensors: &[Sensor], target: &str, victim: &str) -> Option<f64> {
        let parts: Vec<(f64, f64)> = sensors
            .iter()
            .filter(|s| s.role == SensorRole::Suspicion)
            .filter_map(|s| {
                self.reading(s, target, victim)
                    .map(|r| (s.weight, s.expectation(r)))
            })
            .collect();
        weighted_mean(&parts)
    }

    /// The priority π of questioning `target` about victim `k` now, with the questions asked so far.
    pub(super) fn priority_now(&self, sensors: &[Sensor], k: usize, target: &str) -> f64 {
        let s = self.victims[k]
            .suspicion
            .get(target)
            .copied()
            .unwrap_or(PRIOR);
        let q = self.asked.get(target).copied().unwrap_or(0);
        priority(s, informative(self.information_value(sensors, target), q))
    }

    /// The readings that point at guilt (choice score above one half), as "title: value".
    pub(super) fn guilty_signs(
        &self,
        sensors: &[Sensor],
        lang: Language,
        target: &str,
        victim: &str,
    ) -> Vec<String> {
        sensors
            .iter()
            .filter(|s| s.role == SensorRole::Suspicion)
            .filter_map(|s| {
                let r = self.reading(s, target, victim)?;
                let c = s.choices.get(r.choice)?;
                (c.score > 0.5).then(|| format!("{}: {}", s.title.get(lang), c.label.get(lang)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn pruner_discounts_questioned_players_and_keeps_the_leaders() {
        // Information value falls in proportion to the questions already asked.
        assert!(close(informative(0.8, 0), 0.8));
        assert!(close(informative(0.8, 1), 0.4));
        assert!(close(informative(0.8, 3), 0.2));
        assert!(close(informative(0.0, 0), 0.0));
        // Suspicion moves most of the way to the new evidence, and can be overturned in a round.
        assert!(close(update_suspicion(PRIOR, 1.0), 0.8));
        assert!(close(update_suspicion(0.8, 0.0), 0.32));
        assert!(close(update_suspicion(0.2, 1.0), 0.68));
        // A player with nothing more to give keeps half of their suspicion as priority.
        assert!(close(priority(0.8, 1.0), 0.8));
        assert!(close(priority(0.8, 0.0), 0.4));
        assert!(close(
            weighted_mean(&[(0.2, 1.0), (0.4, 1.0), (0.4, 0.0)]).unwrap_or(-1.0),
            0.6
        ));
        assert_eq!(weighted_mean(&[]), None);

        // Ada leads; Ben is close enough to stay; Cy drops out.
        let rows = |a: f64, b: f64, c: f64| {
            vec![
                ("Ada".to_string(), a),
                ("Ben".to_string(), b),
                ("Cy".to_string(), c),
            ]
        };
        let (s_ada, s_ben, s_cy) = (0.8, 0.7, 0.3);
        let first = rows(
            priority(s_ada, informative(1.0, 0)),
            priority(s_ben, informative(1.0, 0)),
            priority(s_cy, informative(1.0, 0)),
        );
        assert_eq!(suspect_list(&first), vec!["Ada", "Ben"]);
        // New evidence against Cy, and four questions already put to Ada: Ada has little left to give
        // and drops out, suspicion notwithstanding, and Cy comes first.
        let s_cy = update_suspicion(s_cy, 1.0);
        let later = rows(
            priority(s_ada, informative(1.0, 4)),
            priority(s_ben, informative(1.0, 0)),
            priority(s_cy, informative(1.0, 0)),
        );
        assert_eq!(suspect_list(&later), vec!["Cy", "Ben"]);
        // One clear suspect shrinks the list to one; evidence that evens out grows it again; no
        // evidence at all keeps everyone.
        assert_eq!(suspect_list(&rows(0.9, 0.2, 0.1)), vec!["Ada"]);
        assert_eq!(suspect_list(&rows(0.6, 0.55, 0.2)), vec!["Ada", "Ben"]);
        assert_eq!(suspect_list(&rows(0.4, 0.4, 0.4)), vec!["Ada", "Ben", "Cy"]);
        assert_eq!(suspect_list(&rows(0.0, 0.0, 0.0)), vec!["Ada", "Ben", "Cy"]);
        assert!(suspect_list(&[]).is_empty());
    }
}
