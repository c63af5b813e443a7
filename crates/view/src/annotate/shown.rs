//! What an annotator's page shows of an item: its `shown` record (never `hidden`), laid out for the
//! template, with the annotator's stored answer filled in so that going back shows what was saved.
//! A `shown` record missing a field shows as empty rather than failing the page: the answer is
//! checked against `hidden` when it is posted, not here.

use serde::Serialize;
use serde_json::Value;

use sleuth_report::humans::SCALES;

/// ThinkThrice Appendix A's scales as the page names them, in the order of [`SCALES`].
const SCALE_NAMES: [&str; 3] = ["Naturalness", "Truthfulness", "Informativeness"];

/// One scale of one response, with the stored score if any.
#[derive(Debug, Serialize)]
pub struct Scale {
    key: &'static str,
    name: &'static str,
    value: Option<u64>,
}

/// One labelled response of a group.
#[derive(Debug, Serialize)]
pub struct Response {
    label: String,
    text: String,
    scales: Vec<Scale>,
}

/// A *responses* item: the character's script beside the group.
#[derive(Debug, Serialize)]
pub struct Responses {
    script: String,
    character: String,
    stage: String,
    reference: String,
    responses: Vec<Response>,
}

/// One character in one ranking, with the stored position (1 = best) if any.
#[derive(Debug, Serialize)]
pub struct Place {
    name: String,
    value: Option<usize>,
}

/// One criterion to order the characters on.
#[derive(Debug, Serialize)]
pub struct Metric {
    key: &'static str,
    name: &'static str,
    rows: Vec<Place>,
}

/// A line of the public conversation.
#[derive(Debug, Serialize)]
pub struct Line {
    speaker: String,
    kind: String,
    text: String,
}

/// A character and their script.
#[derive(Debug, Serialize)]
pub struct Character {
    name: String,
    script: String,
}

