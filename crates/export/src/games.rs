//! The `games` table: one row per finished game — where it sits in its sweep (the store's row), what
//! it was played from (its spec, flattened), how it ended, every game-level metric of `result.json`
//! and what it used, by phase. Columns and their papers: `docs/data.md`, *games*.

use serde_json::Value as Json;
use sleuth_game::game::{ChoiceTally, GameResult};
use sleuth_llm::Usage;
use sleuth_report::GameRecord;
use sleuth_store::read::GameInfo;

use crate::flatten as f;
use crate::table::{col, Column, Row, Type::*, Value};

/// The WellPlay multiple-choice categories, each with columns of its own (PLAYER* Table A3).
const CATEGORIES: [&str; 3] = ["objective", "reasoning", "relations"];

pub const COLUMNS: &[Column] = &[
    col("game", Text),
    col("sweep", Text),
    col("seq", Int),
    col("arm", Text),
    col("arm_label", Text),
    col("repeat", Int),
    col("state", Text),
    col("attempts", Int),
    col("finished_at", Time),
    col("game_id", Text),
    col("script", Text),
    col("script_path", Text),
    col("script_digest", Text),
    col("protocol", Text),
    col("framework", Text),
    col("murderer_framework", Text),
    col("modules", Text),
    col("module_mr", Bool),
    col("module_sr", Bool),
    col("module_sv", Int),
    col("model", Text),
    col("murderer_model", Text),
    col("provider", Text),
    col("seed", Int),
    col("temperature", Float),
    col("top_p", Float),
    col("top_k", Int),
    col("max_tokens", Int),
    col("eval_max_tokens", Int),
    col("rounds_before_clues", Int),
    col("rounds_after_clues", Int),
    col("initial_questioning", Bool),
    col("rounds", Int),
    col("questions_per_round", Int),
    col("iterations", Int),
    col("force_expose", Bool),
    col("script_summary_tokens", Int),
    col("history_tokens", Int),
    col("stage_every", Int),
    col("judge_model", Text),
    col("judge_threshold", Float),
    col("judge_factual", Text),
    col("judge_rationale", Text),
    col("judge_mirage", Text),
    col("eval_repeats", Int),
    col("rationale_threshold", Int),
    col("embedder", Text),
    col("language", Text),
    col("prompts_dir", Text),
    col("spec_json", Text),
    col("winner", Text),
    col("murderers", TextList),
    col("human_seats", TextList),
    col("votes_cast", Int),
    col("murderer_detection_accuracy", Float),
    col("majority_winner", Text),
    col("plurality_winner", Text),
    col("eliminated", TextList),
    col("voting", Float),
    col("ballot_accuracy", Float),
    col("victory", Float),
    col("accusations", Int),
    col("clues_available", Int),
    col("key_clues_available", Int),
    col("clues_investigated", Int),
    col("forced_exposure", Bool),
    col("factual_own", Float),
    col("factual_cq", Float),
    col("factual_mq", Float),
    col("factual_others", Float),
    col("factual_own_questions", Int),
    col("factual_cq_questions", Int),
    col("factual_mq_questions", Int),
    col("inferential_accuracy", Float),
    col("informed_accuracy", Float),
    col("rationale_score", Float),
    col("choice_score", Float),
    col("choice_score_std", Float),
    col("choice_accuracy", Float),
    col("choice_points", Int),
    col("choice_possible", Int),
    col("choice_correct", Int),
    col("choice_questions", Int),
    col("choice_repeats", Int),
    col("choice_objective_accuracy", Float),
    col("choice_objective_points", Int),
    col("choice_objective_possible", Int),
    col("choice_reasoning_accuracy", Float),
    col("choice_reasoning_points", Int),
    col("choice_reasoning_possible", Int),
    col("choice_relations_accuracy", Float),
    col("choice_relations_points", Int),
    col("choice_relations_possible", Int),
    col("tii_trust_share", Float),
    col("tii_suspicion_share", Float),
    col("cic", Float),
    col("cic_key", Float),
    col("ici", Float),
    col("sci", Float),
    col("calls", Int),
    col("prompt_tokens", Int),
    col("completion_tokens", Int),
    col("cached_tokens", Int),
    col("cost_usd", Float),
    col("retries", Int),
    col("parse_failures", Int),
    col("truncated", Int),
    col("cacheable_prompt_tokens", Int),
    col("gameplay_calls", Int),
    col("gameplay_prompt_tokens", Int),
    col("gameplay_completion_tokens", Int),
    col("gameplay_cached_tokens", Int),
    col("gameplay_cost_usd", Float),
    col("gameplay_retries", Int),
    col("evaluation_calls", Int),
    col("evaluation_prompt_tokens", Int),
    col("evaluation_completion_tokens", Int),
    col("evaluation_cached_tokens", Int),
    col("evaluation_cost_usd", Float),
    col("evaluation_retries", Int),
    col("events", Int),
    col("duration_seconds", Float),
    col("settings_json", Text),
];

