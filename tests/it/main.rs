//! sleuth's integration tests, as one test binary.
//!
//! Each module was once its own file under `tests/` and so its own binary, each linking the whole
//! library and every dependency: fifty links of the same code were a third of a cold
//! `scripts/test.sh`. As modules of one crate they link once (issue 31). A module keeps its old name,
//! so `cargo test --test it golden` runs what `cargo test --test golden` ran.
//!
//! Tests that need a service (Redis, Prometheus, Chromium, llama.cpp) start their own on a free port;
//! under `CI=true` a missing service fails the test instead of skipping it (`common::skip_or_fail`).

mod common;

mod adaptive_play;
mod analysis;
mod baselines;
mod batch_eval;
mod chinese;
mod choice_rules;
mod cli;
mod cluster;
mod cluster_api;
mod cluster_budget;
mod cluster_gate;
mod cluster_limits;
mod cluster_queue;
mod cluster_secrets;
mod cluster_submission;
mod context_window;
mod dashboards;
mod deploy;
mod evaluation;
mod export;
mod first_build;
mod frameworks;
mod game;
mod golden;
mod human_seat;
mod human_seat_sweep;
mod human_seat_zh;
mod humans;
mod humans_questions;
mod import_mirage;
mod import_mirage_full;
mod import_wellplay;
mod import_wellplay_full;
mod imported;
mod kept_requests;
mod layers;
mod ledger_outage;
mod metrics;
mod mirage;
mod mock_cheap;
mod parallel;
mod player;
mod prompt_cache;
mod questions;
mod real_model;
mod report;
mod report_judges;
mod report_mirage;
mod report_modules;
mod report_player;
mod robustness;
mod store;
mod store_redis;
mod structured_fallback;
mod suspects;
mod sweep;
mod sweep_budget;
mod tokenized;
mod tournament;
mod victims;
mod viewer;
mod viewer_cluster;
