#!/usr/bin/env bash
# Makes sure the Python libraries docs/analysis.md is written for are available to tests/it/analysis.rs:
# pandas, polars, DuckDB and pyarrow (with numpy, which pandas and pyarrow need), from PyPI, into a
# virtualenv kept in a cache directory. Nothing else is downloaded when the tests run.
#
# All five ship binary wheels for CPython 3.11 on x86_64 Linux, so the install is a download (about
# 600 MB unpacked, ~25 s here), not a build. The versions are pinned: the venv is recreated when it is broken (a
# Python upgrade removes its interpreter) or when the pinned set below changes; otherwise it is reused
# as it is and the script returns in about a second (the import check).
#
# Layout (SLEUTH_CACHE, default ~/.cache/sleuth):
#   analysis/venv/              the virtualenv
#   analysis/venv/.sleuth-pins  the pinned set it was built with
# Prints the venv's python as a `python=...` line on success.
set -euo pipefail

cache="${SLEUTH_CACHE:-${HOME}/.cache/sleuth}/analysis"
venv="${cache}/venv"
stamp="${venv}/.sleuth-pins"
pins=(
    "numpy==2.4.6"
    "pyarrow==26.0.1"
    "pandas==3.1.1"
    "polars==2.1.0"
    "duckdb==2.0.1"
)
want="$(printf '%s\n' "${pins[@]}")"
mkdir -p "${cache}"

python="${SLEUTH_PYTHON:-python3}"
if ! command -v "${python}" >/dev/null 2>&1; then
    echo "ensure-analysis: ${python} not found; install Python 3.11 or later (Debian: apt-get install python3 python3-venv)" >&2
    exit 1
fi

check() {
    [[ -x "${venv}/bin/python" ]] \
        && [[ -f "${stamp}" ]] \
        && [[ "$(cat "${stamp}")" == "${want}" ]] \
        && "${venv}/bin/python" -c 'import pandas, polars, duckdb, pyarrow' >/dev/null 2>&1
}

if ! check; then
    rm -rf "${venv}"
    echo "ensure-analysis: creating ${venv} with ${pins[*]}" >&2
    "${python}" -m venv "${venv}"
    "${venv}/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: "${pins[@]}" >&2
    # Written last: a killed install leaves no stamp, so the next run starts again.
    printf '%s\n' "${want}" >"${stamp}"
    if ! check; then
        echo "ensure-analysis: ${venv} was installed but does not import pandas, polars, duckdb and pyarrow" >&2
        exit 1
    fi
fi

echo "python=${venv}/bin/python"
