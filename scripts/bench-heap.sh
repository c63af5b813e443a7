#!/usr/bin/env bash
# The heap of a sweep under heaptrack (issue 32; figures and how to read them: docs/performance.md,
# section 9): N orchard-press games (O-CoT, one round, as scripts/bench-sweep.sh plays them) in flight
# at once against `sleuth mock-llm --replies cheap` at 1 s latency, run to the end under heaptrack.
# Prints the peak heap (the evaluation peak of every game at once included), the peak per game, the
# number of allocations, and where the peak and the allocations are by the innermost sleuth function
# on the stack (a call site in a dependency is named by the sleuth function that called into it).
#
#   scripts/bench-heap.sh [--games N] [--max-concurrency C] [--top K] [--keep] [BIN]
#
#   --games N   games in flight [1000]
#   --max-concurrency C
#               the mock's concurrency limit, also the sweep's max_concurrency for the model [N]: at
#               C < N most calls wait for a slot, as in scripts/bench-sweep.sh's throughput scenario
#   --top K     rows of each table [25]
#   --keep      keep the temporary directory (heaptrack's file, the sweep, its run directory)
#   BIN         the sleuth binary [target/release/sleuth, built first without the `jemalloc` feature]
#
# heaptrack sees the allocations that go through malloc; a build with jemalloc as its allocator (the
# default build) goes around it, so BIN must be built without that feature:
#   cargo build --release --bin sleuth --no-default-features --features cluster,view,mock-llm
#
# Compare two builds one after the other on a quiet machine (the heap is not noisy; the allocation
# count is exact for a given build and sweep). Needs Debian's heaptrack (`apt-get install heaptrack`).
# A benchmark, not a test: nothing in `cargo test` runs it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
# shellcheck source=lib/bench-sweep-file.sh
source "$ROOT/scripts/lib/bench-sweep-file.sh"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit "${1:-0}"; }

games=1000 conc="" top=25 keep=0 BIN=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --games) games=$2; shift ;;
        --max-concurrency) conc=$2; shift ;;
        --top) top=$2; shift ;;
        --keep) keep=1 ;;
        -h | --help) usage 0 ;;
        -*) echo "bench-heap: unknown option '$1'" >&2; usage 2 ;;
        *) BIN=$1 ;;
    esac
    shift
done
conc=${conc:-$games}
for tool in heaptrack heaptrack_print python3; do
    command -v "$tool" >/dev/null || { echo "bench-heap: '$tool' is not installed" >&2; exit 1; }
done
if [[ -z $BIN ]]; then
    cargo build --release --bin sleuth --no-default-features --features cluster,view,mock-llm
    BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/sleuth"
fi
BIN=$(realpath "$BIN")
# jemalloc's messages are in the binary that links it.
if grep -qa '<jemalloc>' "$BIN"; then
    echo "bench-heap: $BIN allocates with jemalloc, which heaptrack does not see; build it without the" >&2
    echo "bench-heap: feature: cargo build --release --bin sleuth --no-default-features --features cluster,view,mock-llm" >&2
    exit 2
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sleuth-bench-heap.XXXXXX")
MOCK_PID=""
cleanup() {
    [[ -n $MOCK_PID ]] && kill "$MOCK_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    if [[ $keep = 1 ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

"$BIN" mock-llm --listen 127.0.0.1:0 --latency-ms 1000 --replies cheap --max-concurrency "$conc" \
    >"$WORK/mock.out" 2>"$WORK/mock.err" &
MOCK_PID=$!
URL=""
for _ in $(seq 100); do
    URL=$(sed -n 's/.* on \(http[^ ]*\) .*/\1/p' "$WORK/mock.out")
    [[ -n $URL ]] && break
    sleep 0.1
done
[[ -n $URL ]] || { echo "bench-heap: the mock did not start:" >&2; cat "$WORK/mock.err" >&2; exit 1; }

bench_sweep_file "$WORK/sweep.toml" heap "$WORK/run" "$ROOT/examples/orchard-press.toml" "$games" "$games" \
    "$URL" "$conc"

echo "== sleuth: $BIN; $games games in flight, mock at $URL (at most $conc calls at once)"
heaptrack -o "$WORK/heap" "$BIN" sweep run "$WORK/sweep.toml" --concurrency "$games" --quiet \
    >"$WORK/sweep.out" 2>"$WORK/sweep.err" || { echo "bench-heap: the sweep failed:" >&2; tail "$WORK/sweep.err" >&2; exit 1; }
data=""
for f in "$WORK"/heap*.zst "$WORK"/heap*.gz; do
    if [[ -f $f ]]; then data=$f; break; fi
done
[[ -n $data ]] || { echo "bench-heap: heaptrack wrote no data file in $WORK" >&2; exit 1; }
heaptrack_print -f "$data" -p 0 -a 0 -l 0 -T 0 >"$WORK/summary.txt"
heaptrack_print -f "$data" -p 0 -a 0 -l 0 -T 0 -F "$WORK/peak.stacks" --flamegraph-cost-type peak >/dev/null
heaptrack_print -f "$data" -p 0 -a 0 -l 0 -T 0 -F "$WORK/calls.stacks" --flamegraph-cost-type allocations >/dev/null

python3 - "$WORK" "$games" "$top" <<'PY'
import collections, re, sys
work, games, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
summary = open(f"{work}/summary.txt").read()
def field(name):
    m = re.search(rf"^{name}: ([^\n(]+)", summary, re.M)
    return m.group(1).strip() if m else "?"
print(f"peak heap: {field('peak heap memory consumption')}; allocations: {field('calls to allocation functions')}")
def readable(frame):
    # Legacy Rust mangling as heaptrack prints it, without the hash.
    frame = re.sub(r"::h[0-9a-f]{16}$", "", frame)
    for a, b in (("_$LT$", "<"), ("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$u7b$", "{"),
                 ("$u7d$", "}"), ("$C$", ","), ("$RF$", "&"), ("..", "::")):
        frame = frame.replace(a, b)
    return frame
def by_site(path):
    # A stack is root-first, frames joined by ';', then its cost; a site is its innermost sleuth frame.
    out, total = collections.Counter(), 0
    for line in open(path):
        stack, _, cost = line.rstrip("\n").rpartition(" ")
        frames = [readable(f) for f in stack.split(";") if f.strip()] or ["?"]
        ours = [f for f in frames if "sleuth" in f]
        site = ours[-1] if ours else "(outside sleuth) " + frames[-1]
        out[site[:110]] += int(cost)
        total += int(cost)
    return out, total
peak, peak_total = by_site(f"{work}/peak.stacks")
print(f"peak per game: {peak_total / games / 1024:.1f} KiB (the process's own share included)")
print("\n-- the peak by innermost sleuth function (KiB per game; the process's one-off tables count")
print("   here too, divided among the games: jieba's dictionary under rouge_l, cl100k's under bpe_encode)")
for site, cost in peak.most_common(top):
    print(f"{cost / games / 1024:8.1f}  {site}")
calls, calls_total = by_site(f"{work}/calls.stacks")
print(f"\n-- allocations by innermost sleuth function (per game; {calls_total / games:.0f} in all)")
for site, n in calls.most_common(top):
    print(f"{n / games:8.0f}  {100 * n / calls_total:5.1f} %  {site}")
PY
