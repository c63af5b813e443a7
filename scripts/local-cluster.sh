#!/usr/bin/env bash
# A sleuth cluster on this machine, without Docker: Redis (AOF on), a coordinator and N workers as
# local processes on the loopback interface, each on a free port.
#
#   scripts/local-cluster.sh up [N]        # start Redis, the coordinator and N workers (default 2)
#   source .local-cluster/env              # SLEUTH_TOKEN, SLEUTH_COORDINATOR, PATH for `sleuth`
#   sleuth submit examples/sweeps/demo.toml --watch
#   scripts/local-cluster.sh status        # what runs, on which ports
#   scripts/local-cluster.sh down          # stop everything it started (data and logs stay)
#   scripts/local-cluster.sh down --purge  # ...and delete the state directory
#
# Needs bash, coreutils and redis-server (scripts/ensure-redis.sh installs it). The binary is
# $SLEUTH_BIN, else the newer of target/release/sleuth and target/debug/sleuth, else it builds
# target/release/sleuth. Settings (environment):
#   SLEUTH_TOKEN              the cluster's bearer token (default: the state directory's, else a new one)
#   LOCAL_CLUSTER_DIR         state directory (default: .local-cluster at the repository root)
#   LOCAL_CLUSTER_CAPACITY    games each worker plays at once (default 4)
#   LOCAL_CLUSTER_NAMESPACE   Redis namespace (default sleuth)
#
# The state directory holds the env file (mode 600: the token and the Redis password), Redis' data
# and config (600), pid files and one log per process (logs/). No secret is passed on a command line
# (they travel in the environment and the Redis config file) or written to a log.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${LOCAL_CLUSTER_DIR:-${ROOT}/.local-cluster}"
CAPACITY="${LOCAL_CLUSTER_CAPACITY:-4}"
NAMESPACE="${LOCAL_CLUSTER_NAMESPACE:-sleuth}"

die() {
    echo "local-cluster: $*" >&2
    exit 1
}

say() {
    echo "local-cluster: $*"
}