/// The row of one finished game: `info` is its row in the store, `rec` its `result.json`.
pub fn row(info: &GameInfo, rec: &GameRecord) -> Row {
    let r = &rec.result;
    let spec: Option<Json> = r.spec.as_ref().and_then(|s| serde_json::to_value(s).ok());
    let s = spec.as_ref();
    let mut row = Row::new();
    row.set("game", Value::Text(info.id.clone()))
        .set("sweep", Value::Text(info.sweep.clone()))
        .set("seq", Value::Int(info.seq))
        .set("arm", Value::Text(info.arm.clone()))
        .set("arm_label", Value::Text(info.arm_label.clone()))
        .set("repeat", Value::Int(info.repeat))
        .set("state", Value::Text(info.state.clone()))
        .set("attempts", Value::Int(info.attempts))
        .set("finished_at", Value::time(&info.updated_at))
        .set("game_id", Value::Text(r.game_id.clone()))
        .set("script", Value::Text(r.script.clone()))
        .set("script_path", Value::text(rec.script_path.as_deref()))
        .set("script_digest", Value::text(rec.script_digest.as_deref()))
        .set("protocol", Value::Text(r.protocol.clone()))
        .set("framework", Value::Text(r.framework.clone()))
        .set(
            "murderer_framework",
            Value::text(r.murderer_framework.as_deref()),
        )
        .set("modules", Value::Text(r.modules.clone()))
        .set("module_mr", f::boolean(s, "/agent/modules/mr"))
        .set("module_sr", f::boolean(s, "/agent/modules/sr"))
        .set("module_sv", f::int(s, "/agent/modules/sv"))
        .set("model", Value::Text(r.model.clone()))
        .set("murderer_model", f::text(s, "/murderer_model"))
        .set("provider", Value::Text(r.provider.clone()))
        // The seed's bits, as the store keeps them: seeds past i64::MAX read negative.
        .set("seed", Value::Int(r.seed as i64))
        .set("temperature", f::float(s, "/agent/temperature"))
        .set("top_p", f::float(s, "/agent/top_p"))
        .set("top_k", f::int(s, "/agent/top_k"))
        .set("max_tokens", f::int(s, "/agent/max_tokens"))
        .set("eval_max_tokens", f::int(s, "/agent/eval_max_tokens"));
    protocol_settings(&mut row, s);
    row.set("judge_model", f::text(s, "/judge/llm"))
        .set("judge_threshold", f::float(s, "/judge/lexical/threshold"))
        .set(
            "judge_factual",
            Value::text(r.judges.get("factual").map(String::as_str)),
        )
        .set(
            "judge_rationale",
            Value::text(r.judges.get("rationale").map(String::as_str)),
        )
        .set(
            "judge_mirage",
            Value::text(r.judges.get("mirage").map(String::as_str)),
        )
        .set("eval_repeats", f::int(s, "/eval_repeats"))
        .set("rationale_threshold", f::int(s, "/rationale_threshold"))
        .set("embedder", f::as_text(s, "/embedder"))
        .set("language", f::as_text(s, "/language"))
        .set("prompts_dir", f::text(s, "/prompts_dir"))
        .set(
            "spec_json",
            Value::text(spec.as_ref().map(Json::to_string).as_deref()),
        );
    outcome(&mut row, r);
    metrics(&mut row, r);
    usage(&mut row, r);
    row.set("events", Value::count(r.events as u64))
        .set("duration_seconds", Value::float(Some(r.duration_seconds)))
        .set("settings_json", Value::Text(r.settings.to_string()));
    row
}

