//! A person's reply checked as an agent's is: the gateway holds a model to a schema (a name among
//! the candidates, a letter among the options, a non-empty text); a person's reply must pass the
//! same, and a refusal says why in words the page shows. A refusal is never an error: the move is
//! asked again.

use sleuth_script::option_letter;

use super::lines::SeatLines;
use super::MoveAnswer;

/// A MIRAGE interaction a person chose.
#[derive(Debug, PartialEq)]
pub(super) enum Interaction {
    /// A question to `target`.
    Ask { target: String, question: String },
    /// The clue at `index` of the offers, and what the person says as they search (may be empty).
    Investigate { index: usize, said: String },
}

/// The longest text one move may carry: a long speech, not a pasted script.
pub(super) const MAX_TEXT: usize = 4000;

/// The letters of `n` options (A, B, …), as the agents' prompts letter them.
pub(super) fn letters(n: usize) -> Vec<String> {
    (0..n).map(option_letter).collect()
}

/// Something said: not empty, not too long.
pub(super) fn said(a: &MoveAnswer, lines: SeatLines) -> Result<String, String> {
    let text = a.text.trim();
    if text.is_empty() {
        return Err(lines.empty().into());
    }
    let n = text.chars().count();
    if n > MAX_TEXT {
        return Err(lines.too_long(MAX_TEXT, Some(n)));
    }
    Ok(text.to_string())
}

/// A target among `choices`, and what is said to them.
pub(super) fn named(
    a: &MoveAnswer,
    choices: &[String],
    lines: SeatLines,
) -> Result<(String, String), String> {
    let target = target(a, choices, lines)?;
    Ok((target, said(a, lines)?))
}

/// A vote: a target among `candidates`; the reason may be left out.
pub(super) fn voted(
    a: &MoveAnswer,
    candidates: &[String],
    lines: SeatLines,
) -> Result<(String, String), String> {
    let target = target(a, candidates, lines)?;
    let reason = a.text.trim();
    if reason.chars().count() > MAX_TEXT {
        return Err(lines.reason_too_long(MAX_TEXT));
    }
    Ok((target, reason.to_string()))
}

fn target(a: &MoveAnswer, choices: &[String], lines: SeatLines) -> Result<String, String> {
    let given = a.target.as_deref().map(str::trim).unwrap_or("");
    if given.is_empty() {
        return Err(lines.choose(choices));
    }
    match choices.iter().find(|c| c.as_str() == given) {
        Some(c) => Ok(c.clone()),
        None => Err(lines.not_among(given, choices)),
    }
}

/// The letters of a multiple-choice reply among `n` options: one, or with `multiple` one or more
/// (exactly `picks` when given), without repeats, returned sorted as the agents' are.
pub(super) fn lettered(
    a: &MoveAnswer,
    n: usize,
    multiple: bool,
    picks: Option<u32>,
    lines: SeatLines,
) -> Result<Vec<String>, String> {
    let allowed = letters(n);
    let mut chosen: Vec<String> = Vec::new();
    for c in &a.choices {
        let c = c.trim().to_uppercase();
        if !allowed.contains(&c) {
            return Err(lines.not_an_option(&c, &allowed));
        }
        if !chosen.contains(&c) {
            chosen.push(c);
        }
    }
    chosen.sort();
    let (least, most) = match (multiple, picks) {
        (false, _) => (1, 1),
        (true, Some(k)) => (k as usize, k as usize),
        (true, None) => (1, allowed.len()),
    };
    if chosen.len() < least || chosen.len() > most {
        return Err(lines.option_count(least, most));
    }
    if a.text.chars().count() > MAX_TEXT {
        return Err(lines.reason_too_long(MAX_TEXT));
    }
    Ok(chosen)
}

