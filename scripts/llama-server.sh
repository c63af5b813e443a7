#!/usr/bin/env bash
# Starts llama.cpp's OpenAI-compatible server (llama-cpp-python) with SmolLM2-135M-Instruct on loopback:
# the real inference server of tests/it/real_model.rs and of docs/real-models.md's smoke table.
#
#   scripts/llama-server.sh [--port P] [--ctx N] [--threads T]
#
# Installs what it needs first (scripts/ensure-llama.sh: a cached source build, nothing fetched at run
# time), picks a free port when none is given, prints the base URL on stderr, then replaces itself with
# the server (so the caller's PID is the server's, and killing it stops the server). The server answers
# one request at a time, like a one-slot llama.cpp server on a workstation: it is the endpoint sleuth's
# adaptive concurrency, structured-output fallback and context-window checks are tested against.
# Readiness: poll GET http://127.0.0.1:P/v1/models until it answers 200.
set -euo pipefail
cd "$(dirname "$0")/.."

port=""
ctx="${SLEUTH_LLAMA_CTX:-4096}"
threads="${SLEUTH_LLAMA_THREADS:-2}"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --port) port="$2"; shift 2 ;;
        --ctx) ctx="$2"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "llama-server: unknown argument $1 (expected --port P, --ctx N, --threads T)" >&2; exit 2 ;;
    esac
done

paths="$(scripts/ensure-llama.sh)"
python="$(sed -n 's/^python=//p' <<<"${paths}")"
model="$(sed -n 's/^model=//p' <<<"${paths}")"

if [[ -z "${port}" ]]; then
    port="$("${python}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
fi

echo "llama-server: http://127.0.0.1:${port}/v1 (model smollm2, context ${ctx} tokens, ${threads} threads)" >&2
# --model_alias: the id /v1/models reports; the server answers whatever model name a request carries.
exec "${python}" -m llama_cpp.server \
    --model "${model}" \
    --model_alias smollm2 \
    --host 127.0.0.1 \
    --port "${port}" \
    --n_ctx "${ctx}" \
    --n_threads "${threads}" \
    --n_threads_batch "${threads}"
