//! Sensing and pruning: every sensor on every other player, then each victim's suspicion state and
//! suspect list updated from the readings; and whom to question next.

use serde_json::{json, Map, Value};

use super::options::argmax;
use super::options::choose_option;
use super::sensors::{sensors, Reading, Sensor};
use super::suspicion::{
    informative, priority, round3, suspect_list, update_suspicion, VictimState, PRIOR,
};
use super::vars::{OptionLine, SensorPrompt};
use super::{joined, killed, lang, script_about, Player, SCRIPT_FACTS, SENSOR_TOKENS};
use crate::agent::context::{schema, Context};
use crate::agent::{together, AgentError};
use sleuth_llm::{Phase, ResponseSchema};
use sleuth_script::{option_letter, Language};

impl Player {
    /// Sets up the suspicion state on first use: everyone else (players, then non-player suspects)
    /// suspected of every victim at the prior, as the paper's roster starts with everyone but oneself.
    pub(super) fn ensure_state(&mut self, cx: &Context) {
        if !self.victims.is_empty() {
            return;
        }
        let others = others(cx);
        let mut names: Vec<String> = cx.view().victims().iter().map(|v| v.name.clone()).collect();
        if names.is_empty() {
            names.push(
                match lang(cx) {
                    Language::En => "the victim",
                    Language::Zh => "死者",
                }
                .to_string(),
            );
        }
        self.victims = names
            .into_iter()
            .map(|name| VictimState {
                name,
                suspicion: others.iter().map(|o| (o.clone(), PRIOR)).collect(),
                suspects: others.clone(),
            })
            .collect();
    }

    pub(super) fn victim_names(&self) -> Vec<String> {
        self.victims.iter().map(|v| v.name.clone()).collect()
    }

