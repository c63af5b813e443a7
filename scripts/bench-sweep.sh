#!/usr/bin/env bash
# Load benchmarks of `sleuth sweep run` on one node, against `sleuth mock-llm` (issue 11's targets;
# commands, figures and how to read them: docs/performance.md). Each scenario starts its own mock on
# a free port, writes a sweep file to a temporary directory, runs the sweep, samples the sweep's RSS
# (/proc/PID/status), both processes' CPU time (/proc/PID/stat), the mock's /stats and the sweep's
# games in flight (its Prometheus endpoint), and prints one summary line per target.
#
# The mock answers with `--replies cheap` unless told otherwise: replies valid for every shape the
# games ask, without tokenizing or reading the prompt (docs/mock-llm.md), so that the CPU measured is
# sleuth's, not the simulated model's (issue 32). `--mock-replies simulated` measures against the
# simulated model as before; the CPU line shows each process's share either way.
#
#   scripts/bench-sweep.sh throughput        # target 1 (and 3 with the hashing embedder): 5,000 games in flight
#   scripts/bench-sweep.sh memory1536        # target 3 with 1,536-dim embeddings from the mock
#   scripts/bench-sweep.sh huge              # target 2: 20,000 games in flight, run to the end
#   scripts/bench-sweep.sh rounds            # target 5: rounds 1..5, live calls with and without the cache
#   scripts/bench-sweep.sh all               # all four, in that order
#   scripts/bench-sweep.sh --mock-replies simulated throughput --mock-replies cheap throughput
#                                            # the mock's own cost: the same scenario in both modes
#
# Options (defaults in brackets) apply to the scenarios after them on the command line:
#   --games N            games in flight [throughput/memory1536: 5000, huge: 20000, rounds: 20 seeds]
#   --latency-ms L       the mock's latency [1000; huge: 20]
#   --max-concurrency C  the mock's concurrency limit, also the sweep's max_concurrency for the model
#                        [throughput: 300; memory1536: 300; huge: 400]
#   --mock-replies MODE  how the mock answers: cheap or simulated [cheap]
#   --script FILE        the script every game plays [examples/orchard-press.toml]
#   --game-concurrency N model calls one game may have in flight, the sweep file's
#                        `[gateway] game_concurrency` [unset: the game's default, 16]
#   --no-keep-requests   the sweep file's `[gateway] keep_requests = false`: no request kept for the
#                        viewer and the export (what keeping them costs: docs/performance.md, section 9)
#   --no-cache           the sweep file's `[gateway] cache = false`: no answer stored (and so no request
#                        kept), only the ledger written: with the two above, what the store costs a call
#   --warmup S           seconds after every game has started before the window opens [30]
#   --window S           the steady window measured [120]
#   --finish             let throughput/memory1536 run to the end instead of stopping after the window
#   --keep               keep the temporary directory (sweep files, run directories, samples)
# Environment: SLEUTH_BIN (default: target/release/sleuth, built first with cargo build --release).
#              MOCK_BIN (default: SLEUTH_BIN): the binary that serves `mock-llm`, so that an old build
#              (one without `--replies cheap`) is measured against the same mock as the new one.
#
# A long run: the throughput scenario takes about warm-up + window + ramp (5 minutes with the
# defaults); huge runs until its 20,000 games are done. Never part of the test suite.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
# shellcheck source=lib/bench-sweep-file.sh
source "$ROOT/scripts/lib/bench-sweep-file.sh"

# The header comment above, without its `#`s.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit "${1:-0}"; }

scenarios=()
games="" latency="" conc="" replies=cheap script="examples/orchard-press.toml" warmup=30 window=120
finish=0 keep=0 gamec="" keepreq=1 cache=1
while [[ $# -gt 0 ]]; do
    case $1 in
        throughput | memory1536 | huge | rounds) scenarios+=("$1|$games|$latency|$conc|$replies") ;;
        all) for s in throughput memory1536 huge rounds; do scenarios+=("$s|$games|$latency|$conc|$replies"); done ;;
        --games) games=$2; shift ;;
        --latency-ms) latency=$2; shift ;;
        --max-concurrency) conc=$2; shift ;;
        --mock-replies)
            case $2 in
                cheap | simulated) replies=$2 ;;
                *) echo "bench-sweep: --mock-replies is cheap or simulated, not '$2'" >&2; usage 2 ;;
            esac
            shift ;;
        --script) script=$2; shift ;;
        --game-concurrency) gamec=$2; shift ;;
        --no-keep-requests) keepreq=0 ;;
        --no-cache) cache=0 ;;
        --warmup) warmup=$2; shift ;;
        --window) window=$2; shift ;;
        --finish) finish=1 ;;
        --keep) keep=1 ;;
        -h | --help) usage 0 ;;
        *) echo "bench-sweep: unknown argument '$1'" >&2; usage 2 ;;
    esac
    shift
