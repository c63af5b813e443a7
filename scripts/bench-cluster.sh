#!/usr/bin/env bash
# Cluster throughput on one machine: the same sweep, backed by `sleuth mock-llm`, played by a
# coordinator and 1, then 2, then 3 local workers (docs/performance.md, "Cluster: games/s with 1, 2,
# 3 local workers"). Each worker count gets a fresh redis-server (no persistence unless --aof) and a
# fresh coordinator on free ports; the mock is shared. For each it prints the wall time from submit
# to the sweep's end, games/s, the Redis commands per game — in all (INFO stats
# total_commands_processed) and by type (INFO commandstats); both count the commands a Lua script
# runs as well as its EVALSHA — and the CPU per game of the workers, Redis and the mock, and the
# coordinator's (/proc/PID/stat, INFO cpu): on a small machine they all share its cores.
#
#   scripts/bench-cluster.sh --release     # 36 games, workers 1 2 3, capacity 4, mock latency 30 ms
#
# Options (defaults in brackets):
#   --games N          games in the sweep, a multiple of 2 (two scripts) [36]
#   --workers "1 2 3"  the worker counts to measure, in order ["1 2 3"]
#   --capacity C       games each worker plays at once [4]
#   --latency-ms L     the mock's latency per call [30]
#   --rounds R         rounds per game [1]
#   --max-concurrency C  the model's max_concurrency, held cluster-wide by leases in Redis [none: no
#                      model limit, so nothing but the cache and ledger touches Redis per call]
#   --aof              Redis with appendonly yes, appendfsync always (docs/cluster.md, Durability)
#   --top K            command types listed per worker count [12]
#   --keep             keep the temporary directory (sweep file, logs)
#   --release          build and use target/release/sleuth (default: cargo build, target/debug)
# Environment: SLEUTH_BIN, a binary to use instead of building one.
#
# Needs redis-server, redis-cli, curl and python3 (free ports). Never part of the test suite.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

usage() { sed -n '2,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

games=36 worker_counts="1 2 3" capacity=4 latency=30 rounds=1 aof=0 top=12 keep=0 release=0 conc=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --games) games=$2; shift ;;
        --workers) worker_counts=$2; shift ;;
        --capacity) capacity=$2; shift ;;
        --latency-ms) latency=$2; shift ;;
        --rounds) rounds=$2; shift ;;
        --max-concurrency) conc=$2; shift ;;
        --aof) aof=1 ;;
        --top) top=$2; shift ;;
        --keep) keep=1 ;;
        --release) release=1 ;;
        -h | --help) usage 0 ;;
        *) echo "bench-cluster: unknown argument '$1'" >&2; usage 2 ;;
    esac
    shift
done
if (( games < 2 || games % 2 != 0 )); then
    echo "bench-cluster: --games must be an even number (two scripts)" >&2
    exit 2
fi
for tool in redis-server redis-cli curl python3; do
    command -v "$tool" >/dev/null || { echo "bench-cluster: $tool is not installed" >&2; exit 1; }
done

if [[ -n ${SLEUTH_BIN:-} ]]; then
    BIN=$SLEUTH_BIN
    profile="given binary"
elif [[ $release = 1 ]]; then
    cargo build --release --bin sleuth
    BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/sleuth"
    profile=release
else
    cargo build --bin sleuth
    BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/sleuth"
    profile="dev (debug)"
