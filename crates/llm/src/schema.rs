//! Checking a structured reply against its JSON schema.
//!
//! Neutral ground between the gateway, which refuses replies that break the schema, and the simulated
//! model, which must write replies that keep it: both read the same rules from here, so neither imports
//! the other.

use serde_json::Value;

/// Parses a structured reply and checks it against the parts of the schema agents rely on: the reply is an
/// object, required properties are present, enum values are allowed and types match. Models sometimes
/// wrap JSON in a code fence; that is tolerated.
pub fn parse_structured(content: &str, schema: &Value) -> Result<Value, String> {
    let trimmed = content.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|s| s.strip_suffix("```"))
        .unwrap_or(trimmed);
    let v: Value = serde_json::from_str(body.trim()).map_err(|e| format!("not JSON: {e}"))?;
    check(&v, schema, "$")?;
    Ok(v)
}

fn check(v: &Value, schema: &Value, path: &str) -> Result<(), String> {
    if let Some(options) = schema.get("enum").and_then(|e| e.as_array()) {
        if !options.contains(v) {
            return Err(format!(
                "{path} is {v}, expected one of {}",
                Value::Array(options.clone())
            ));
        }
        return Ok(());
    }
    let ty = schema.get("type").and_then(|t| t.as_str()).unwrap_or("");
    let ok = match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        _ => true,
    };
    if !ok {
        return Err(format!("{path} should be {ty}"));
    }
    if let (Some(obj), Some(props)) = (
        v.as_object(),
        schema.get("properties").and_then(|p| p.as_object()),
    ) {
        for req in schema
            .get("required")
            .and_then(|r| r.as_array())
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str())
        {
            if !obj.contains_key(req) {
                return Err(format!("{path}.{req} is missing"));
            }
        }
        for (k, sub) in props {
            if let Some(x) = obj.get(k) {
                check(x, sub, &format!("{path}.{k}"))?;
            }
        }
    }
    if let (Some(arr), Some(items)) = (v.as_array(), schema.get("items")) {
        for (i, x) in arr.iter().enumerate() {
            check(x, items, &format!("{path}[{i}]"))?;
        }
    }
    Ok(())
}

/// The `type` a schema names, or "" when it names none.
pub(crate) fn schema_type(schema: &Value) -> &str {
    schema.get("type").and_then(|t| t.as_str()).unwrap_or("")
}

/// `minimum`/`maximum` of numeric fields, recursively through objects and arrays.
pub(crate) fn check_bounds(v: &Value, schema: &Value, path: &str) -> Result<(), String> {
    if let Some(x) = v.as_f64() {
        if let Some(lo) = schema.get("minimum").and_then(Value::as_f64) {
            if x < lo {
                return Err(format!("{path} is {x}, below the minimum {lo}"));
            }
        }
        if let Some(hi) = schema.get("maximum").and_then(Value::as_f64) {
            if x > hi {
                return Err(format!("{path} is {x}, above the maximum {hi}"));
            }
        }
    }
    if let (Some(obj), Some(props)) = (
        v.as_object(),
        schema.get("properties").and_then(|p| p.as_object()),
    ) {
        for (k, sub) in props {
            if let Some(x) = obj.get(k) {
                check_bounds(x, sub, &format!("{path}.{k}"))?;
            }
        }
    }
    if let (Some(arr), Some(items)) = (v.as_array(), schema.get("items")) {
        for (i, x) in arr.iter().enumerate() {
            check_bounds(x, items, &format!("{path}[{i}]"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structured_parsing_checks_enums_and_required_fields() {
        let schema = json!({"type": "object", "properties": {"vote": {"type": "string", "enum": ["A", "B"]}}, "required": ["vote"]});
        assert!(parse_structured("```json\n{\"vote\": \"A\"}\n```", &schema).is_ok());
        assert!(parse_structured("{\"vote\": \"C\"}", &schema)
            .unwrap_err()
            .contains("expected one of"));
        assert!(parse_structured("{}", &schema)
            .unwrap_err()
            .contains("missing"));
        assert!(parse_structured("I vote A", &schema)
            .unwrap_err()
            .contains("not JSON"));
    }
}
