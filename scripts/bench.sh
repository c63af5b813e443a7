#!/usr/bin/env bash
# Runs sleuth's benchmarks (release build): memory retrieval first, then the gateway and whole games,
# then the gateway with every sweep layer on (a two-line prompt, then prompts of 1k, 8k and 32k
# tokens). Extra arguments go to cargo bench, e.g. `scripts/bench.sh -- --quick` or
# `scripts/bench.sh -- --warm-up-time 1 --measurement-time 3`.
# See docs/benchmarks.md.
#
# `scripts/bench.sh --sweep [SCENARIO...] [OPTIONS]` runs the sweep load benchmarks instead
# (scripts/bench-sweep.sh: thousands of games against sleuth mock-llm; docs/performance.md).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ ${1:-} == --sweep ]]; then
    shift
    exec scripts/bench-sweep.sh "${@:-throughput}"
fi

echo "== machine: $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"
echo "== cargo bench --bench memory $*"
cargo bench --bench memory "$@"
echo "== cargo bench --bench game $*"
cargo bench --bench game "$@"
echo "== cargo bench --bench gateway $*"
cargo bench --bench gateway "$@"
echo "== cargo bench --bench gateway_prompt $*"
cargo bench --bench gateway_prompt "$@"

echo
target_dir="${CARGO_TARGET_DIR:-target}"
echo "Criterion reports: ${target_dir}/criterion (open ${target_dir}/criterion/report/index.html)"