/// A MIRAGE interaction: a question to one of `candidates`, or one of the `offers` investigated.
/// Without an explicit action, the one whose field the reply filled in is meant.
pub(super) fn interacted(
    a: &MoveAnswer,
    candidates: &[String],
    offers: &[String],
    lines: SeatLines,
) -> Result<Interaction, String> {
    let clue = a.clue.as_deref().map(str::trim).filter(|c| !c.is_empty());
    let action = match (a.action.as_deref().map(str::trim), clue) {
        (Some("ask"), _) => "ask",
        (Some("investigate"), _) => "investigate",
        (Some(other), _) if !other.is_empty() => return Err(lines.not_an_action(other)),
        (_, Some(_)) => "investigate",
        _ => "ask",
    };
    if action == "ask" {
        let (target, question) = named(a, candidates, lines)?;
        return Ok(Interaction::Ask { target, question });
    }
    if offers.is_empty() {
        return Err(lines.no_clue_left().into());
    }
    let Some(given) = clue else {
        return Err(lines.choose_clue(offers));
    };
    let Some(index) = offers.iter().position(|o| o == given) else {
        return Err(lines.not_on_offer(given, offers));
    };
    let said = a.text.trim();
    if said.chars().count() > MAX_TEXT {
        return Err(lines.too_long(MAX_TEXT, None));
    }
    Ok(Interaction::Investigate {
        index,
        said: said.to_string(),
    })
}