/// Each protocol's settings, from the spec (the settings of every protocol are recorded; only the
/// game's own protocol's were played).
fn protocol_settings(row: &mut Row, s: Option<&Json>) {
    row.set(
        "rounds_before_clues",
        f::int(s, "/protocol/thinkthrice/rounds_before_clues"),
    )
    .set(
        "rounds_after_clues",
        f::int(s, "/protocol/thinkthrice/rounds_after_clues"),
    )
    .set(
        "initial_questioning",
        f::boolean(s, "/protocol/thinkthrice/initial_questioning"),
    )
    .set("rounds", f::int(s, "/protocol/wellplay/rounds"))
    .set(
        "questions_per_round",
        f::int(s, "/protocol/wellplay/questions_per_round"),
    )
    .set("iterations", f::int(s, "/protocol/mirage/iterations"))
    .set(
        "force_expose",
        f::boolean(s, "/protocol/mirage/force_expose"),
    )
    .set(
        "script_summary_tokens",
        f::int(s, "/protocol/mirage/script_summary_tokens"),
    )
    .set(
        "history_tokens",
        f::int(s, "/protocol/mirage/history_tokens"),
    )
    .set("stage_every", f::int(s, "/protocol/mirage/stage_every"));
}

/// The vote and what each protocol made of it.
fn outcome(row: &mut Row, r: &GameResult) {
    let majority = r.majority.as_ref();
    let mirage = r.mirage.as_ref();
    let winner = |w: Option<sleuth_game::game::Winner>| Value::text(w.map(|w| w.as_str()));
    row.set("winner", winner(r.winner))
        .set("murderers", Value::TextList(r.murderers.clone()))
        .set(
            "human_seats",
            Value::TextList(r.seats.keys().cloned().collect()),
        )
        .set("votes_cast", Value::count(r.votes.len() as u64))
        .set(
            "murderer_detection_accuracy",
            Value::float(Some(r.murderer_detection_accuracy)),
        )
        .set(
            "majority_winner",
            winner(majority.map(|m| m.majority_winner)),
        )
        .set(
            "plurality_winner",
            winner(majority.map(|m| m.plurality_winner)),
        )
        .set(
            "eliminated",
            majority.map_or(Value::Null, |m| Value::TextList(m.eliminated.clone())),
        )
        .set("voting", Value::float(majority.map(|m| m.voting())))
        .set(
            "ballot_accuracy",
            Value::float(majority.and_then(|m| m.ballot_accuracy())),
        )
        .set("victory", Value::float(mirage.map(|m| m.victory)))
        .set(
            "accusations",
            opt_count(mirage.map(|m| m.accusations.len())),
        )
        .set(
            "clues_available",
            opt_count(mirage.map(|m| m.clues_available)),
        )
        .set(
            "key_clues_available",
            opt_count(mirage.map(|m| m.key_clues_available)),
        )
        .set(
            "clues_investigated",
            opt_count(mirage.map(|m| m.investigations())),
        )
        .set(
            "forced_exposure",
            mirage.map_or(Value::Null, |m| Value::Bool(m.forced_exposure)),
        );
}

fn opt_count(n: Option<usize>) -> Value {
    n.map_or(Value::Null, |n| Value::count(n as u64))
}

