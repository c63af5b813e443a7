//! The true letters of a WellPlay question and how an answer is judged against them: as PLAYER\*'s
//! reference scorer judged it, so that scores compare with the published ones (`docs/metrics.md`).

use crate::ChoiceRule;

/// The rule of a row and the picks it asks for. The reference scorer counts a multiple-choice (type b)
/// answer right when the true letter is among the picks, and a single-choice (type a) answer right when
/// the letter chosen is one of the true letters — which matters only for the few single-choice rows
/// with two true letters, kept as single choice with either letter right.
pub(super) fn scoring(
    multiple: bool,
    truth: &[String],
    question: &str,
    options: usize,
) -> (ChoiceRule, Option<u32>) {
    if multiple {
        (ChoiceRule::Includes, asked_picks(question, options))
    } else if truth.len() > 1 {
        (ChoiceRule::AnyOf, None)
    } else {
        (ChoiceRule::Exact, None)
    }
}

/// How many options a multiple-choice question asks for, read from its text: a number from two to
/// five, in words or digits, right before what is counted ("the two people you most suspect", "两个人",
/// "两位"). `None` when the text names no count, or one that leaves nothing to choose (as many as
/// there are options).
fn asked_picks(question: &str, options: usize) -> Option<u32> {
    const NOUNS: [&str; 11] = [
        "people",
        "persons",
        "person",
        "characters",
        "suspects",
        "players",
        "options",
        "answers",
        "choices",
        "items",
        "names",
    ];
    let words: Vec<String> = question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let english = words.windows(2).find_map(|w| {
        let n = match w[0].as_str() {
            "two" | "2" => 2,
            "three" | "3" => 3,
            "four" | "4" => 4,
            "five" | "5" => 5,
            _ => return None,
        };
        NOUNS.contains(&w[1].as_str()).then_some(n)
    });
    // Chinese: a numeral followed by a measure word or 人, not an ordinal (第二个).
    let chars: Vec<char> = question.chars().collect();
    let chinese = (0..chars.len().saturating_sub(1)).find_map(|i| {
        let n = match chars[i] {
            '两' | '二' | '2' => 2,
            '三' | '3' => 3,
            '四' | '4' => 4,
            '五' | '5' => 5,
            _ => return None,
        };
        let ordinal = i > 0 && chars[i - 1] == '第';
        (!ordinal && matches!(chars[i + 1], '个' | '位' | '名' | '项' | '人')).then_some(n)
    });
    english.or(chinese).filter(|&n| (n as usize) < options)
}

/// Parses a truth cell: letters written together ("ab") or separated by commas, spaces, semicolons,
/// slashes or the Chinese comma. Returns upper-case letters, sorted and without repeats; `None` if the
/// cell holds no letter or anything other than letters and separators.
pub(super) fn parse_truth(cell: &str) -> Option<Vec<String>> {
    let mut letters: Vec<char> = Vec::new();
    for c in cell.chars() {
        if c.is_ascii_alphabetic() {
            letters.push(c.to_ascii_uppercase());
        } else if !(c.is_whitespace() || matches!(c, ',' | ';' | '/' | '，' | '、' | '；')) {
            return None;
        }
    }
    letters.sort_unstable();
    letters.dedup();
    if letters.is_empty() {
        None
    } else {
        Some(letters.into_iter().map(String::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_are_read_from_the_question() {
        let q = "Please select the two people you most suspect of killing Hans";
        assert_eq!(asked_picks(q, 4), Some(2));
        assert_eq!(asked_picks("Choose 3 options that apply", 5), Some(3));
        assert_eq!(
            asked_picks("请选出你最怀疑杀死【某人】的两个人", 4),
            Some(2)
        );
        assert_eq!(asked_picks("请选出两位嫌疑人", 4), Some(2));
        // No count, an ordinal, a count of something else, or as many as there are options.
        assert_eq!(asked_picks("Who took the gold medal?", 4), None);
        assert_eq!(asked_picks("第二个人是谁？", 4), None);
        assert_eq!(asked_picks("Which of the two brothers lied?", 4), None);
        assert_eq!(asked_picks("Select the two people", 2), None);
    }

    #[test]
    fn rows_get_the_reference_rules() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let two = "Please select the two people you most suspect of killing V";
        assert_eq!(
            scoring(true, &v(&["A"]), two, 4),
            (ChoiceRule::Includes, Some(2))
        );
        assert_eq!(
            scoring(true, &v(&["A"]), "Who?", 4),
            (ChoiceRule::Includes, None)
        );
        assert_eq!(
            scoring(false, &v(&["A", "C"]), "Why?", 4),
            (ChoiceRule::AnyOf, None)
        );
        assert_eq!(
            scoring(false, &v(&["B"]), "Why?", 4),
            (ChoiceRule::Exact, None)
        );
    }
}
