#!/usr/bin/env bash
# CPU per game and per model call of `sleuth play`, for one or more builds side by side (issue 32;
# figures and how to read them: docs/performance.md, section 9). Each build plays the same game, one
# after the other, and the script prints its wall time, CPU seconds (user + system, from
# /usr/bin/time) and CPU per call.
#
#   scripts/bench-game-cpu.sh [OPTIONS] SCRIPT BIN [BIN...]
#
#   --premise-kb N   add N KB of generated note lines to the script's premise first (the long-prompt
#                    case: every call of every character then carries N KB more)
#   --mock           play against `sleuth mock-llm` (started from the first BIN, on a free port, with
#                    its default simulated replies) over HTTP instead of the in-process simulated
#                    model: the CPU counted is sleuth's alone, as against a real endpoint
#   --repeat N       play each build N times, alternating builds, and print every run [1]
#   -- ARGS          further arguments for `sleuth play` (e.g. -- --protocol mirage)
#
# Example: the old build beside the new one (build the old one in a worktree first):
#   git worktree add /tmp/old REV && (cd /tmp/old && CARGO_TARGET_DIR=/tmp/old-target cargo build --release --bin sleuth)
#   scripts/bench-game-cpu.sh --premise-kb 200 examples/orchard-press.toml /tmp/old-target/release/sleuth target/release/sleuth
# A benchmark, not a test: nothing in `cargo test` runs it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() { sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

premise_kb=0 mock=0 repeat=1 play_args=() positional=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --premise-kb) premise_kb=$2; shift ;;
        --mock) mock=1 ;;
        --repeat) repeat=$2; shift ;;
        --) shift; play_args=("$@"); break ;;
        -h | --help) usage 0 ;;
        -*) echo "bench-game-cpu: unknown option '$1'" >&2; usage 2 ;;
        *) positional+=("$1") ;;
    esac
    shift
done
[[ ${#positional[@]} -ge 2 ]] || usage 2
script=$(realpath "${positional[0]}")
bins=()
for b in "${positional[@]:1}"; do bins+=("$(realpath "$b")"); done
[[ -x /usr/bin/time ]] || { echo "bench-game-cpu: needs /usr/bin/time (Debian package time)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sleuth-bench-game-cpu.XXXXXX")
mock_pid=""
cleanup() {
    [[ -n $mock_pid ]] && kill "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

if [[ $premise_kb -gt 0 ]]; then
    # The premise is the first multi-line string of the script (`premise = """`): note lines are
    # added at its end, each a plain sentence the simulated model reads like any other.
    python3 - "$script" "$WORK/script.toml" "$premise_kb" <<'PY'
import sys
src, dst, kb = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(src, encoding="utf-8").read()
start = text.index('premise = """') + len('premise = """')
end = text.index('"""', start)
places = ["the mill", "the lane", "the station", "the chapel", "the market", "the bridge", "the yard"]
things = ["a lamp", "a ledger", "a parcel", "a bicycle", "a letter", "a key", "a cart"]
notes, size, i = [], 0, 0
while size < kb * 1024:
    line = (f"Note {i}: at {7 + i % 12} o'clock someone saw {things[i % len(things)]} near "
            f"{places[(i // 7) % len(places)]}, which the town remembered for week {i // 50}.")
    notes.append(line)
    size += len(line) + 1
    i += 1
out = text[:end].rstrip("\n") + "\n" + "\n".join(notes) + "\n" + text[end:]
open(dst, "w", encoding="utf-8").write(out)
PY
    script="$WORK/script.toml"
    echo "== $premise_kb KB added to the premise of ${positional[0]} ($(wc -c <"$script") bytes)"
fi

llm_args=()
if [[ $mock = 1 ]]; then
    "${bins[0]}" mock-llm --listen 127.0.0.1:0 >"$WORK/mock.log" 2>&1 &
    mock_pid=$!
    for _ in $(seq 100); do
        grep -q "serving" "$WORK/mock.log" && break
        sleep 0.1
    done
    base=$(sed -n 's/.* on \(http[^ ]*\) .*/\1/p' "$WORK/mock.log" | head -n 1)
    [[ -n $base ]] || { echo "bench-game-cpu: the mock did not start:" >&2; cat "$WORK/mock.log" >&2; exit 1; }
    export SLEUTH_BENCH_KEY=unused
    llm_args=(--provider openai --base-url "$base" --api-key-env SLEUTH_BENCH_KEY --model sim-1)
    echo "== against sleuth mock-llm at $base"
fi

echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$repeat"); do
    for i in "${!bins[@]}"; do
        out="$WORK/run-$r-$i"
        /usr/bin/time -f '%e %U %S' -o "$WORK/time" \
            "${bins[$i]}" play "$script" --out "$out" "${llm_args[@]}" "${play_args[@]}" >/dev/null
        read -r wall user sys <"$WORK/time"
        calls=$(python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["usage"]; print(u.get("calls", 0))' "$out/result.json")
        python3 - "${bins[$i]}" "$wall" "$user" "$sys" "$calls" <<'PY'
import sys
b, wall, user, sys_, calls = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
cpu = user + sys_
per = f"{cpu / calls * 1000:.2f} ms CPU per call" if calls else "no calls counted"
print(f"{b}: {wall:.2f} s wall, {cpu:.2f} CPU-s, {calls} calls, {per}")
PY
    done
done
