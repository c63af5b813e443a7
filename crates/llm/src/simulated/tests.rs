//! The simulated model's unit tests.

use super::*;
use crate::types::{Message, ResponseSchema};
use serde_json::json;

fn req(system: &str, user: &str, schema: Option<Value>) -> ChatRequest {
    ChatRequest {
        model: MODEL.into(),
        messages: vec![Message::system(system), Message::user(user)],
        temperature: 0.8,
        top_p: 1.0,
        max_tokens: 60,
        schema: schema.map(|s| ResponseSchema::json("t", s)),
        logprobs: false,
        sample: 1,
        cache_key: None,
    }
}

const SCRIPT: &str = "You are Ben.\n### Your script\nAt 10 pm I saw Ada near the brandy decanter. I polished silver all evening. The cook left at 8 pm.\n### Secrets (do not reveal)\nI stole the silver spoon.";

#[test]
fn answers_by_extraction_and_is_deterministic() {
    let r = req(
        SCRIPT,
        "Answer briefly.\n\nQuestion: Who was near the brandy decanter at 10 pm?",
        None,
    );
    let a = respond(&r);
    assert_eq!(a.content, "At 10 pm I saw Ada near the brandy decanter.");
    assert_eq!(respond(&r), a);
    let u = a.usage.expect("simulated model reports usage");
    assert!(u.prompt_tokens > 20 && u.completion_tokens > 5);
}

#[test]
fn never_quotes_hidden_sections_and_says_when_it_does_not_know() {
    let a = respond(&req(SCRIPT, "Question: What did you steal?", None));
    assert!(!a.content.contains("spoon"), "{}", a.content);
    let a = respond(&req(SCRIPT, "Question: Who owns the zeppelin?", None));
    assert_eq!(a.content, "I don't know.");
}

#[test]
fn fills_schemas_with_grounded_values() {
    let schema = json!({"type": "object", "properties": {
        "vote": {"type": "string", "enum": ["Ada", "Cook"]},
        "reason": {"type": "string"},
        "supported": {"type": "boolean"},
        "confidence": {"type": "integer", "minimum": 1, "maximum": 5}
    }, "required": ["vote", "reason", "supported", "confidence"]});
    let a = respond(&req(
        SCRIPT,
        "Question: Who was near the brandy decanter?",
        Some(schema),
    ));
    let v: Value = serde_json::from_str(&a.content).expect("valid JSON");
    assert_eq!(v["vote"], "Ada");
    assert!(v["reason"].as_str().is_some_and(|s| s.contains("brandy")));
    assert_eq!(v["supported"], true);
    assert!((1..=5).contains(&v["confidence"].as_i64().unwrap_or(0)));
}

#[test]
fn does_not_echo_the_question_and_quotes_without_labels() {
    let sys = "### Memory\n- [host] Please describe your timeline on the day of the incident.\n- [Ben answered Ada] At 9 pm I locked the cellar.";
    let a = respond(&req(
        sys,
        "Question: Please describe your timeline on the day of the incident at 9 pm.",
        None,
    ));
    assert_eq!(a.content, "At 9 pm I locked the cellar.");
}

#[test]
fn option_letters_are_chosen_by_their_text() {
    let schema = json!({"type": "object", "properties": {"answer": {"type": "string", "enum": ["A", "B", "C"]}}});
    let user = "Options:\nA. The cook\nB. Ada\nC. The gardener\n\nQuestion: Who was near the brandy decanter?";
    let v: Value =
        serde_json::from_str(&respond(&req(SCRIPT, user, Some(schema))).content).expect("json");
    assert_eq!(v["answer"], "B");
}

fn format_paragraph(schema: &Value) -> String {
    format!(
        "### Reply format\nWrite ### THOUGHT: then ### RESPONSE: as asked.\n{}",
        sections_schema_line(schema)
    )
}

#[test]
fn answers_in_sections_when_the_schema_asks_for_them() {
    let schema = json!({"type": "object", "properties": {
        "vote": {"type": "string", "enum": ["Ada", "Cook"]},
        "reason": {"type": "string"}
    }, "required": ["vote", "reason"]});
    let mut r = req(
        SCRIPT,
        &format!(
            "Question: Who was near the brandy decanter?\n\n{}",
            format_paragraph(&schema)
        ),
        None,
    );
    r.schema = Some(ResponseSchema::sections("vote", schema.clone()));
    let a = respond(&r);
    let v = parse_sections(&a.content, &schema).expect("a well-formed two-section reply");
    assert_eq!(v["vote"], "Ada", "{}", a.content);
    assert!(v["reason"].as_str().is_some_and(|s| s.contains("brandy")));
    // The format paragraph is not the question: the THOUGHT is about the decanter.
    let thought = split_sections(&a.content).expect("splits").thought;
    assert!(thought.contains("brandy"), "{thought}");
}

