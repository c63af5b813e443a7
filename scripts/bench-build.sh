#!/usr/bin/env bash
# Measures a build the way docs/benchmarks.md (*The workspace*) reports it: a fresh clone of this
# repository at REV in DIR, a cold `cargo build --release --timings`, then a one-file edit of FILE
# (a path inside the clone) and the same build again. Prints wall and CPU time of each; keeps Cargo's
# timing reports beside DIR (DIR-cold.html, DIR-edit.html). Run two revisions one after the other
# in one sitting and compare them within that sitting.
#
#   scripts/bench-build.sh 5dc8fbc /tmp/b-old src/view/pages.rs
#   scripts/bench-build.sh HEAD /tmp/b-new crates/view/src/pages.rs
set -euo pipefail
if [ $# -ne 3 ]; then
    echo "usage: $0 REV DIR FILE" >&2
    exit 2
fi
rev=$1
dir=$2
edit=$3
repo=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dir"
git clone -q "$repo" "$dir"
cd "$dir"
git checkout -q "$rev"
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "== $rev cold build, $(date +%T), load $(load)"
/usr/bin/time -f "cold: wall %e s, user %U s, sys %S s" cargo build --release --timings 2>&1 |
    grep -E '^cold:|Finished|^error'
cp target/cargo-timings/cargo-timing.html "$dir-cold.html"
echo '// edit' >>"$edit"
echo "== $rev after an edit of $edit, $(date +%T), load $(load)"
/usr/bin/time -f "edit: wall %e s, user %U s, sys %S s" cargo build --release --timings 2>&1 |
    grep -E '^edit:|Finished|Compiling|^error'
cp target/cargo-timings/cargo-timing.html "$dir-edit.html"
