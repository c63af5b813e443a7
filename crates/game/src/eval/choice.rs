//! Judging a WellPlay multiple-choice answer against the true letters, by the question's rule
//! ([`ChoiceRule`]).
//!
//! The rules are those PLAYER\*'s published numbers were scored by. Its reference scorer counts a
//! multiple-choice answer right when the true letter is among the picks (every multiple-choice row of the
//! WellPlay CSVs asks for "the two people you most suspect" and gives one true letter, so requiring the
//! picks to equal the truth would make every answer given as asked wrong), and a single-choice answer
//! right when the letter chosen is one of the true letters (a few rows accept either of two letters).
//! sleuth's own scripts keep the strict reading, every true letter and nothing else ("choose all that
//! apply"), which is the default. `docs/metrics.md` says where sleuth differs from the reference's string
//! matching.

use sleuth_script::ChoiceRule;

/// The letters of an answer or a truth as compared: trimmed, upper-cased, sorted, without repeats or
/// blanks.
fn letters(v: &[String]) -> Vec<String> {
    let mut v: Vec<String> = v
        .iter()
        .map(|x| x.trim().to_ascii_uppercase())
        .filter(|x| !x.is_empty())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Whether `chosen` answers a question whose true letters are `truth` under `rule`. An answer that
/// chooses nothing, or a question without a true letter, is never right.
///
/// - [`ChoiceRule::Exact`]: the chosen letters are the true letters.
/// - [`ChoiceRule::AnyOf`]: one letter is chosen, and it is a true letter (a single-choice question asks
///   for one letter; an answer naming two is not an answer to it).
/// - [`ChoiceRule::Includes`]: every true letter is among the chosen ones; other picks do not matter
///   (the question's `picks` bounds how many the player is asked for).
pub fn answer_correct(rule: ChoiceRule, chosen: &[String], truth: &[String]) -> bool {
    let (chosen, truth) = (letters(chosen), letters(truth));
    if chosen.is_empty() || truth.is_empty() {
        return false;
    }
    match rule {
        ChoiceRule::Exact => chosen == truth,
        ChoiceRule::AnyOf => chosen.len() == 1 && truth.contains(&chosen[0]),
        ChoiceRule::Includes => truth.iter().all(|t| chosen.contains(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_two_pick_answer_containing_the_truth_is_right() {
        // "Please select the two people you most suspect of killing …", truth "a".
        let truth = v(&["A"]);
        assert!(answer_correct(
            ChoiceRule::Includes,
            &v(&["A", "C"]),
            &truth
        ));
        assert!(answer_correct(
            ChoiceRule::Includes,
            &v(&["d", " a"]),
            &truth
        ));
        // One pick that is the truth is right too (the reference's `truth in answer`).
        assert!(answer_correct(ChoiceRule::Includes, &v(&["A"]), &truth));
    }

    #[test]
    fn a_two_pick_answer_without_the_truth_is_wrong() {
        let truth = v(&["A"]);
        assert!(!answer_correct(
            ChoiceRule::Includes,
            &v(&["B", "C"]),
            &truth
        ));
        assert!(!answer_correct(ChoiceRule::Includes, &[], &truth));
        // With several true letters, all must be among the picks.
        let truth = v(&["A", "C"]);
        assert!(!answer_correct(
            ChoiceRule::Includes,
            &v(&["A", "B"]),
            &truth
        ));
        assert!(answer_correct(
            ChoiceRule::Includes,
            &v(&["C", "B", "A"]),
            &truth
        ));
    }

    #[test]
    fn a_single_choice_question_with_truth_a_c_accepts_a_and_c_and_rejects_b() {
        let truth = v(&["A", "C"]);
        assert!(answer_correct(ChoiceRule::AnyOf, &v(&["A"]), &truth));
        assert!(answer_correct(ChoiceRule::AnyOf, &v(&["c"]), &truth));
        assert!(!answer_correct(ChoiceRule::AnyOf, &v(&["B"]), &truth));
        // Two letters do not answer a single-choice question.
        assert!(!answer_correct(ChoiceRule::AnyOf, &v(&["A", "C"]), &truth));
        // With one true letter, any-of and exact agree.
        for pick in ["A", "B"] {
            assert_eq!(
                answer_correct(ChoiceRule::AnyOf, &v(&[pick]), &v(&["A"])),
                answer_correct(ChoiceRule::Exact, &v(&[pick]), &v(&["A"]))
            );
        }
    }

    #[test]
    fn exact_needs_every_true_letter_and_nothing_else() {
        let truth = v(&["A", "C"]);
        assert!(answer_correct(ChoiceRule::Exact, &v(&["C", "A"]), &truth));
        assert!(answer_correct(
            ChoiceRule::Exact,
            &v(&["a", "c", "C"]),
            &truth
        ));
        assert!(
            !answer_correct(ChoiceRule::Exact, &v(&["A"]), &truth),
            "partial"
        );
        assert!(
            !answer_correct(ChoiceRule::Exact, &v(&["A", "B", "C"]), &truth),
            "extra"
        );
        assert!(!answer_correct(ChoiceRule::Exact, &[], &[]));
        assert!(!answer_correct(ChoiceRule::Exact, &v(&[" "]), &v(&[" "])));
    }
}
