#!/usr/bin/env bash
# A hundred annotators on one viewer (issue 30's target: "a hundred annotators on one viewer answer
# within 50 ms per page on the 10,000-game sweep"; figures in docs/humans.md, *Measured*).
#
# Plays a sweep against the simulated model (WellPlay O-CoT on examples/orchard-press.toml, two arms,
# `rounds = 1` and `2`, as docs/performance.md's 10,000-game viewer sweep), draws a *responses*
# campaign over it for N annotators, starts `sleuth view` on the run and lets N concurrent clients
# (Python's standard library, one thread each) open their own link, fetch their queue page and POST a
# full answer for several items, each answer followed by the next page, as the browser does. Every
# request's latency is recorded on the client; the script prints p50/p95/p99/max of the page GETs and
# of the POSTs, for one client alone (the floor, without contention), for all clients at once with no
# pause at all (a burst: every request queues behind the others', the worst case) and for all clients
# pausing between requests as people do (--think-ms; a person takes seconds per item, not 0 ms).
#
#   scripts/bench-annotate.sh                      # 10,000 games, 100 annotators, 5 answers each
#   scripts/bench-annotate.sh --games 2000         # a smaller sweep (playing 10,000 takes ~10 min)
#   scripts/bench-annotate.sh --run DIR            # reuse a played run (a kept one, see --keep)
#
# Options (defaults in brackets):
#   --games N          games in the sweep, split over the two arms [10000]
#   --annotators N     annotators, each a concurrent client [100]
#   --answers K        items each client answers (a page GET and a POST each) [5]
#   --per-condition G  groups in the campaign (its items) [50]
#   --think-ms T       the paced run's pause before each request, uniform in 0..2T ms [1000]
#   --run DIR          measure on this played run instead of playing one (a new campaign is added)
#   --keep             keep the temporary directory (the played run, the viewer's log, the samples)
# Environment: SLEUTH_BIN (default: target/release/sleuth, built first with cargo build --release).
#
# Never part of the test suite.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

# The header comment above, without its `#`s.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit "${1:-0}"; }

games=10000 annotators=100 answers=5 per=50 think=1000 run="" keep=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --games) games=$2; shift ;;
        --annotators) annotators=$2; shift ;;
        --answers) answers=$2; shift ;;
        --per-condition) per=$2; shift ;;
        --think-ms) think=$2; shift ;;
        --run) run=$(realpath "$2"); shift ;;
        --keep) keep=1 ;;
        -h | --help) usage 0 ;;
        *) echo "bench-annotate: unknown argument '$1'" >&2; usage 2 ;;
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

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sleuth-bench-annotate.XXXXXX")
VIEW_PID=""
cleanup() {
    if [[ -n $VIEW_PID ]]; then
        kill "$VIEW_PID" 2>/dev/null || true
        wait "$VIEW_PID" 2>/dev/null || true
    fi
    if [[ $keep = 1 ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

echo "== machine: $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== sleuth: $BIN"

if [[ -z $run ]]; then
    run=$WORK/run
    cat >"$WORK/big.toml" <<EOF
name = "big"
out = "$run"
scripts = ["$ROOT/examples/orchard-press.toml"]
repeats = $(((games + 1) / 2))
seed = 1
concurrency = 256

[game]
protocol = "wellplay"
framework = "ocot"
model = "sim"

[axes]
rounds = [1, 2]

[evaluation]
repeats = 1

[models.sim]
provider = "simulated"
EOF
    echo "== playing $games games (two arms) against the simulated model"
    start=$(date +%s)
    "$BIN" sweep run "$WORK/big.toml" --quiet >"$WORK/sweep.out" 2>"$WORK/sweep.err"
    echo "played in $(($(date +%s) - start)) s: $(du -sh "$run/sleuth.db" | cut -f1) sleuth.db"
fi

# A campaign of its own each time, so that a kept run can be measured again.
id="bench-$(date +%s)"
names=$(python3 -c "print(','.join(f'a{i:03d}' for i in range(1, $annotators + 1)))")
start=$(date +%s.%N)
"$BIN" annotate create "$run" --id "$id" --kind responses --per-condition "$per" --annotators "$names" --seed 7 \
    >"$WORK/tokens.out" 2>"$WORK/create.err"
awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "== campaign: created in %.1f s\n", e - s }'
grep -c $'\t' "$WORK/tokens.out" | sed 's/^/tokens: /'

"$BIN" view "$run" --listen 127.0.0.1:0 >"$WORK/view.out" 2>"$WORK/view.err" &
VIEW_PID=$!
addr=""
for _ in $(seq 300); do
    addr=$(grep -ohE 'http://127\.0\.0\.1:[0-9]+' "$WORK/view.out" "$WORK/view.err" | head -n 1 || true)
    [[ -n $addr ]] && break
    sleep 0.1
done
[[ -n $addr ]] || { echo "bench-annotate: the viewer did not start:" >&2; cat "$WORK/view.err" >&2; exit 1; }
echo "== viewer: $addr (pid $VIEW_PID)"
# The viewer builds the sweep's report in the background when it starts (seconds of CPU on a large
# sweep, docs/performance.md): wait for it, so that the clients do not share the cores with it.
curl -s -o /dev/null -w 'the sweep report, built at start: %{http_code} after %{time_total} s\n' "$addr/report?sweep=big" || true
# … and until the viewer is idle (under 30 ms of CPU in a second), whatever else it was building.
view_ticks() { awk '{print $14 + $15}' "/proc/$VIEW_PID/stat"; }
for i in $(seq 120); do
    a=$(view_ticks)
    sleep 1
    if (($(view_ticks) - a <= 3)); then
        echo "the viewer idle after $i s more"
        break
    fi
done

# The clients: one thread per annotator, keep-alive connections, the browser's requests in order.
cat >"$WORK/clients.py" <<'PY'
import html, http.client, json, random, re, sys, threading, time
from urllib.parse import urlparse

base, tokens_file, answers, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
first, count, think = int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7]) / 1000
tokens = [l.split("\t")[1].strip() for l in open(tokens_file) if "\t" in l][first:first + count]
u = urlparse(base)
lat = {"link": [], "page": [], "post": []}
errors, lock = [], threading.Lock()
barrier = threading.Barrier(len(tokens))

