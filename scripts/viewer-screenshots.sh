#!/usr/bin/env bash
# Writes a screenshot of each page of `sleuth view` into docs/viewer/ (or the directory given): the
# browser tests of tests/it/viewer/ play a small sweep, open the runs page, a sweep, a game, the game
# as seen by one character, a model call, the annotation pages and a person's seat in headless
# Chromium, and save each viewport as PNG.
# Needs chromium and chromium-driver (scripts/ensure-chromium.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-docs/viewer}"
mkdir -p "$out"
scripts/ensure-chromium.sh >/dev/null
CI=true SLEUTH_VIEWER_SCREENSHOTS="$(cd "$out" && pwd)" \
    cargo test --test it -- ::in_a_browser viewer::seat_browser
ls -l "$out"/*.png