#[test]
fn reads_the_schema_line_when_no_schema_travels_with_the_request() {
    // What arrives over HTTP: the format is asked for in the prompt only.
    let schema = json!({"type": "string"});
    let r = req(
        SCRIPT,
        &format!(
            "Question: Who was near the brandy decanter at 10 pm?\n\n{}",
            format_paragraph(&schema)
        ),
        None,
    );
    let a = respond(&r);
    let v = parse_sections(&a.content, &schema).expect("two sections");
    assert!(
        v.as_str().is_some_and(|s| s.contains("Ada")),
        "{}",
        a.content
    );
    // Without the schema line it is an ordinary free-text answer.
    let plain = respond(&req(
        SCRIPT,
        "Question: Who was near the brandy decanter at 10 pm?",
        None,
    ));
    assert!(split_sections(&plain.content).is_err(), "{}", plain.content);
    // A JSON-style schema wins over a stray schema line: the reply is JSON.
    let object = json!({"type": "object", "properties": {"who": {"type": "string"}}});
    let r = req(
        SCRIPT,
        &format!("Question: Who?\n\n{}", format_paragraph(&object)),
        Some(object.clone()),
    );
    assert!(serde_json::from_str::<Value>(&respond(&r).content).is_ok());
}

#[test]
fn chinese_sections_use_the_full_width_colon() {
    let sys = "### 你的剧本\n晚上十点我看见阿达在白兰地酒瓶旁边。我整晚都在擦银器。";
    let schema = json!({"type": "string"});
    let a = respond(&req(
        sys,
        &format!(
            "问题：晚上十点谁在白兰地酒瓶旁边？\n\n{}",
            format_paragraph(&schema)
        ),
        None,
    ));
    assert!(a.content.contains("### RESPONSE："), "{}", a.content);
    let v = parse_sections(&a.content, &schema).expect("parses with ：");
    assert!(
        v.as_str().is_some_and(|s| s.contains("阿达")),
        "{}",
        a.content
    );
}

#[test]
fn chinese_context_gets_chinese_answers() {
    let sys = "### 你的剧本\n晚上十点我看见阿达在白兰地酒瓶旁边。我整晚都在擦银器。";
    let a = respond(&req(sys, "问题：晚上十点谁在白兰地酒瓶旁边？", None));
    assert!(a.content.contains("阿达"), "{}", a.content);
    let a = respond(&req(sys, "问题：飞艇是谁的？", None));
    assert_eq!(a.content, "我不知道。");
}

#[test]
fn a_weaker_skill_lapses_deterministically_and_the_default_does_not() {
    let schema = json!({"type": "object", "properties": {
        "vote": {"type": "string", "enum": ["Ada", "Cook", "Gardener", "Butler"]}
    }});
    let ask = |model: &str, sample: u64| {
        let mut r = req(
            SCRIPT,
            "Question: Who was near the brandy decanter at 10 pm?",
            Some(schema.clone()),
        );
        r.model = model.into();
        r.sample = sample;
        let v: Value = serde_json::from_str(&respond(&r).content).expect("json");
        v["vote"].as_str().unwrap_or_default().to_string()
    };
    // Full skill, under any name: the grounded answer every time.
    for s in 0..20 {
        assert_eq!(ask(MODEL, s), "Ada");
        assert_eq!(ask("sim-1:1", s), "Ada");
    }
    // Skill 0: a uniform draw, the same for the same request.
    let weak: Vec<String> = (0..40).map(|s| ask("sim-1:0", s)).collect();
    assert_eq!(weak, (0..40).map(|s| ask("sim-1:0", s)).collect::<Vec<_>>());
    let right = weak.iter().filter(|v| *v == "Ada").count();
    assert!((3..=20).contains(&right), "{right} of 40 right at skill 0");
    // A lapse in free text may quote a secret; full skill never does.
    let leaks = (0..40)
        .filter(|&s| {
            let mut r = req(SCRIPT, "Question: What did you do in the evening?", None);
            r.model = "sim-1:0".into();
            r.sample = s;
            respond(&r).content.contains("spoon")
        })
        .count();
    assert!(leaks > 0, "a skill-0 model never let its secret slip");
}