/// A *rankings* item: the conversation, the characters, and the two orders to give.
#[derive(Debug, Serialize)]
pub struct Rankings {
    script: String,
    conversation: Vec<Line>,
    characters: Vec<Character>,
    metrics: Vec<Metric>,
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A *responses* item, with `answer`'s scores (`{"ratings": {label: {scale: n}}}`) filled in.
pub fn responses(shown: &Value, answer: Option<&Value>) -> Responses {
    let ratings = answer.and_then(|a| a.get("ratings"));
    let responses = list(shown, "responses")
        .iter()
        .map(|r| {
            let label = text(r, "label");
            let given = ratings.and_then(|g| g.get(&label));
            let scales = SCALES
                .iter()
                .zip(SCALE_NAMES)
                .map(|(key, name)| Scale {
                    key,
                    name,
                    value: given.and_then(|g| g.get(*key)).and_then(Value::as_u64),
                })
                .collect();
            Response {
                text: text(r, "text"),
                label,
                scales,
            }
        })
        .collect();
    Responses {
        script: text(shown, "script"),
        character: text(shown, "character"),
        stage: text(shown, "stage"),
        reference: text(shown, "reference"),
        responses,
    }
}

/// A *rankings* item, with `answer`'s orders (`{"ici": [best, …], "sci": […]}`) as positions.
pub fn rankings(shown: &Value, answer: Option<&Value>) -> Rankings {
    let characters: Vec<Character> = list(shown, "characters")
        .iter()
        .map(|c| Character {
            name: text(c, "name"),
            script: text(c, "script"),
        })
        .collect();
    let metrics = [
        ("ici", "ICI: information gathered and used"),
        ("sci", "SCI: faithful to their script"),
    ]
    .into_iter()
    .map(|(key, name)| {
        let order = answer.and_then(|a| a.get(key)).and_then(Value::as_array);
        let position = |who: &str| {
            let at = order?.iter().position(|n| n.as_str() == Some(who))?;
            Some(at + 1)
        };
        let rows = characters
            .iter()
            .map(|c| Place {
                value: position(&c.name),
                name: c.name.clone(),
            })
            .collect();
        Metric { key, name, rows }
    })
    .collect();
    let conversation = list(shown, "conversation")
        .iter()
        .map(|l| Line {
            speaker: text(l, "speaker"),
            kind: text(l, "kind"),
            text: text(l, "text"),
        })
        .collect();
    Rankings {
        script: text(shown, "script"),
        conversation,
        characters,
        metrics,
    }
}

/// A *questions* item: the generated question and answer, the character's script around the
/// sentence it rests on (`before` + `source` + `after`, the source highlighted on the page), and the
/// stored review, so that going back shows what was decided and the edit fields hold what was saved.
#[derive(Debug, Serialize)]
pub struct Questions {
    script: String,
    character: String,
    question: String,
    answer: String,
    before: String,
    source: String,
    after: String,
    /// The stored action (`accept`, `edit`, `reject`); `None` while unanswered.
    action: Option<String>,
    /// The edit fields, prefilled: the stored edit's text, else the generated text (an edit from
    /// `sleuth annotate answer` may give one field only; the other stays the candidate's).
    edit_question: String,
    edit_answer: String,
    /// The stored reason of a rejection, if any.
    reason: String,
}

/// A *questions* item, with `answer` (`{"action": …, "question"?, "answer"?, "reason"?}`) filled in.
pub fn questions(shown: &Value, answer: Option<&Value>) -> Questions {
    let action = answer
        .and_then(|a| a.get("action"))
        .and_then(Value::as_str)
        .filter(|a| ["accept", "edit", "reject"].contains(a))
        .map(str::to_string);
    let given = |key: &str| {
        let edit = action.as_deref() == Some("edit");
        let stored = answer.and_then(|a| a.get(key)).and_then(Value::as_str);
        stored
            .filter(|_| edit)
            .map_or_else(|| text(shown, key), str::to_string)
    };
    let context = shown.get("context").unwrap_or(&Value::Null);
    let rejected = action.as_deref() == Some("reject");
    Questions {
        script: text(shown, "script"),
        character: text(shown, "character"),
        question: text(shown, "question"),
        answer: text(shown, "answer"),
        before: text(context, "before"),
        source: text(shown, "source"),
        after: text(context, "after"),
        edit_question: given("question"),
        edit_answer: given("answer"),
        reason: answer
            .filter(|_| rejected)
            .map_or_else(String::new, |a| text(a, "reason")),
        action,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stored_answer_is_filled_in() {
        let shown = json!({"script": "S", "character": "Ada", "stage": "introduction",
            "reference": "r", "responses": [{"label": "A", "text": "a"}, {"label": "B", "text": "b"}]});
        let answer = json!({"ratings": {"B": {"naturalness": 4, "truthfulness": 2}}});
        let r = responses(&shown, Some(&answer));
        let values: Vec<Vec<Option<u64>>> = r
            .responses
            .iter()
            .map(|r| r.scales.iter().map(|s| s.value).collect())
            .collect();
        assert_eq!(values, [vec![None; 3], vec![Some(4), Some(2), None]]);
        let shown = json!({"script": "S", "conversation": [],
            "characters": [{"name": "Ada", "script": "x"}, {"name": "Bo", "script": "y"}]});
        let r = rankings(&shown, Some(&json!({"ici": ["Bo", "Ada"]})));
        let at = |m: usize| -> Vec<Option<usize>> {
            r.metrics[m].rows.iter().map(|p| p.value).collect()
        };
        assert_eq!((at(0), at(1)), (vec![Some(2), Some(1)], vec![None, None]));
    }

    #[test]
    fn a_stored_review_fills_the_fields_it_gave() {
        let shown = json!({"script": "S", "character": "Ada", "question": "Q?", "answer": "A",
            "source": "src.", "context": {"before": "b ", "after": " a"}});
        let q = questions(&shown, None);
        assert_eq!(
            (q.action, q.edit_question, q.edit_answer),
            (None, "Q?".into(), "A".into())
        );
        assert_eq!((q.before.as_str(), q.after.as_str()), ("b ", " a"));
        let q = questions(&shown, Some(&json!({"action": "edit", "answer": "B"})));
        assert_eq!((q.edit_question, q.edit_answer), ("Q?".into(), "B".into()));
        assert_eq!(q.action.as_deref(), Some("edit"));
        let q = questions(
            &shown,
            Some(&json!({"action": "reject", "reason": "vague"})),
        );
        assert_eq!(
            (q.action.as_deref(), q.reason.as_str()),
            (Some("reject"), "vague")
        );
        let q = questions(&shown, Some(&json!({"action": "keep", "question": "X"})));
        assert_eq!((q.action, q.edit_question), (None, "Q?".into()));
    }
}
