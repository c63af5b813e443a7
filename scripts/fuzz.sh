#!/usr/bin/env bash
# Runs each coverage-guided fuzz target of fuzz/ (cargo-fuzz + libFuzzer) for SECONDS (default 20) and
# exits non-zero if any crashed, printing the input that crashed and the panic. Not part of
# scripts/test.sh; see docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: script_loader wellplay_import mirage_import
#
# Environment: FUZZ_SANITIZER: `none` (default; sleuth has no unsafe code, and runs are about 5 times
# faster) or `address` (AddressSanitizer, cargo-fuzz's own default). Each has its own build folder,
# fuzz/target/<sanitizer>. Both keep debug assertions and overflow checks on, so an overflow is a crash.
# Works on the stable toolchain: RUSTC_BOOTSTRAP=1 lets it accept the -Z flags cargo-fuzz passes.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${1:-20}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
    echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
    exit 2
fi
shift || true
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=(script_loader wellplay_import mirage_import)
fi
sanitizer="${FUZZ_SANITIZER:-none}"
build=(--sanitizer "$sanitizer" --target-dir "target/$sanitizer")

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz from crates.io"
    cargo install cargo-fuzz --locked
fi
if ! rustc --version | grep -q nightly; then
    export RUSTC_BOOTSTRAP=1
fi

echo "== building the fuzz targets (sanitizer: $sanitizer; the first build takes several minutes)"
cargo fuzz build "${build[@]}"

# The dataset samples, when present beside the repository, packed into seed inputs in the (git-ignored)
# corpus folders: files separated by 0xFF bytes, in the order the targets read them.
samples="../../shared/datasets"
if [ -d "$samples" ] && command -v python3 >/dev/null; then
    mkdir -p corpus/wellplay_import corpus/mirage_import
    if python3 - "$samples" <<'EOF'
import json, pathlib, sys
root = pathlib.Path(sys.argv[1])
def pack(parts):
    return b"\xff".join(parts)
for d in sorted((root / "wellplay-sample").glob("*/")):
    info = (d / "json/script_info.json").read_bytes()
    names = json.loads(info.decode("utf-8-sig")).get("character_name", [])
    parts = [info, (d / "final_result/FSA.csv").read_bytes()]
    for n in names:
        parts += [(d / "json" / f"{n}.json").read_bytes(), (d / "final_result" / f"{n}.csv").read_bytes()]
    (pathlib.Path("corpus/wellplay_import") / f"sample-{d.name}").write_bytes(pack(parts))
truth = root / "mirage-sample/Truth.json"
for d in sorted((root / "mirage-sample").glob("*/")):
    parts = [(d / "script.json").read_bytes(), (d / "clues.json").read_bytes(),
             truth.read_bytes() if truth.exists() else b"", d.name.encode()]
    (pathlib.Path("corpus/mirage_import") / f"sample-{d.name}").write_bytes(pack(parts))
EOF
    then :; else echo "(could not pack the dataset samples; going on without them)"; fi
fi

status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    corpora=("corpus/$t" "seeds/$t")
    args=(-max_total_time="$seconds" -timeout=10 -print_final_stats=1)
    if [ "$t" = script_loader ]; then
        corpora+=(../examples)
        args+=(-dict=dicts/script_loader.dict)
    fi
    log="artifacts/$t.log"
    echo "== $t: ${seconds}s (log: fuzz/$log)"
    if cargo fuzz run "${build[@]}" "$t" "${corpora[@]}" -- "${args[@]}" >"$log" 2>&1; then
        grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::average_exec_per_sec)' "$log" || true
    else
        status=1
        echo "!! $t crashed or failed (whole log with the backtrace: fuzz/$log):"
        # The panic and the top of its backtrace, or libFuzzer's own error (timeout, out of memory).
        sed -n '/panicked at/,/__libfuzzer_sys_run/p' "$log" | head -n 60
        grep -E "^(==[0-9]+== ?ERROR|ERROR|SUMMARY)" "$log" | head -n 5 || true
        artifact=$(grep -oE "Test unit written to [^ ]+" "$log" | tail -1 | sed 's/Test unit written to //')
        if [ -n "$artifact" ]; then
            echo "!! crashing input: $artifact"
            echo "!! reproduce: (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run ${build[*]} $t $artifact)"
        fi
    fi
done
exit "$status"