fi
BIN=$(realpath "$BIN")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sleuth-bench-cluster.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    if [[ $keep = 1 ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# The cluster's token, for these processes only.
SLEUTH_TOKEN="bench-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export SLEUTH_TOKEN
# The mock checks no key; the model reads one from here.
export BENCH_MOCK_KEY=unused
export SLEUTH_LOG=${SLEUTH_LOG:-info}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_pid() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# wait_until SECONDS WHAT COMMAND...: polls COMMAND every 0.1 s.
wait_until() {
    local secs=$1 what=$2
    shift 2
    for _ in $(seq $((secs * 10))); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "bench-cluster: gave up waiting for $what" >&2
    exit 1
}

# The mock, shared by every run.
"$BIN" mock-llm --listen 127.0.0.1:0 --latency-ms "$latency" >"$WORK/mock.out" 2>"$WORK/mock.err" &
MOCK_PID=$!
pids+=("$MOCK_PID")
MOCK_URL=""
for _ in $(seq 100); do
    MOCK_URL=$(sed -n 's/.* on \(http[^ ]*\) .*/\1/p' "$WORK/mock.out")
    [[ -n $MOCK_URL ]] && break
    sleep 0.1
done
[[ -n $MOCK_URL ]] || { echo "bench-cluster: the mock did not start:" >&2; cat "$WORK/mock.err" >&2; exit 1; }
mock_ok() { curl -sf "${MOCK_URL%/v1}/stats" | sed -n 's/.*"ok":\([0-9]*\).*/\1/p'; }

# The sweep: two scripts, games/2 seeds each, one arm, on the mock; no budget.
cat >"$WORK/bench.toml" <<EOF
name = "bench"
out = "$WORK/local"
scripts = ["$ROOT/examples/glasshouse.toml", "$ROOT/examples/night-ferry.toml"]
repeats = $((games / 2))
seed = 1
concurrency = 64

[game]
protocol = "wellplay"
model = "m"
rounds = $rounds
framework = "player"

[models.m]
provider = "openai"
base_url = "$MOCK_URL"
model = "sim-1"
api_key_env = "BENCH_MOCK_KEY"
${conc:+max_concurrency = $conc}

[gateway]
cache = true
EOF

# INFO stats total_commands_processed, and INFO commandstats as "command calls" lines.
# CPU seconds a process has used (user + system), and Redis's own count of its CPU seconds.
TICKS=$(getconf CLK_TCK)
cpu_s() { awk -v t="$TICKS" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat" 2>/dev/null || echo 0; }
redis_cpu() {
    redis-cli -p "$1" INFO cpu | tr -d '\r' |
        awk -F: '$1 == "used_cpu_user" || $1 == "used_cpu_sys" {s += $2} END {printf "%.2f", s}'
}
total_commands() { redis-cli -p "$1" INFO stats | tr -d '\r' | sed -n 's/^total_commands_processed://p'; }
command_calls() {
    redis-cli -p "$1" INFO commandstats | tr -d '\r' |
        sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),.*/\1 \2/p' | LC_ALL=C sort
}

echo "sleuth $profile build; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
redis_mode="no persistence"
[[ $aof = 1 ]] && redis_mode="AOF, appendfsync always"
echo "sweep: $games games (glasshouse + night-ferry, rounds $rounds, framework player) against mock-llm --latency-ms $latency; workers of capacity $capacity; model max_concurrency ${conc:-unset}; Redis with $redis_mode"
echo

declare -A rate
summary=()
details=()
for n in $worker_counts; do
    run="$WORK/w$n"
    mkdir -p "$run/redis"
    rport=$(free_port)
    persist=(--save "" --appendonly no)
    [[ $aof = 1 ]] && persist=(--save "" --appendonly yes --appendfsync always)
    redis-server --port "$rport" --bind 127.0.0.1 --dir "$run/redis" "${persist[@]}" \
        >"$run/redis.log" 2>&1 &
    rpid=$!
    pids+=("$rpid")
    wait_until 10 "redis-server" redis-cli -p "$rport" PING
    redis_url="redis://127.0.0.1:$rport/"

    cport=$(free_port)
    coordinator="http://127.0.0.1:$cport"
    "$BIN" coordinator --redis "$redis_url" --listen "127.0.0.1:$cport" >"$run/coordinator.log" 2>&1 &
    cpid=$!
    pids+=("$cpid")
    wait_until 30 "the coordinator" "$BIN" workers --coordinator "$coordinator"

    wpids=()
    for i in $(seq "$n"); do
        "$BIN" worker --coordinator "$coordinator" --redis "$redis_url" --capacity "$capacity" \
            --work-dir "$run/work" >"$run/worker-$i.log" 2>&1 &
        wpids+=($!)
        pids+=($!)
    done
    registered() { [[ $("$BIN" workers --coordinator "$coordinator" | tail -n +2 | wc -l) -ge $n ]]; }
    wait_until 60 "$n workers to register" registered

    rcpu_before=$(redis_cpu "$rport")
    cmds_before=$(total_commands "$rport")
    command_calls "$rport" >"$run/commands.before"
    ok_before=$(mock_ok)
    mcpu_before=$(cpu_s "$MOCK_PID")
    start=$(date +%s.%N)
    id=$("$BIN" submit "$WORK/bench.toml" --coordinator "$coordinator" 2>"$run/submit.err")
    "$BIN" watch "$id" --coordinator "$coordinator" >"$run/watch.out"
    end=$(date +%s.%N)
    cmds_after=$(total_commands "$rport")
    rcpu_after=$(redis_cpu "$rport")
    wcpu=0
    for p in "${wpids[@]}"; do wcpu=$(python3 -c "print($wcpu + $(cpu_s "$p"))"); done
    ccpu=$(cpu_s "$cpid")
    command_calls "$rport" >"$run/commands.after"
    ok_after=$(mock_ok)
    mcpu_after=$(cpu_s "$MOCK_PID")
    last=$(tail -n 1 "$run/watch.out")
    if [[ $last != *"[finished] $games/$games done"* ]]; then
        echo "bench-cluster: the sweep did not finish cleanly with $n workers: $last" >&2
        exit 1
    fi

    wall=$(python3 -c "print(f'{$end - $start:.1f}')")
    gps=$(python3 -c "print(f'{$games / ($end - $start):.3f}')")
    rate[$n]=$gps
    speedup=$(python3 -c "print(f'{$gps / ${rate[${worker_counts%% *}]}:.2f}')")
    per_game=$(( (cmds_after - cmds_before) / games ))
    calls=$(( (ok_after - ok_before) / games ))
    cpu_cols=$(python3 -c "print(f'{$wcpu / $games:.2f} | {($rcpu_after - $rcpu_before) * 1000 / $games:.0f} | {($mcpu_after - $mcpu_before) / $games:.2f} | {$ccpu:.1f}')")
    summary+=("$(printf '| %d | %d | %d | %s | %s | %s× | %d | %d | %s |' \
        "$n" "$capacity" "$games" "$wall" "$gps" "$speedup" "$calls" "$per_game" "$cpu_cols")")
    details+=("workers=$n: Redis commands per game by type (commandstats, script-internal calls included):")
    details+=("$(LC_ALL=C join -a 2 -e 0 -o 0,1.2,2.2 "$run/commands.before" "$run/commands.after" |
        awk -v g="$games" '{d = $3 - $2; if (d > 0) printf "%s %.1f\n", $1, d / g}' |
        sort -k2,2 -g -r | head -n "$top" | awk '{printf "    %-14s %8s\n", $1, $2}')")

    for p in "${wpids[@]}" "$cpid" "$rpid"; do stop_pid "$p"; done
done

echo "| workers | capacity | games | wall s | games/s | vs first | LLM calls/game | Redis commands/game | workers' CPU s/game | Redis CPU ms/game | mock CPU s/game | coordinator CPU s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${summary[@]}"
echo
printf '%s\n' "${details[@]}"