/// MIRAGE trust and suspicion: a score from 0 to `scale` of each of `others` on both, and no one
/// else. Returns the two rows in the order of `others`.
pub(super) fn scored(
    a: &MoveAnswer,
    others: &[String],
    scale: u32,
    lines: SeatLines,
) -> Result<(Vec<f64>, Vec<f64>), String> {
    let mut rows = Vec::with_capacity(2);
    for (module, given) in [("trust", &a.trust), ("suspicion", &a.suspicion)] {
        if let Some(stranger) = given.keys().find(|k| !others.contains(k)) {
            return Err(lines.not_scored(stranger, others));
        }
        let mut row = Vec::with_capacity(others.len());
        for o in others {
            match given.get(o) {
                None => return Err(lines.missing_score(o, module)),
                Some(v) if *v > scale => return Err(lines.off_scale(o, module, *v, scale)),
                Some(v) => row.push(f64::from(*v)),
            }
        }
        rows.push(row);
    }
    let suspicion = rows.pop().unwrap_or_default();
    let trust = rows.pop().unwrap_or_default();
    Ok((trust, suspicion))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleuth_script::Language;

    const EN: SeatLines = SeatLines(Language::En);
    const ZH: SeatLines = SeatLines(Language::Zh);

    fn reply(target: Option<&str>, text: &str, choices: &[&str]) -> MoveAnswer {
        MoveAnswer {
            target: target.map(str::to_string),
            text: text.into(),
            choices: choices.iter().map(|c| c.to_string()).collect(),
            ..MoveAnswer::default()
        }
    }

    #[test]
    fn a_reply_is_held_to_what_an_agent_is_held_to() {
        let cast = vec!["Ann".to_string(), "Bo".to_string()];
        assert!(said(&reply(None, "  ", &[]), EN).is_err());
        assert_eq!(said(&reply(None, " hi ", &[]), EN), Ok("hi".into()));
        assert!(said(&reply(None, &"x".repeat(MAX_TEXT + 1), &[]), EN).is_err());
        let wrong = named(&reply(Some("Zed"), "why?", &[]), &cast, EN).unwrap_err();
        assert!(
            wrong.contains("Zed is not among") && wrong.contains("Ann, Bo"),
            "{wrong}"
        );
        assert!(named(&reply(Some("Bo"), "", &[]), &cast, EN).is_err());
        assert_eq!(
            named(&reply(Some("Bo"), "why?", &[]), &cast, EN),
            Ok(("Bo".into(), "why?".into()))
        );
        assert!(voted(&reply(None, "", &[]), &cast, EN).is_err());
        assert_eq!(
            voted(&reply(Some("Ann"), "", &[]), &cast, EN),
            Ok(("Ann".into(), String::new()))
        );
    }

    #[test]
    fn letters_are_checked_against_the_options_and_the_count() {
        assert_eq!(
            lettered(&reply(None, "", &["b"]), 3, false, None, EN),
            Ok(vec!["B".into()])
        );
        assert!(lettered(&reply(None, "", &["D"]), 3, false, None, EN).is_err());
        assert!(lettered(&reply(None, "", &[]), 3, false, None, EN).is_err());
        assert!(lettered(&reply(None, "", &["A", "B"]), 3, false, None, EN).is_err());
        assert_eq!(
            lettered(&reply(None, "", &["C", "A", "A"]), 3, true, None, EN),
            Ok(vec!["A".into(), "C".into()])
        );
        assert!(lettered(&reply(None, "", &["A"]), 3, true, Some(2), EN).is_err());
    }

    #[test]
    fn an_interaction_asks_someone_or_investigates_a_clue_on_offer() {
        let cast = vec!["Ann".to_string(), "Bo".to_string()];
        let offers = vec!["c1: the study".to_string(), "c2: Bo".to_string()];
        let ask = reply(Some("Bo"), "Where were you?", &[]);
        assert_eq!(
            interacted(&ask, &cast, &offers, EN),
            Ok(Interaction::Ask {
                target: "Bo".into(),
                question: "Where were you?".into()
            })
        );
        let search = MoveAnswer {
            action: Some("investigate".into()),
            clue: Some("c2: Bo".into()),
            ..MoveAnswer::default()
        };
        assert_eq!(
            interacted(&search, &cast, &offers, EN),
            Ok(Interaction::Investigate {
                index: 1,
                said: String::new()
            })
        );
        let inferred = MoveAnswer {
            clue: Some("c1: the study".into()),
            ..MoveAnswer::default()
        };
        assert!(matches!(
            interacted(&inferred, &cast, &offers, EN),
            Ok(Interaction::Investigate { index: 0, .. })
        ));
        let gone = MoveAnswer {
            clue: Some("c9: the attic".into()),
            ..MoveAnswer::default()
        };
        let why = interacted(&gone, &cast, &offers, EN).unwrap_err();
        assert!(
            why.contains("not on offer") && why.contains("c1: the study"),
            "{why}"
        );
        assert!(
            interacted(&search, &cast, &[], EN).is_err(),
            "nothing left to search"
        );
        let dance = MoveAnswer {
            action: Some("dance".into()),
            ..MoveAnswer::default()
        };
        assert!(interacted(&dance, &cast, &offers, EN).is_err());
    }

    #[test]
    fn scores_cover_every_other_player_within_the_scale() {
        let others = vec!["Ann".to_string(), "Bo".to_string()];
        let of = |t: &[(&str, u32)], s: &[(&str, u32)]| MoveAnswer {
            trust: t.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            suspicion: s.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..MoveAnswer::default()
        };
        assert_eq!(
            scored(
                &of(&[("Bo", 3), ("Ann", 7)], &[("Ann", 0), ("Bo", 10)]),
                &others,
                10,
                EN
            ),
            Ok((vec![7.0, 3.0], vec![0.0, 10.0])),
            "in the order of the players scored"
        );
        let missing = scored(
            &of(&[("Ann", 7)], &[("Ann", 0), ("Bo", 1)]),
            &others,
            10,
            EN,
        );
        assert!(missing.unwrap_err().contains("Bo a trust score"));
        let high = scored(
            &of(&[("Ann", 7), ("Bo", 11)], &[("Ann", 0), ("Bo", 1)]),
            &others,
            10,
            EN,
        );
        assert!(high.unwrap_err().contains("from 0 to 10"));
        let stranger = scored(
            &of(
                &[("Ann", 7), ("Bo", 1), ("Zed", 2)],
                &[("Ann", 0), ("Bo", 1)],
            ),
            &others,
            10,
            EN,
        );
        assert!(stranger.unwrap_err().contains("Zed is not among"));
    }

    #[test]
    fn a_chinese_seat_is_refused_in_chinese() {
        let cast = vec!["沈墨卿".to_string(), "顾云笙".to_string()];
        let chinese = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        let empty = said(&reply(None, "  ", &[]), ZH).unwrap_err();
        assert_eq!(empty, "请写点内容再发送：空白的回复不算一步。");
        let wrong = voted(&reply(Some("查无此人"), "", &[]), &cast, ZH).unwrap_err();
        assert_eq!(
            wrong,
            "“查无此人”不在可选的人当中，请从这几位中选一位：沈墨卿、顾云笙。"
        );
        let refusals = [
            named(&reply(None, "为什么？", &[]), &cast, ZH).unwrap_err(),
            lettered(&reply(None, "", &["D"]), 3, false, None, ZH).unwrap_err(),
            lettered(&reply(None, "", &["A"]), 3, true, Some(2), ZH).unwrap_err(),
            interacted(&reply(Some("顾云笙"), "", &[]), &cast, &[], ZH).unwrap_err(),
            scored(&MoveAnswer::default(), &cast, 10, ZH).unwrap_err(),
        ];
        for why in &refusals {
            assert!(chinese(why) && !why.contains("Please"), "{why}");
        }
        assert_eq!(refusals[1], "没有“D”这个选项，请在A、B、C中选择。");
        assert_eq!(refusals[4], "请给沈墨卿打一个信任分。");
    }
}