done
[[ ${#scenarios[@]} -gt 0 ]] || usage 2
script=$(realpath "$script")

if [[ -n ${SLEUTH_BIN:-} ]]; then
    BIN=$SLEUTH_BIN
else
    cargo build --release --bin sleuth
    BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/sleuth"
fi
BIN=$(realpath "$BIN")
MOCK=$(realpath "${MOCK_BIN:-$BIN}")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sleuth-bench-sweep.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    if [[ $keep = 1 ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# Thousands of games each hold a transcript file open, and the sweep keeps connections to the mock.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

TICKS=$(getconf CLK_TCK)

echo "== machine: $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== sleuth: $BIN"
[[ $MOCK = "$BIN" ]] || echo "== mock: $MOCK"

# A free TCP port on the loopback (the kernel picks it).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_mock NAME LATENCY_MS REPLIES [MAX_CONCURRENCY] [EMBEDDING_DIMS] — sets MOCK_PID and MOCK_URL.
start_mock() {
    local name=$1 lat=$2 replies=$3 c=${4:-} dims=${5:-256} args=()
    [[ -n $c ]] && args+=(--max-concurrency "$c")
    "$MOCK" mock-llm --listen 127.0.0.1:0 --latency-ms "$lat" --replies "$replies" --embedding-dims "$dims" "${args[@]}" \
        >"$WORK/$name.mock.out" 2>"$WORK/$name.mock.err" &
    MOCK_PID=$!
    pids+=("$MOCK_PID")
    for _ in $(seq 100); do
        MOCK_URL=$(sed -n 's/.* on \(http[^ ]*\) .*/\1/p' "$WORK/$name.mock.out")
        [[ -n $MOCK_URL ]] && return 0
        sleep 0.1
    done
    echo "bench-sweep: the mock did not start:" >&2
    cat "$WORK/$name.mock.err" >&2
    exit 1
}

# stem KIND — the name of a scenario's files and summary lines: KIND the first time, KIND-2, KIND-3
# when it is run again (e.g. once per --mock-replies), so that no run reuses another's directory.
declare -A runs=()
stem() {
    runs[$1]=$((${runs[$1]:-0} + 1))
    if [[ ${runs[$1]} = 1 ]]; then STEM=$1; else STEM=$1-${runs[$1]}; fi
}

stop_pid() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# The process's I/O counters (/proc/PID/io): bytes read and written through syscalls, and the number
# of read and write syscalls — "rchar wchar syscr syscw".
io_counts() {
    awk '$1 == "rchar:" {r = $2} $1 == "wchar:" {w = $2} $1 == "syscr:" {cr = $2} $1 == "syscw:" {cw = $2}
         END {print r + 0, w + 0, cr + 0, cw + 0}' "/proc/$1/io" 2>/dev/null || echo 0 0 0 0
}
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
mock_ok() { curl -sf "${MOCK_URL%/v1}/stats" | sed -n 's/.*"ok":\([0-9]*\).*/\1/p'; }
in_flight() {
    curl -sf "http://127.0.0.1:$1/metrics" |
        awk '/^sleuth_sweep_games\{state="in_flight"\}/ {print int($2)} ' | head -n 1
}

# write_sweep NAME GAMES CONCURRENCY EXTRA — a sweep of GAMES seeds of one arm on $script against
# the mock at $MOCK_URL (model `mock`, at most $MODEL_CONC calls at once), written to $WORK/NAME.toml.
write_sweep() {
    local name=$1 n=$2 c=$3 extra=${4:-}
    bench_sweep_file "$WORK/$name.toml" "$name" "$WORK/$name" "$script" "$n" "$c" "$MOCK_URL" \
        "$MODEL_CONC" "$extra"
    if [[ -n $gamec || $keepreq = 0 || $cache = 0 ]]; then
        printf '\n[gateway]\n' >>"$WORK/$name.toml"
        if [[ -n $gamec ]]; then printf 'game_concurrency = %s\n' "$gamec" >>"$WORK/$name.toml"; fi
        if [[ $keepreq = 0 ]]; then printf 'keep_requests = false\n' >>"$WORK/$name.toml"; fi
        if [[ $cache = 0 ]]; then printf 'cache = false\n' >>"$WORK/$name.toml"; fi
    fi
}

# run_sweep NAME GAMES STOP_AFTER_WINDOW — runs $WORK/NAME.toml, sampling every 2 s into
# $WORK/NAME.samples (time, games in flight, mock ok, RSS kB, HWM kB, sweep CPU ticks, mock CPU ticks,
# the sweep's rchar, wchar, syscr, syscw).
# With STOP_AFTER_WINDOW=1 the sweep is stopped (two SIGINTs, as Ctrl-C twice) once the window is over.
run_sweep() {
    local name=$1 n=$2 stop=$3 port
    port=$(free_port)
    local started
    started=$(date +%s.%N)
    "$BIN" sweep run "$WORK/$name.toml" --concurrency "$n" --metrics-addr "127.0.0.1:$port" \
        >"$WORK/$name.out" 2>"$WORK/$name.err" &
    SWEEP_PID=$!
    pids+=("$SWEEP_PID")
    : >"$WORK/$name.samples"
    local full="" t f ok
    while kill -0 "$SWEEP_PID" 2>/dev/null; do
        t=$(date +%s.%N)
        f=$(in_flight "$port" || true)
        ok=$(mock_ok || true)
        echo "$t ${f:-0} ${ok:-0} $(status_kb "$SWEEP_PID" VmRSS) $(status_kb "$SWEEP_PID" VmHWM) $(cpu_ticks "$SWEEP_PID") $(cpu_ticks "$MOCK_PID") $(io_counts "$SWEEP_PID")" \
            >>"$WORK/$name.samples"
        if [[ -z $full && ${f:-0} -ge $n ]]; then full=$t; fi
        if [[ $stop = 1 && -n $full ]] && awk -v t="$t" -v s="$full" -v w="$((warmup + window))" 'BEGIN {exit !(t - s > w)}'; then
            kill -INT "$SWEEP_PID" 2>/dev/null || true
            sleep 1
            kill -INT "$SWEEP_PID" 2>/dev/null || true
            break
        fi
        sleep 2
    done
    wait "$SWEEP_PID" 2>/dev/null || true
    SWEEP_WALL=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
    FULL_AT=${full:-}
}

# summarise NAME GAMES LATENCY C — figures over the steady window from the samples.
summarise() {
    local name=$1 n=$2 lat=$3 c=$4
    awk -v full="${FULL_AT:-0}" -v w0="$warmup" -v w="$window" -v n="$n" -v lat="$lat" -v c="$c" \
        -v ticks="$TICKS" -v name="$name" '
        { t[NR] = $1; f[NR] = $2; ok[NR] = $3; rss[NR] = $4; hwm[NR] = $5; cs[NR] = $6; cm[NR] = $7
          rc[NR] = $8; wc[NR] = $9; sr[NR] = $10; sw[NR] = $11
          if ($2 > peak) peak = $2; if ($5 > maxhwm) maxhwm = $5 }
        END {
            if (full == 0) { printf "%s: the games never were all in flight (peak %d of %d)\n", name, peak, n; exit }
            a = 0; b = 0
            for (i = 1; i <= NR; i++) {
                if (!a && t[i] >= full + w0) a = i
                if (t[i] <= full + w0 + w) b = i
            }
            if (!a || b <= a) { printf "%s: no steady window (the run ended too soon)\n", name; exit }
            dt = t[b] - t[a]; rate = (ok[b] - ok[a]) / dt; want = c / (lat / 1000)
            minf = n; sum = 0; k = 0
            for (i = a; i <= b; i++) { if (f[i] < minf) minf = f[i]; if (f[i] > 0) { sum += rss[i] / f[i]; k++ } }
            cpu = (cs[b] - cs[a] + cm[b] - cm[a]) / ticks
            printf "%s: window %.0f s, games in flight %d..%d (peak %d)\n", name, dt, minf, n, peak
            printf "%s: requests/s %.1f vs C/L = %d/%.3f s = %.1f -> %.1f%% (target >= 95%%)\n", name, rate, c, lat / 1000, want, 100 * rate / want
            printf "%s: RSS per game in flight %.1f KiB (mean over the window; VmHWM %.0f MiB / peak %d = %.1f KiB)\n", name, sum / k, maxhwm / 1024, peak, maxhwm / peak
            req = ok[b] - ok[a]
            printf "%s: CPU %.2f cores (sweep %.2f, mock %.2f), %.2f ms per request (sweep %.2f, mock %.2f)\n", name, cpu / dt, (cs[b] - cs[a]) / ticks / dt, (cm[b] - cm[a]) / ticks / dt, 1000 * cpu / req, 1000 * (cs[b] - cs[a]) / ticks / req, 1000 * (cm[b] - cm[a]) / ticks / req
            printf "%s: sweep I/O per request: read %.1f KB in %.1f calls, wrote %.1f KB in %.1f calls (/proc/PID/io, the window)\n", name, (rc[b] - rc[a]) / 1000 / req, (sr[b] - sr[a]) / req, (wc[b] - wc[a]) / 1000 / req, (sw[b] - sw[a]) / req
        }' "$WORK/$name.samples"
}

scenario_load() {
    local kind=$1 n=${2:-5000} lat=${3:-1000} c=${4:-300} replies=${5:-cheap} dims=256 extra="" name
    if [[ $kind = memory1536 ]]; then
        dims=1536
        extra='embedder = "mock"'
    fi
    stem "$kind"
    name=$STEM
    echo
    echo "== $name: $n games of $(basename "$script") in flight against mock-llm --latency-ms $lat --max-concurrency $c --replies $replies${extra:+ (embeddings: $dims dims from the mock)}"
    start_mock "$name" "$lat" "$replies" "$c" "$dims"
    MODEL_CONC=$c
    write_sweep "$name" "$n" "$n" "$extra"
    run_sweep "$name" "$n" "$((1 - finish))"
    stop_pid "$MOCK_PID"
    tail -n 3 "$WORK/$name.out" | sed "s/^/$name: /"
    summarise "$name" "$n" "$lat" "$c"
}

scenario_huge() {
    local n=${1:-20000} lat=${2:-20} c=${3:-400} replies=${4:-cheap} name
    stem huge
    name=$STEM
    echo
    echo "== $name: $n games of $(basename "$script") in flight against mock-llm --latency-ms $lat --max-concurrency $c --replies $replies, to the end"
    start_mock "$name" "$lat" "$replies" "$c"
    MODEL_CONC=$c
    write_sweep "$name" "$n" "$n"
    run_sweep "$name" "$n" 0
    stop_pid "$MOCK_PID"
    tail -n 3 "$WORK/$name.out" | sed "s/^/$name: /"
    awk -v n="$n" -v wall="$SWEEP_WALL" -v name="$name" '
        { if ($2 > peak) peak = $2; if ($5 > hwm) hwm = $5; last = $3 }
        END { printf "%s: wall %.0f s, peak games in flight %d of %d, %d requests (%.0f/s), VmHWM %.0f MiB (%.1f KiB per game at the peak)\n",
              name, wall, peak, n, last, last / wall, hwm / 1024, hwm / (peak ? peak : 1) }' "$WORK/$name.samples"
}

scenario_rounds() {
    local n=${1:-20}
    echo
    echo "== rounds: WellPlay, rounds = [1, 2, 3, 4, 5], $n shared seeds, $(basename "$script"); in-process simulated model"
    local live=()
    for cache in true false; do
        cat >"$WORK/rounds-$cache.toml" <<EOF
name = "rounds-$cache"
out = "$WORK/rounds-$cache"
scripts = ["$script"]
repeats = $n
seed = 1
concurrency = 64

[game]
protocol = "wellplay"

[axes]
rounds = [1, 2, 3, 4, 5]

[gateway]
cache = $cache
EOF
        "$BIN" sweep run "$WORK/rounds-$cache.toml" --quiet >"$WORK/rounds-$cache.out" 2>"$WORK/rounds-$cache.err"
        local calls
        calls=$(sqlite3 "$WORK/rounds-$cache/sleuth.db" "select count(*) from ledger where source = 'live'")
        live+=("$calls")
        echo "rounds: cache = $cache: $calls live calls ($(sed -n 's/^this run: \([^;]*\);.*/\1/p' "$WORK/rounds-$cache.out"))"
    done
    sqlite3 "$WORK/rounds-false/sleuth.db" \
        "select 'rounds: cache off, calls per game by arm: ' || group_concat(label || ' ' || n, ', ') from (select g.arm_label as label, count(*) / count(distinct l.game) as n from ledger l join games g on g.id = l.game where l.source = 'live' group by g.arm_label order by g.arm_label)"
    awk -v on="${live[0]}" -v off="${live[1]}" 'BEGIN { printf "rounds: live calls with the cache / without = %d / %d = %.1f%% (issue: <= 40%%)\n", on, off, 100 * on / off }'
}

for s in "${scenarios[@]}"; do
    IFS='|' read -r kind g l c r <<<"$s"
    case $kind in
        throughput | memory1536) scenario_load "$kind" "${g:-5000}" "${l:-1000}" "${c:-300}" "$r" ;;
        huge) scenario_huge "${g:-20000}" "${l:-20}" "${c:-400}" "$r" ;;
        rounds) scenario_rounds "${g:-20}" ;;
    esac
done
