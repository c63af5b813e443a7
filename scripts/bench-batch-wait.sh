#!/usr/bin/env bash
# Memory per game waiting on a batch (issue 20): a sweep whose evaluation goes through the Batch
# API against `sleuth mock-llm --batch-delay-ms` long enough that no batch comes back during the
# measurement. Every game plays, defers its evaluation and waits; the sweep process's resident
# memory is read when N games wait, for two sizes of N at the same concurrency: the difference
# divided by the difference of N is what the process holds per game played and waiting. The same
# is measured for the same sweep played live to the end (`--linger-secs` keeps the process up):
# what a process keeps per game played whatever becomes of it (the prefix tracker's hashes, the
# plan's specs, the allocator). A waiting game's own memory is the difference of the two slopes
# (the goal: ≤ 16 KiB).
# Figures and how to read them: docs/performance.md ("Games waiting on a batch").
#
#   scripts/bench-batch-wait.sh [--small N] [--large N] [--in-flight G] [--flush-calls F] [--keep]
#
# Defaults: 100 and 1,000 WellPlay O-CoT games of examples/orchard-press.toml (one round), 50 in
# flight. Environment: SLEUTH_BIN (default: target/release/sleuth, built first). Never part of the
# test suite.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

small=100 large=1000 inflight=50 flush=5000 keep=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --small) small=$2; shift ;;
        --large) large=$2; shift ;;
        --in-flight) inflight=$2; shift ;;
        --flush-calls) flush=$2; shift ;;
        --keep) keep=1 ;;
        -h | --help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-batch-wait: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done

if [[ -n ${SLEUTH_BIN:-} ]]; then
    BIN=$SLEUTH_BIN
else
    cargo build --release --bin sleuth
    BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/sleuth"
fi
BIN=$(realpath "$BIN")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sleuth-bench-batch.XXXXXX")
mock_pid="" sweep_pid=""
cleanup() {
    [[ -n $sweep_pid ]] && kill -9 "$sweep_pid" 2>/dev/null || true
    [[ -n $mock_pid ]] && kill "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [[ $keep = 1 ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# Batches stay in progress for an hour: nothing comes back while the games are counted.
"$BIN" mock-llm --listen 127.0.0.1:0 --batch-delay-ms 3600000 \
    >"$WORK/mock.out" 2>"$WORK/mock.err" &
mock_pid=$!
for _ in $(seq 100); do
    url=$(grep -o 'http://[^ ]*/v1' "$WORK/mock.out" || true)
    [[ -n $url ]] && break
    sleep 0.1
done
[[ -n $url ]] || { echo "bench-batch-wait: the mock did not start" >&2; exit 1; }

# measure N batch|live → prints "N games waiting|done: RSS KiB" and sets $rss
measure() {
    local n=$1 mode=$2 dir="$WORK/$2$1" batch=true want="evaluating (batch)" linger=()
    if [[ $mode == live ]]; then
        batch=false want="done" linger=(--linger-secs 3600)
    fi
    mkdir -p "$dir"
    cat >"$dir/sweep.toml" <<EOF
name = "wait"
out = "$dir/run"
scripts = ["$ROOT/examples/orchard-press.toml"]
repeats = $n
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
batch = $batch
[batch]
flush_calls = $flush
flush_secs = 1
poll_secs = 3600
EOF
    "$BIN" sweep run --quiet "${linger[@]}" "$dir/sweep.toml" >"$dir/out.txt" 2>"$dir/err.txt" &
    sweep_pid=$!
    local start waiting=0
    start=$(date +%s)
    until [[ $waiting == "$n" ]]; do
        sleep 1
        waiting=$("$BIN" sweep status "$dir/run" 2>/dev/null | grep -o "[0-9]* $want" | head -1 | grep -o '^[0-9]*' || echo 0)
        if (( $(date +%s) - start > 1800 )); then
            echo "bench-batch-wait: only $waiting of $n games waiting after 30 min" >&2
            exit 1
        fi
    done
    sleep 2 # the last game's actors are gone, the allocator settles
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$sweep_pid/status")
    echo "$mode: $n games $want (played in $(( $(date +%s) - start )) s, $inflight in flight): RSS $rss KiB"
    kill -9 "$sweep_pid"
    wait "$sweep_pid" 2>/dev/null || true
    sweep_pid=""
}

slope() { # slope MODE → prints and sets $per
    measure "$small" "$1"
    local a=$rss
    measure "$large" "$1"
    per=$(echo "scale=2; ($rss - $a) / ($large - $small)" | bc)
    echo "$1: $per KiB per game (($rss - $a) KiB / ($large - $small) games)"
}
slope batch
batch_per=$per
slope live
live_per=$per
echo "memory per waiting game: $(echo "scale=2; $batch_per - $live_per" | bc) KiB ($batch_per KiB per game waiting − $live_per KiB per game played live to the end)"