/// ThinkThrice's factual and inferential scores, WellPlay's multiple-choice points, MIRAGE's indices.
fn metrics(row: &mut Row, r: &GameResult) {
    let fact = &r.factual;
    let count = |k: &str| opt_count(fact.counts.get(k).copied());
    row.set("factual_own", Value::float(fact.own))
        .set("factual_cq", Value::float(fact.cq))
        .set("factual_mq", Value::float(fact.mq))
        .set("factual_others", Value::float(fact.others))
        .set("factual_own_questions", count("own"))
        .set("factual_cq_questions", count("cq"))
        .set("factual_mq_questions", count("mq"))
        .set("inferential_accuracy", Value::float(r.inferential_accuracy))
        .set("informed_accuracy", Value::float(r.informed_accuracy))
        .set("rationale_score", Value::float(r.rationale_score));
    let choice = r.choice.as_ref();
    let overall = choice.map(|c| &c.overall);
    row.set(
        "choice_score",
        Value::float(overall.and_then(ChoiceTally::score)),
    )
    .set(
        "choice_score_std",
        Value::float(choice.and_then(|c| c.score_mean_std()).map(|(_, sd)| sd)),
    )
    .set(
        "choice_accuracy",
        Value::float(overall.and_then(ChoiceTally::accuracy)),
    )
    .set(
        "choice_points",
        opt_count(overall.map(|t| t.points as usize)),
    )
    .set(
        "choice_possible",
        opt_count(overall.map(|t| t.possible as usize)),
    )
    .set("choice_correct", opt_count(overall.map(|t| t.correct)))
    .set("choice_questions", opt_count(overall.map(|t| t.questions)))
    .set(
        "choice_repeats",
        opt_count(choice.map(|c| c.repeats as usize)),
    );
    for cat in CATEGORIES {
        let t = choice.and_then(|c| c.by_category.get(cat));
        let (acc, points, possible) = category_columns(cat);
        row.set(acc, Value::float(t.and_then(ChoiceTally::accuracy)))
            .set(points, opt_count(t.map(|t| t.points as usize)))
            .set(possible, opt_count(t.map(|t| t.possible as usize)));
    }
    let m = r.mirage_scores.as_ref();
    row.set(
        "tii_trust_share",
        Value::float(m.and_then(|m| m.tii_trust_share)),
    )
    .set(
        "tii_suspicion_share",
        Value::float(m.and_then(|m| m.tii_suspicion_share)),
    )
    .set("cic", Value::float(m.and_then(|m| m.cic)))
    .set("cic_key", Value::float(m.and_then(|m| m.cic_key)))
    .set("ici", Value::float(m.and_then(|m| m.ici)))
    .set("sci", Value::float(m.and_then(|m| m.sci)));
}

/// A category's column names (static, as the schema's are).
fn category_columns(cat: &str) -> (&'static str, &'static str, &'static str) {
    match cat {
        "objective" => (
            "choice_objective_accuracy",
            "choice_objective_points",
            "choice_objective_possible",
        ),
        "reasoning" => (
            "choice_reasoning_accuracy",
            "choice_reasoning_points",
            "choice_reasoning_possible",
        ),
        _ => (
            "choice_relations_accuracy",
            "choice_relations_points",
            "choice_relations_possible",
        ),
    }
}

/// The whole game's calls, tokens and cost, then each phase's.
fn usage(row: &mut Row, r: &GameResult) {
    let u = &r.usage;
    row.set("calls", Value::count(u.calls))
        .set("prompt_tokens", Value::count(u.prompt_tokens))
        .set("completion_tokens", Value::count(u.completion_tokens))
        .set("cached_tokens", Value::count(u.cached_tokens))
        .set("cost_usd", Value::float(Some(u.cost_usd)))
        .set("retries", Value::count(u.retries))
        .set("parse_failures", Value::count(u.parse_failures))
        .set("truncated", Value::count(u.truncated))
        .set(
            "cacheable_prompt_tokens",
            u.cacheable_prompt_tokens.map_or(Value::Null, Value::count),
        );
    phase(row, &r.usage_by_phase.gameplay, GAMEPLAY);
    phase(row, &r.usage_by_phase.evaluation, EVALUATION);
}

const GAMEPLAY: [&str; 6] = [
    "gameplay_calls",
    "gameplay_prompt_tokens",
    "gameplay_completion_tokens",
    "gameplay_cached_tokens",
    "gameplay_cost_usd",
    "gameplay_retries",
];
const EVALUATION: [&str; 6] = [
    "evaluation_calls",
    "evaluation_prompt_tokens",
    "evaluation_completion_tokens",
    "evaluation_cached_tokens",
    "evaluation_cost_usd",
    "evaluation_retries",
];

fn phase(row: &mut Row, u: &Usage, names: [&'static str; 6]) {
    row.set(names[0], Value::count(u.calls))
        .set(names[1], Value::count(u.prompt_tokens))
        .set(names[2], Value::count(u.completion_tokens))
        .set(names[3], Value::count(u.cached_tokens))
        .set(names[4], Value::float(Some(u.cost_usd)))
        .set(names[5], Value::count(u.retries));
}
