//! Reading nested JSON (a game's spec, an event's `data`) into cells: one JSON pointer per column,
//! and a missing or mistyped field is null rather than an error, because results written by older
//! or newer sleuths differ in exactly such fields.

use serde_json::Value as Json;

use crate::table::Value;

/// The text at `pointer`, or null.
pub fn text(json: Option<&Json>, pointer: &str) -> Value {
    Value::text(json.and_then(|j| j.pointer(pointer)).and_then(Json::as_str))
}

/// The number at `pointer` as a float, or null.
pub fn float(json: Option<&Json>, pointer: &str) -> Value {
    Value::float(json.and_then(|j| j.pointer(pointer)).and_then(Json::as_f64))
}

/// The integer at `pointer`, or null (a float or a negative number past `i64` is null too).
pub fn int(json: Option<&Json>, pointer: &str) -> Value {
    json.and_then(|j| j.pointer(pointer))
        .and_then(|v| {
            v.as_i64()
                .or_else(|| v.as_u64().and_then(|u| i64::try_from(u).ok()))
        })
        .map_or(Value::Null, Value::Int)
}

/// The boolean at `pointer`, or null.
pub fn boolean(json: Option<&Json>, pointer: &str) -> Value {
    json.and_then(|j| j.pointer(pointer))
        .and_then(Json::as_bool)
        .map_or(Value::Null, Value::Bool)
}

/// The value at `pointer` as text: a string as it is, anything else (an object, a number) as compact
/// JSON; null when absent or JSON null.
pub fn as_text(json: Option<&Json>, pointer: &str) -> Value {
    match json.and_then(|j| j.pointer(pointer)) {
        None | Some(Json::Null) => Value::Null,
        Some(Json::String(s)) => Value::Text(s.clone()),
        Some(other) => Value::Text(other.to_string()),
    }
}

/// The strings of the array at `pointer` (a lone string is a list of one); null when absent.
pub fn text_list(json: Option<&Json>, pointer: &str) -> Value {
    match json.and_then(|j| j.pointer(pointer)) {
        Some(Json::Array(items)) => Value::TextList(
            items
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                .collect(),
        ),
        Some(Json::String(s)) => Value::TextList(vec![s.clone()]),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_read_by_pointer_and_missing_or_mistyped_ones_are_null() {
        let spec = json!({
            "agent": {"modules": {"mr": true, "sv": 3}, "temperature": 0.8},
            "judge": {"llm": "gpt-x"},
            "embedder": "hashing",
            "big": u64::MAX,
            "truth": ["A", "C"],
            "choice": "B",
        });
        let s = Some(&spec);
        assert_eq!(boolean(s, "/agent/modules/mr"), Value::Bool(true));
        assert_eq!(int(s, "/agent/modules/sv"), Value::Int(3));
        assert_eq!(float(s, "/agent/temperature"), Value::Float(0.8));
        assert_eq!(text(s, "/judge/llm"), Value::Text("gpt-x".into()));
        assert_eq!(text(s, "/judge/lexical/threshold"), Value::Null);
        assert_eq!(int(s, "/big"), Value::Null, "past i64 is no integer here");
        assert_eq!(
            int(s, "/agent/temperature"),
            Value::Null,
            "a float is no integer"
        );
        assert_eq!(
            as_text(s, "/judge"),
            Value::Text(r#"{"llm":"gpt-x"}"#.into())
        );
        assert_eq!(as_text(s, "/embedder"), Value::Text("hashing".into()));
        assert_eq!(
            text_list(s, "/truth"),
            Value::TextList(vec!["A".into(), "C".into()])
        );
        assert_eq!(text_list(s, "/choice"), Value::TextList(vec!["B".into()]));
        assert_eq!(text_list(None, "/truth"), Value::Null);
    }
}