usage() {
    sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# 64 hex digits from /dev/urandom.
random_hex() {
    head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n'
}

# Whether something accepts connections on 127.0.0.1:$1.
port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Sets the variable named $1 to a port nobody listens on and this run has not handed out before.
TAKEN=" "
free_port() {
    local candidate tries=0
    while ((tries < 200)); do
        candidate=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        tries=$((tries + 1))
        if [[ "${TAKEN}" != *" ${candidate} "* ]] && ! port_open "${candidate}"; then
            TAKEN+="${candidate} "
            printf -v "$1" '%s' "${candidate}"
            return 0
        fi
    done
    die "found no free port"
}

# The pid in pid file $1 when that process still runs (and is what it was started as), else nothing.
live_pid() {
    local file="$1" pid want
    [[ -f "${file}" ]] || return 1
    pid="$(head -n 1 "${file}")"
    want="$(sed -n 2p "${file}")"
    [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
    kill -0 "${pid}" 2>/dev/null || return 1
    # Guard against a reused pid where /proc tells what runs.
    if [[ -r "/proc/${pid}/cmdline" && -n "${want}" ]]; then
        tr '\0' ' ' <"/proc/${pid}/cmdline" | grep -q -- "${want}" || return 1
    fi
    echo "${pid}"
}

# Starts a process in the background with its output in logs/$1.log; records its pid in run/$1.pid.
# Usage: spawn NAME MATCH COMMAND...   (MATCH: a word of its command line, checked before stopping it)
spawn() {
    local name="$1" match="$2"
    shift 2
    nohup "$@" >"${STATE}/logs/${name}.log" 2>&1 </dev/null &
    printf '%s\n%s\n' "$!" "${match}" >"${STATE}/run/${name}.pid"
}

# Waits until $2 (a port) accepts connections while the process $1 lives; 60 s at most.
wait_ready() {
    local name="$1" port="$2" pid i
    # Just started by this script: its pid is its own (no check of the command line, which is in
    # flux while nohup execs the program).
    pid="$(head -n 1 "${STATE}/run/${name}.pid")"
    for ((i = 0; i < 600; i++)); do
        if ! kill -0 "${pid}" 2>/dev/null; then
            echo "local-cluster: ${name} exited; the end of ${STATE}/logs/${name}.log:" >&2
            tail -n 20 "${STATE}/logs/${name}.log" >&2 || true
            return 1
        fi
        if port_open "${port}"; then
            return 0
        fi
        sleep 0.1
    done
    echo "local-cluster: ${name} (pid ${pid}) does not listen on ${port} after 60 s; see ${STATE}/logs/${name}.log" >&2
    return 1
}

find_binary() {
    if [[ -n "${SLEUTH_BIN:-}" ]]; then
        [[ -x "${SLEUTH_BIN}" ]] || die "SLEUTH_BIN=${SLEUTH_BIN} is not an executable"
        echo "${SLEUTH_BIN}"
        return
    fi
    local release="${ROOT}/target/release/sleuth" debug="${ROOT}/target/debug/sleuth"
    if [[ -x "${release}" && -x "${debug}" ]]; then
        if [[ "${debug}" -nt "${release}" ]]; then echo "${debug}"; else echo "${release}"; fi
    elif [[ -x "${release}" ]]; then
        echo "${release}"
    elif [[ -x "${debug}" ]]; then
        echo "${debug}"
    else
        say "no target/release/sleuth or target/debug/sleuth: building the release binary" >&2
        (cd "${ROOT}" && cargo build --release --locked --bin sleuth) >&2
        echo "${release}"
    fi
}

# The value of `export NAME=...` in the env file, if there is one.
env_value() {
    [[ -f "${STATE}/env" ]] || return 0
    sed -n "s/^export $1='\\(.*\\)'\$/\\1/p" "${STATE}/env" | head -n 1
}

running_any() {
    local f
    for f in "${STATE}"/run/*.pid; do
        [[ -e "${f}" ]] || continue
        if live_pid "${f}" >/dev/null; then
            return 0
        fi
    done
    return 1
}

cmd_up() {
    local workers="${1:-2}"
    [[ "${workers}" =~ ^[1-9][0-9]*$ ]] || die "up: the number of workers must be a positive integer, not '${workers}'"
    [[ "${CAPACITY}" =~ ^[1-9][0-9]*$ ]] || die "LOCAL_CLUSTER_CAPACITY must be a positive integer"
    command -v redis-server >/dev/null 2>&1 || die "redis-server is not installed (scripts/ensure-redis.sh installs it)"
    mkdir -p "${STATE}"
    if running_any; then
        die "a local cluster already runs from ${STATE} (scripts/local-cluster.sh status; down to stop it)"
    fi
    local bin
    bin="$(find_binary)"
    [[ -x "${bin}" ]] || die "no sleuth binary at ${bin}"

    umask 077
    mkdir -p "${STATE}/logs" "${STATE}/run" "${STATE}/redis"
    rm -f "${STATE}"/run/*.pid
    # Whatever stops `up` half-way stops what it had started.
    trap 'echo "local-cluster: up failed; stopping what it started" >&2; cmd_down >&2' EXIT
    # Keep the state directory out of git whatever the repository's .gitignore says.
    printf '*\n' >"${STATE}/.gitignore"

    # Secrets: the token from the environment, else the one this state directory had, else a new one;
    # the Redis password likewise (Redis' data outlives a `down`).
    local token redis_pass
    token="${SLEUTH_TOKEN:-$(env_value SLEUTH_TOKEN)}"
    [[ -n "${token}" ]] || token="$(random_hex)"
    [[ "${token}" != *"'"* ]] || die "SLEUTH_TOKEN must not contain a single quote"
    redis_pass="$(env_value LOCAL_CLUSTER_REDIS_PASSWORD)"
    [[ -n "${redis_pass}" ]] || redis_pass="$(random_hex)"

    local redis_port api_port coord_metrics
    free_port redis_port
    free_port api_port
    free_port coord_metrics

    # Redis: loopback only, password in its config file (not on the command line), AOF on, no eviction.
    cat >"${STATE}/redis/redis.conf" <<EOF
bind 127.0.0.1
port ${redis_port}
protected-mode yes
dir "${STATE}/redis"
daemonize no
logfile ""
appendonly yes
appendfsync everysec
maxmemory-policy noeviction
save ""
requirepass ${redis_pass}
EOF
    spawn redis redis-server redis-server "${STATE}/redis/redis.conf"
    wait_ready redis "${redis_port}"

    local redis_url="redis://:${redis_pass}@127.0.0.1:${redis_port}/0"
    local coordinator_url="http://127.0.0.1:${api_port}"
    export SLEUTH_TOKEN="${token}" SLEUTH_REDIS="${redis_url}" SLEUTH_COORDINATOR="${coordinator_url}"

    spawn coordinator coordinator "${bin}" coordinator \
        --listen "127.0.0.1:${api_port}" \
        --metrics-addr "127.0.0.1:${coord_metrics}" \
        --namespace "${NAMESPACE}"
    wait_ready coordinator "${api_port}"

    local i port targets="'127.0.0.1:${coord_metrics}'" worker_ports=""
    for ((i = 1; i <= workers; i++)); do
        free_port port
        spawn "worker-${i}" worker "${bin}" worker \
            --capacity "${CAPACITY}" \
            --metrics-addr "127.0.0.1:${port}"
        worker_ports+="${port} "
        targets+=", '127.0.0.1:${port}'"
    done
    i=1
    for port in ${worker_ports}; do
        wait_ready "worker-${i}" "${port}"
        i=$((i + 1))
    done

    # What clients need, to `source`: mode 600, as it holds the token and the Redis password.
    cat >"${STATE}/env" <<EOF
# A local sleuth cluster (scripts/local-cluster.sh). Secrets: keep this file to yourself.
export SLEUTH_TOKEN='${token}'
export SLEUTH_COORDINATOR='${coordinator_url}'
export SLEUTH_REDIS='${redis_url}'
export LOCAL_CLUSTER_REDIS_PASSWORD='${redis_pass}'
export PATH='$(dirname "${bin}")':"\${PATH}"
EOF
    chmod 600 "${STATE}/env"
    cat >"${STATE}/ports" <<EOF
redis ${redis_port}
coordinator ${api_port}
coordinator-metrics ${coord_metrics}
workers ${worker_ports}
EOF
    # A Prometheus config scraping every process (prometheus --config.file=.local-cluster/prometheus.yml).
    cat >"${STATE}/prometheus.yml" <<EOF
global:
  scrape_interval: 5s
scrape_configs:
  - job_name: sleuth
    static_configs:
      - targets: [${targets}]
EOF

    trap - EXIT
    say "up: Redis, a coordinator and ${workers} worker(s) of capacity ${CAPACITY} (${bin})"
    say "coordinator:  ${coordinator_url}"
    say "metrics:      http://127.0.0.1:${coord_metrics}/metrics (coordinator)"
    i=1
    for port in ${worker_ports}; do
        say "              http://127.0.0.1:${port}/metrics (worker-${i})"
        i=$((i + 1))
    done
    say "redis:        127.0.0.1:${redis_port} (AOF in ${STATE}/redis; password in the env file)"
    say "logs:         ${STATE}/logs/"
    say "next:         source ${STATE}/env && sleuth submit examples/sweeps/demo.toml --watch"
}

# Stops the process of pid file $1: TERM, then KILL after 10 s.
stop_one() {
    local file="$1" name pid i
    name="$(basename "${file}" .pid)"
    if pid="$(live_pid "${file}")"; then
        kill -TERM "${pid}" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            kill -0 "${pid}" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "${pid}" 2>/dev/null; then
            say "${name} (pid ${pid}) did not stop in 10 s: killing it"
            kill -KILL "${pid}" 2>/dev/null || true
        fi
        say "stopped ${name} (pid ${pid})"
    fi
    rm -f "${file}"
}

cmd_down() {
    local purge="${1:-}" f
    [[ -z "${purge}" || "${purge}" == "--purge" ]] || die "down: unknown option '${purge}'"
    if [[ -d "${STATE}/run" ]]; then
        # Workers first, then the coordinator, Redis last.
        for f in "${STATE}"/run/worker-*.pid; do
            [[ -e "${f}" ]] && stop_one "${f}"
        done
        [[ -e "${STATE}/run/coordinator.pid" ]] && stop_one "${STATE}/run/coordinator.pid"
        [[ -e "${STATE}/run/redis.pid" ]] && stop_one "${STATE}/run/redis.pid"
    fi
    if [[ "${purge}" == "--purge" ]]; then
        rm -rf "${STATE}"
        say "removed ${STATE}"
    fi
    return 0
}

cmd_status() {
    local f name pid any=0
    if [[ -d "${STATE}/run" ]]; then
        for f in "${STATE}"/run/*.pid; do
            [[ -e "${f}" ]] || continue
            any=1
            name="$(basename "${f}" .pid)"
            if pid="$(live_pid "${f}")"; then
                say "${name}: running (pid ${pid})"
            else
                say "${name}: not running (see ${STATE}/logs/${name}.log)"
            fi
        done
    fi
    if ((any == 0)); then
        say "not running (scripts/local-cluster.sh up [N] starts it)"
        return 0
    fi
    if [[ -f "${STATE}/ports" ]]; then
        say "coordinator: http://127.0.0.1:$(sed -n 's/^coordinator //p' "${STATE}/ports")"
        say "ports: $(tr '\n' ';' <"${STATE}/ports" | sed 's/;$//; s/;/; /g')"
    fi
    say "env: source ${STATE}/env"
}

case "${1:-}" in
    up)
        shift
        cmd_up "$@"
        ;;
    down)
        shift
        cmd_down "$@"
        ;;
    status)
        cmd_status
        ;;
    -h | --help | help)
        usage
        ;;
    *)
        usage >&2
        exit 2
        ;;
esac
