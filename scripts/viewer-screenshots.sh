#!/usr/bin/env bash
# Writes a screenshot of each page of `sleuth view` into docs/viewer/ (or the directory given): the
# browser test of tests/it/viewer.rs plays a small sweep, opens the runs page, a sweep, a game, the game
# as seen by one character and a model call in headless Chromium, and saves each viewport as PNG.
# Needs chromium and chromium-driver (scripts/ensure-chromium.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-docs/viewer}"
mkdir -p "$out"
scripts/ensure-chromium.sh >/dev/null
CI=true SLEUTH_VIEWER_SCREENSHOTS="$(cd "$out" && pwd)" \
    cargo test --test it viewer::in_a_browser
ls -l "$out"/*.png