    /// Runs every sensor on everyone else (players, then non-player suspects), then the pruner. `round`
    /// is `None` for the update before the vote.
    ///
    /// The readings do not depend on one another, so they are taken together: one unit per player
    /// (their dialog recalled, then each of their readings, one call each), each unit and each reading
    /// forked with the sample indices the one-by-one loop (players, sensors, victims) drew, and joined
    /// back in that order, so the steps and readings are those of the loop.
    pub(super) async fn sense_and_prune(
        &mut self,
        cx: &mut Context,
        round: Option<u32>,
    ) -> Result<(), AgentError> {
        let sensors = sensors()?;
        self.ensure_state(cx);
        let victims = self.victim_names();
        let all_victims = joined(cx, &victims);
        let mut units = Vec::new();
        for target in others(cx) {
            let jobs: Vec<(&'static Sensor, String)> = sensors
                .iter()
                .flat_map(|sensor| {
                    let about: Vec<String> = if sensor.per_victim {
                        victims.clone()
                    } else {
                        vec![all_victims.clone()]
                    };
                    about.into_iter().map(move |victim| (sensor, victim))
                })
                .collect();
            let unit = cx.fork_calls(jobs.len() as u64);
            units.push((target, jobs, unit));
        }
        let bound = cx.bound().clone();
        let mut work = Vec::with_capacity(units.len());
        for (target, jobs, unit) in units {
            work.push(sense_unit(unit, target, &all_victims, jobs, round));
        }
        let sensed = together(&bound, work).await;
        for (unit, r) in sensed {
            let readings = r?;
            cx.join(unit)?;
            self.readings.extend(readings);
        }
        self.prune(cx, sensors, round);
        Ok(())
    }

    /// Updates every victim's suspicion state and suspect list from the latest readings and publishes a
    /// `suspects` event per victim.
    fn prune(&mut self, cx: &mut Context, sensors: &[Sensor], round: Option<u32>) {
        let lang = lang(cx);
        let others = others(cx);
        for k in 0..self.victims.len() {
            let victim = self.victims[k].name.clone();
            let before = self.victims[k].suspects.clone();
            let mut rows: Vec<(String, f64)> = Vec::new();
            let mut reasons = Map::new();
            for j in &others {
                let prev = self.victims[k].suspicion.get(j).copied().unwrap_or(PRIOR);
                let x = self.evidence(sensors, j, &victim);
                let s = x.map_or(prev, |x| update_suspicion(prev, x));
                self.victims[k].suspicion.insert(j.clone(), s);
                let v = self.information_value(sensors, j);
                let q = self.asked.get(j).copied().unwrap_or(0);
                let p_inf = informative(v, q);
                let pi = priority(s, p_inf);
                let readings: Map<String, Value> = sensors
                    .iter()
                    .filter_map(|sn| {
                        let r = self.reading(sn, j, &victim)?;
                        let c = sn.choices.get(r.choice)?;
                        Some((
                            sn.name.clone(),
                            json!({"value": c.label.get(lang), "method": r.method.as_str()}),
                        ))
                    })
                    .collect();
                reasons.insert(
                    j.clone(),
                    json!({
                        "suspicion": round3(s),
                        "previous": round3(prev),
                        "evidence": x.map(round3),
                        "information": round3(v),
                        "asked": q,
                        "p_informative": round3(p_inf),
                        "priority": round3(pi),
                        "sensors": readings,
                    }),
                );
                rows.push((j.clone(), pi));
            }
            let after = suspect_list(&rows);
            for (j, r) in reasons.iter_mut() {
                r["kept"] = json!(after.contains(j));
            }
            self.victims[k].suspects = after.clone();
            let when = match round {
                Some(r) => format!("round {r}"),
                None => "vote".to_string(),
            };
            cx.step(
                "suspects",
                format!(
                    "{victim} ({when}): {} (was: {})",
                    after.join(", "),
                    before.join(", ")
                ),
                Some(json!({
                    "round": round,
                    "victim": victim,
                    "before": before,
                    "after": after,
                    "reasons": reasons,
                })),
            );
        }
    }

    /// Whom to question and about which victim: among the candidates on a suspect list (every candidate if
    /// none is), the highest priority with the questions asked so far, then the fewest questions, then cast
    /// order. Returns the player, the victim index and each considered player's priority.
    pub(super) fn choose_target(
        &self,
        sensors: &[Sensor],
        candidates: &[String],
    ) -> Option<(String, usize, Map<String, Value>)> {
        let listed: Vec<&String> = candidates
            .iter()
            .filter(|c| self.victims.iter().any(|v| v.suspects.contains(c)))
            .collect();
        let pool: Vec<&String> = if listed.is_empty() {
            candidates.iter().collect()
        } else {
            listed
        };
        let mut scores = Map::new();
        let mut best: Option<(String, usize, f64, u32)> = None;
        for c in pool {
            let on_any = self.victims.iter().any(|v| v.suspects.contains(c));
            let mut top: Option<(usize, f64)> = None;
            for (k, v) in self.victims.iter().enumerate() {
                if on_any && !v.suspects.contains(c) {
                    continue;
                }
                let p = self.priority_now(sensors, k, c);
                if top.is_none_or(|(_, b)| p > b) {
                    top = Some((k, p));
                }
            }
            let Some((k, p)) = top else { continue };
            scores.insert(c.clone(), json!(round3(p)));
            let q = self.asked.get(c).copied().unwrap_or(0);
            let better = match &best {
                None => true,
                Some((_, _, bp, bq)) => p > *bp || (p == *bp && q < *bq),
            };
            if better {
                best = Some((c.clone(), k, p, q));
            }
        }
        best.map(|(c, k, _, _)| (c, k, scores))
    }

    /// The victim `target` is most suspected of (the first on ties).
    pub(super) fn likeliest_victim(&self, target: &str) -> usize {
        let s: Vec<f64> = self
            .victims
            .iter()
            .map(|v| v.suspicion.get(target).copied().unwrap_or(PRIOR))
            .collect();
        argmax(&s)
    }
}

/// The key of a reading: (sensor, player, victim — empty for sensors read once per player).
type ReadingKey = (String, String, String);

/// [`sense_target`] in a unit of its own, handed back with its result for joining.
async fn sense_unit(
    mut unit: Context,
    target: String,
    all_victims: &str,
    jobs: Vec<(&'static Sensor, String)>,
    round: Option<u32>,
) -> (Context, Result<Vec<(ReadingKey, Reading)>, AgentError>) {
    let r = sense_target(&mut unit, &target, all_victims, &jobs, round).await;
    (unit, r)
}

/// Every reading about `target`: its dialog recalled once, then each (sensor, victim) of `jobs` read,
/// the readings together, joined back in the order of `jobs`.
async fn sense_target(
    cx: &mut Context,
    target: &str,
    all_victims: &str,
    jobs: &[(&'static Sensor, String)],
    round: Option<u32>,
) -> Result<Vec<(ReadingKey, Reading)>, AgentError> {
    let query = cx.lines().query_about(target, all_victims);
    let dialog = cx.recall_texts(&query, Phase::Gameplay).await?;
    let bound = cx.bound().clone();
    let mut work = Vec::with_capacity(jobs.len());
    for (sensor, victim) in jobs {
        let unit = cx.fork_calls(1);
        work.push(read_unit(unit, sensor, (target, victim), &dialog, round));
    }
    let read = together(&bound, work).await;
    let mut out = Vec::with_capacity(read.len());
    for ((unit, r), (sensor, victim)) in read.into_iter().zip(jobs) {
        let reading = r?;
        cx.join(unit)?;
        let key = (
            sensor.name.clone(),
            target.to_string(),
            sensor.victim_key(victim).to_string(),
        );
        out.push((key, reading));
    }
    Ok(out)
}

/// [`read_sensor`] in a unit of its own, handed back with its result for joining.
async fn read_unit(
    mut unit: Context,
    sensor: &Sensor,
    about: (&str, &str),
    dialog: &[String],
    round: Option<u32>,
) -> (Context, Result<Reading, AgentError>) {
    let r = read_sensor(&mut unit, sensor, about, dialog, round).await;
    (unit, r)
}

/// One sensor call about `target` (and `victim`), recorded as a `sensor` step; returns the reading.
async fn read_sensor(
    cx: &mut Context,
    sensor: &Sensor,
    (target, victim): (&str, &str),
    dialog: &[String],
    round: Option<u32>,
) -> Result<Reading, AgentError> {
    let lang = lang(cx);
    let script = script_about(cx.view(), &format!("{target} {victim}"), SCRIPT_FACTS);
    let letters: Vec<String> = (0..sensor.choices.len()).map(option_letter).collect();
    let prompt = SensorPrompt {
        target,
        victim,
        murderer: cx.murderer(),
        killed: if sensor.per_victim {
            killed(cx.view(), victim)
        } else {
            cx.murderer()
        },
        script: &script,
        dialog,
        options: OptionLine::list(sensor, &letters, lang),
        question: sensor
            .question
            .get(lang)
            .replace("{target}", target)
            .replace("{victim}", victim),
    };
    let user = cx.prompts().render("sensor", &prompt)?;
    let (_, parsed, logprobs) = cx
        .call_full(
            None,
            "sensor",
            user,
            SENSOR_TOKENS,
            Some(sensor_schema(&letters)),
            Phase::Gameplay,
            true,
        )
        .await?;
    let parsed_letter = parsed
        .as_ref()
        .and_then(|v| v["choice"].as_str())
        .map(str::to_string);
    let reason = parsed
        .as_ref()
        .and_then(|v| v["reason"].as_str())
        .unwrap_or_default()
        .to_string();
    let pick = choose_option(&letters, parsed_letter.as_deref(), logprobs.as_deref());
    let label = sensor
        .choices
        .get(pick.index)
        .map(|c| c.label.get(lang).to_string())
        .unwrap_or_default();
    let probabilities: Map<String, Value> = sensor
        .choices
        .iter()
        .zip(&pick.probs)
        .map(|(c, p)| (c.label.get(lang).to_string(), json!(round3(*p))))
        .collect();
    let about = if sensor.per_victim {
        format!(" · {victim}")
    } else {
        String::new()
    };
    cx.step(
        "sensor",
        format!(
            "{} · {target}{about}: {label} [{}]",
            sensor.title.get(lang),
            pick.method.as_str()
        ),
        Some(json!({
            "round": round,
            "target": target,
            "sensor": sensor.name,
            "victim": sensor.per_victim.then_some(victim),
            "value": label,
            "method": pick.method.as_str(),
            "parsed": parsed_letter,
            "probabilities": probabilities,
            "reason": reason,
        })),
    );
    Ok(Reading {
        choice: pick.index,
        probs: pick.probs,
        method: pick.method,
    })
}

/// Whom the agent senses and suspects: the other players in cast order, then the suspects who do not
/// play. A non-player can be voted for, so the vote needs their suspicion, but cannot be questioned:
/// `choose_target` picks only among the host's candidates, who are players. Without a suspects list
/// this is the other players, as in the paper.
fn others(cx: &Context) -> Vec<String> {
    let view = cx.view();
    view.others()
        .map(str::to_string)
        .chain(view.suspects().iter().map(|s| s.name.clone()))
        .collect()
}

/// A sensor answer: the option letter first (its token's log-probabilities are the reading), then why.
fn sensor_schema(letters: &[String]) -> ResponseSchema {
    schema(
        "sensor",
        json!({"type": "object", "properties": {
            "choice": {"type": "string", "enum": letters},
            "reason": {"type": "string"}
        }, "required": ["choice", "reason"], "additionalProperties": false}),
    )
}
