#!/usr/bin/env bash
# The budget under load (issue 23, item 1): a sweep of many games queued behind a model's few slots,
# with a budget the whole sweep fits in, must finish and spend no more than the cap. Figures and how
# to read them: docs/performance.md ("The budget under load").
#
#   scripts/bench-budget.sh [--games N] [--max-concurrency C] [--in-flight G] [--latency-ms L] [--keep]
#
# Defaults: 2,000 WellPlay O-CoT games of examples/orchard-press.toml (one round), all of them in
# flight (--in-flight 2000), against `sleuth mock-llm --max-concurrency 50 --latency-ms 20`, the
# sweep's model limited to max_concurrency = 50 too.
#
# Two runs of the same sweep, each in its own directory (so the second is all live calls):
#   1. without a budget: what the sweep costs, in tokens;
#   2. with [budget] max_tokens = that cost + 1 % (room for one more call's bound): it must end
#      `Finished` with every game done, having spent exactly the first run's tokens.
# It prints both runs' summary lines and wall times, and exits non-zero if run 2 stopped.
# Environment: SLEUTH_BIN (default: target/release/sleuth, built first). Never part of the test suite.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

games=2000 conc=50 inflight="" latency=20 keep=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --games) games=$2; shift ;;
        --max-concurrency) conc=$2; shift ;;
        --in-flight) inflight=$2; shift ;;
        --latency-ms) latency=$2; shift ;;
        --keep) keep=1 ;;
        -h | --help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-budget: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
inflight=${inflight:-$games}

if [[ -n ${SLEUTH_BIN:-} ]]; then
    BIN=$SLEUTH_BIN
else
    cargo build --release --bin sleuth
    BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/sleuth"
fi
BIN=$(realpath "$BIN")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sleuth-bench-budget.XXXXXX")
mock_pid=""
cleanup() {
    [[ -n $mock_pid ]] && kill "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [[ $keep = 1 ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

"$BIN" mock-llm --listen 127.0.0.1:0 --max-concurrency "$conc" --latency-ms "$latency" \
    >"$WORK/mock.out" 2>"$WORK/mock.err" &
mock_pid=$!
for _ in $(seq 100); do
    url=$(grep -o 'http://[^ ]*/v1' "$WORK/mock.out" || true)
    [[ -n $url ]] && break
    sleep 0.1
done
[[ -n $url ]] || { echo "bench-budget: the mock did not start" >&2; exit 1; }

# sweep_file DIR BUDGET_TABLE
sweep_file() {
    cat >"$1/sweep.toml" <<EOF
name = "budget"
out = "$1/run"
scripts = ["$ROOT/examples/orchard-press.toml"]
repeats = $games
seed = 1
concurrency = $inflight
[game]
protocol = "wellplay"
framework = "ocot"
rounds = 1
model = "m"
[evaluation]
repeats = 1
[models.m]
provider = "openai"
base_url = "$url"
model = "sim-1"
api_key_env = "PATH"
max_concurrency = $conc
$2
EOF
}

run() { # run DIR → prints the summary; sets $spent_tokens and $wall
    local start end
    start=$(date +%s.%N)
    set +e
    "$BIN" sweep run --quiet "$1/sweep.toml" >"$1/out.txt" 2>"$1/err.txt"
    status=$?
    set -e
    end=$(date +%s.%N)
    wall=$(echo "$end - $start" | bc)
    cat "$1/out.txt"
    spent_tokens=$(grep -o 'spent \$[0-9.]* and [0-9]* tokens' "$1/out.txt" | grep -o '[0-9]* tokens' | grep -o '[0-9]*')
}

mkdir -p "$WORK/free" "$WORK/capped"
echo "== run 1: $games games, no budget (max_concurrency $conc, $inflight in flight, mock latency ${latency} ms)"
sweep_file "$WORK/free" ""
run "$WORK/free"
need=$spent_tokens
echo "wall ${wall} s; the sweep costs $need tokens"

cap=$((need + need / 100))
echo "== run 2: the same sweep with [budget] max_tokens = $cap"
sweep_file "$WORK/capped" "[budget]
max_tokens = $cap"
run "$WORK/capped"
echo "wall ${wall} s; spent $spent_tokens of $cap tokens (exit status $status)"
if [[ $status != 0 ]] || ! grep -q 'Finished' "$WORK/capped/out.txt"; then
    echo "bench-budget: FAILED — the sweep fits its budget but stopped" >&2
    exit 1
fi
if (( spent_tokens > cap )); then
    echo "bench-budget: FAILED — spent past the cap" >&2
    exit 1
fi
echo "bench-budget: ok"