def attr(page_text, name):
    return [html.unescape(v) for v in re.findall(name + r'="([^"]*)"', page_text)]

def client(token):
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    mine = {"link": [], "page": [], "post": []}
    def req(kind, method, path, body=None, headers=None):
        if think:
            time.sleep(random.uniform(0, 2 * think))
        t = time.perf_counter()
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read().decode("utf-8", "replace")
        mine[kind].append(time.perf_counter() - t)
        return r, data
    try:
        barrier.wait()
        r, _ = req("link", "GET", "/annotate?token=" + token)
        cookie = r.getheader("set-cookie", "").split(";")[0]
        if r.status != 303 or not cookie:
            raise RuntimeError(f"the link answered {r.status}")
        r, page = req("page", "GET", "/annotate", headers={"Cookie": cookie})
        for _ in range(answers):
            if r.status != 200 or 'data-item="' not in page:
                raise RuntimeError(f"the queue page answered {r.status}")
            item, proof = int(attr(page, "data-item")[0]), attr(page, "data-proof")[0]
            nxt = attr(page, "data-next")[0]
            score = {"naturalness": 4, "truthfulness": 3, "informativeness": 5}
            ratings = {l: score for l in dict.fromkeys(attr(page, 'data-label'))}
            body = json.dumps({"item": item, "answer": {"ratings": ratings}})
            r, reply = req("post", "POST", "/annotate/answer", body, {
                "Cookie": cookie, "Content-Type": "application/json",
                "X-Sleuth-Proof": proof, "Origin": base, "Sec-Fetch-Site": "same-origin"})
            if r.status != 200:
                raise RuntimeError(f"the answer was refused ({r.status}): {reply}")
            r, page = req("page", "GET", nxt, headers={"Cookie": cookie})
    except Exception as e:
        with lock:
            errors.append(repr(e))
    with lock:
        for k, v in mine.items():
            lat[k].extend(v)

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] * 1000 if xs else float("nan")

threads = [threading.Thread(target=client, args=(t,)) for t in tokens]
start = time.perf_counter()
for t in threads: t.start()
for t in threads: t.join()
wall = time.perf_counter() - start
n = sum(len(v) for v in lat.values())
print(f"{label}: {len(tokens)} clients, {n} requests in {wall:.2f} s ({n / wall:.0f}/s), {len(errors)} failed clients")
for k, what in [("link", "link (303 + session)"), ("page", "queue page GET"), ("post", "answer POST")]:
    v = lat[k]
    print(f"{label}: {what:22} n={len(v):4}  p50 {pct(v, 50):6.1f} ms  p95 {pct(v, 95):6.1f} ms  "
          f"p99 {pct(v, 99):6.1f} ms  max {pct(v, 100):6.1f} ms")
for e in errors[:5]:
    print(f"{label}: failed: {e}")
sys.exit(1 if errors else 0)
PY

# Each run goes on down the same queues (K more items each), so no run answers an item twice. After
# each, the viewer's CPU time over it (/proc/PID/stat), per request: what the cores' load cannot blur.
TICKS=$(getconf CLK_TCK)
measure() {
    local label=$1 first=$2 count=$3 pause=$4 before
    before=$(view_ticks)
    python3 "$WORK/clients.py" "$addr" "$WORK/tokens.out" "$answers" "$label" "$first" "$count" "$pause"
    awk -v a="$before" -v b="$(view_ticks)" -v t="$TICKS" -v n="$((count * (2 * answers + 2)))" -v l="$label" \
        'BEGIN { printf "%s: viewer CPU %.2f s for %d requests, %.2f ms per request\n", l, (b - a) / t, n, 1000 * (b - a) / t / n }'
}
echo "== one client alone (the floor)"
measure alone 0 1 0
echo "== $annotators clients at once, $answers answers each, pausing 0..$((2 * think)) ms before each request"
measure paced 0 "$annotators" "$think"
echo "== $annotators clients at once, $answers more answers each, no pause (a burst)"
measure burst 0 "$annotators" 0
echo "viewer RSS: $(awk '/^VmRSS/ {print $2 / 1024 " MiB"}' "/proc/$VIEW_PID/status")"
