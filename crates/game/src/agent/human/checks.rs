//! A person's reply checked as an agent's is: the gateway holds a model to a schema (a name among
//! the candidates, a letter among the options, a non-empty text); a person's reply must pass the
//! same, and a refusal says why in words the page shows. A refusal is never an error: the move is
//! asked again.

use sleuth_script::option_letter;

use super::MoveAnswer;

/// The longest text one move may carry: a long speech, not a pasted script.
pub(super) const MAX_TEXT: usize = 4000;

/// The letters of `n` options (A, B, …), as the agents' prompts letter them.
pub(super) fn letters(n: usize) -> Vec<String> {
    (0..n).map(option_letter).collect()
}

/// Something said: not empty, not too long.
pub(super) fn said(a: &MoveAnswer) -> Result<String, String> {
    let text = a.text.trim();
    if text.is_empty() {
        return Err("Please write something: an empty reply is not a move.".into());
    }
    if text.chars().count() > MAX_TEXT {
        return Err(format!(
            "Please keep it under {MAX_TEXT} characters (this one has {}).",
            text.chars().count()
        ));
    }
    Ok(text.to_string())
}

/// A target among `choices`, and what is said to them.
pub(super) fn named(a: &MoveAnswer, choices: &[String]) -> Result<(String, String), String> {
    let target = target(a, choices)?;
    Ok((target, said(a)?))
}

/// A vote: a target among `candidates`; the reason may be left out.
pub(super) fn voted(a: &MoveAnswer, candidates: &[String]) -> Result<(String, String), String> {
    let target = target(a, candidates)?;
    let reason = a.text.trim();
    if reason.chars().count() > MAX_TEXT {
        return Err(format!(
            "Please keep the reason under {MAX_TEXT} characters."
        ));
    }
    Ok((target, reason.to_string()))
}

fn target(a: &MoveAnswer, choices: &[String]) -> Result<String, String> {
    let given = a.target.as_deref().map(str::trim).unwrap_or("");
    if given.is_empty() {
        return Err(format!("Please choose one of: {}.", choices.join(", ")));
    }
    match choices.iter().find(|c| c.as_str() == given) {
        Some(c) => Ok(c.clone()),
        None => Err(format!(
            "{given} is not among the choices; please choose one of: {}.",
            choices.join(", ")
        )),
    }
}

/// The letters of a multiple-choice reply among `n` options: one, or with `multiple` one or more
/// (exactly `picks` when given), without repeats, returned sorted as the agents' are.
pub(super) fn lettered(
    a: &MoveAnswer,
    n: usize,
    multiple: bool,
    picks: Option<u32>,
) -> Result<Vec<String>, String> {
    let allowed = letters(n);
    let mut chosen: Vec<String> = Vec::new();
    for c in &a.choices {
        let c = c.trim().to_uppercase();
        if !allowed.contains(&c) {
            return Err(format!(
                "{c} is not an option; please choose among {}.",
                allowed.join(", ")
            ));
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
        return Err(match (least, most) {
            (1, 1) => "Please choose exactly one option.".to_string(),
            (l, m) if l == m => format!("Please choose exactly {l} options."),
            _ => "Please choose at least one option.".to_string(),
        });
    }
    if a.text.chars().count() > MAX_TEXT {
        return Err(format!(
            "Please keep the reason under {MAX_TEXT} characters."
        ));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(target: Option<&str>, text: &str, choices: &[&str]) -> MoveAnswer {
        MoveAnswer {
            target: target.map(str::to_string),
            text: text.into(),
            choices: choices.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn a_reply_is_held_to_what_an_agent_is_held_to() {
        let cast = vec!["Ann".to_string(), "Bo".to_string()];
        assert!(said(&reply(None, "  ", &[])).is_err());
        assert_eq!(said(&reply(None, " hi ", &[])), Ok("hi".into()));
        assert!(said(&reply(None, &"x".repeat(MAX_TEXT + 1), &[])).is_err());
        let wrong = named(&reply(Some("Zed"), "why?", &[]), &cast).unwrap_err();
        assert!(
            wrong.contains("Zed is not among") && wrong.contains("Ann, Bo"),
            "{wrong}"
        );
        assert!(named(&reply(Some("Bo"), "", &[]), &cast).is_err());
        assert_eq!(
            named(&reply(Some("Bo"), "why?", &[]), &cast),
            Ok(("Bo".into(), "why?".into()))
        );
        assert!(voted(&reply(None, "", &[]), &cast).is_err());
        assert_eq!(
            voted(&reply(Some("Ann"), "", &[]), &cast),
            Ok(("Ann".into(), String::new()))
        );
    }

    #[test]
    fn letters_are_checked_against_the_options_and_the_count() {
        assert_eq!(
            lettered(&reply(None, "", &["b"]), 3, false, None),
            Ok(vec!["B".into()])
        );
        assert!(lettered(&reply(None, "", &["D"]), 3, false, None).is_err());
        assert!(lettered(&reply(None, "", &[]), 3, false, None).is_err());
        assert!(lettered(&reply(None, "", &["A", "B"]), 3, false, None).is_err());
        assert_eq!(
            lettered(&reply(None, "", &["C", "A", "A"]), 3, true, None),
            Ok(vec!["A".into(), "C".into()])
        );
        assert!(lettered(&reply(None, "", &["A"]), 3, true, Some(2)).is_err());
    }
}
