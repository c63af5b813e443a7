#!/usr/bin/env bash
# Makes sure `promtool` (Prometheus' checker: tests/it/metrics.rs lints the /metrics scrape with it,
# tests/it/dashboards.rs parses every panel query) and the `prometheus` server (tests/it/dashboards.rs starts
# its own, on a free port with a temporary storage directory, to run every panel's query against a
# live sweep and a live cluster) are installed. Prints their versions and exits 0 when they are;
# installs Debian's `prometheus` package (which ships /usr/bin/promtool and /usr/bin/prometheus) when
# running as root with apt-get; otherwise explains how to install it and exits 1.
#
# Note: on a host running systemd, installing the `prometheus` package also enables and starts a
# Prometheus server on :9090 (`systemctl disable --now prometheus` stops it). Containers without an
# init system are not affected.
set -euo pipefail

# find_binary NAME: NAME on PATH, or Debian's /usr/bin/NAME.
find_binary() {
    if command -v "$1" >/dev/null 2>&1; then
        command -v "$1"
    elif [[ -x "/usr/bin/$1" ]]; then
        echo "/usr/bin/$1"
    else
        return 1
    fi
}

both_found() {
    local promtool prometheus
    promtool="$(find_binary promtool)" && prometheus="$(find_binary prometheus)" || return 1
    echo "promtool found at ${promtool}, prometheus at ${prometheus}:"
    "${promtool}" --version 2>&1 | sed -n 1p
    "${prometheus}" --version 2>&1 | sed -n 1p
}

if both_found; then
    exit 0
fi

if [[ "${EUID}" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    # Refresh the package lists only when they do not know the package yet (e.g. a fresh image with
    # empty lists); otherwise install from what is there.
    if ! apt-cache show prometheus >/dev/null 2>&1; then
        echo "ensure-promtool: updating the apt package lists" >&2
        apt-get update -qq
    fi
    echo "ensure-promtool: installing the prometheus package (it provides promtool and prometheus)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus
    if both_found; then
        exit 0
    fi
    echo "ensure-promtool: the prometheus package is installed but promtool or prometheus is still missing" >&2
    exit 1
fi

cat >&2 <<'EOF'
ensure-promtool: promtool or prometheus is not installed, and it cannot be installed automatically
here (that needs root and apt-get). Install them with one of:
  - Debian/Ubuntu:  sudo apt-get install --no-install-recommends prometheus
  - macOS:          brew install prometheus
  - any system:     download a release from https://prometheus.io/download/ and put the
                    `promtool` and `prometheus` binaries from the archive on your PATH
Or, outside CI, set SLEUTH_SKIP_PROMTOOL=1 to skip the tests that need them (under CI=true they fail).
EOF
exit 1
