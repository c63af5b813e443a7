# The sweep file of the load benchmarks (scripts/bench-sweep.sh, scripts/bench-heap.sh): GAMES seeds
# of one arm (WellPlay, O-CoT, one round, one evaluation repeat) on SCRIPT against an OpenAI-style
# endpoint at URL (the model `mock`, at most MODEL_CONC calls at once), so that both measure the same
# games. Sourced, not run.
#
#   bench_sweep_file FILE NAME OUT SCRIPT GAMES CONCURRENCY URL MODEL_CONC [EXTRA]
#
# EXTRA is appended to the [evaluation] table (more settings of it, or whole tables after it).
bench_sweep_file() {
    local file=$1 name=$2 out=$3 script=$4 games=$5 conc=$6 url=$7 model_conc=$8 extra=${9:-}
    cat >"$file" <<EOF
name = "$name"
out = "$out"
scripts = ["$script"]
repeats = $games
seed = 1
concurrency = $conc

[game]
protocol = "wellplay"
framework = "ocot"
model = "mock"
rounds = 1

[evaluation]
repeats = 1
$extra

[models.mock]
provider = "openai"
base_url = "$url"
model = "sim-1"
api_key_env = "PATH"
max_concurrency = $model_conc
EOF
}
