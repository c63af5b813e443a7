#!/usr/bin/env bash
# The project's test command (README): formatting, lints, and every test, on a fresh machine.
# Installs what the tests need from the system (promtool from Debian's prometheus package, and a
# TrueType font for the report's PNG plots).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-promtool.sh
scripts/ensure-fonts.sh
scripts/ensure-redis.sh
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --lib --bins --tests
# Doc tests: the compile-fail examples show that an agent cannot reach the truth (agent/view.rs).
cargo test --doc
