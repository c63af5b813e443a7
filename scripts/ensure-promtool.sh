#!/usr/bin/env bash
# Makes sure `promtool` (Prometheus' checker, used by tests/metrics.rs to lint the /metrics scrape) is
# installed. Prints its version and exits 0 when it is; installs Debian's `prometheus` package (which
# ships /usr/bin/promtool) when running as root with apt-get; otherwise explains how to install it and
# exits 1.
#
# Note: on a host running systemd, installing the `prometheus` package also enables and starts a
# Prometheus server on :9090 (`systemctl disable --now prometheus` stops it). Containers without an
# init system are not affected.
set -euo pipefail

find_promtool() {
    if command -v promtool >/dev/null 2>&1; then
        command -v promtool
    elif [[ -x /usr/bin/promtool ]]; then
        echo /usr/bin/promtool
    else
        return 1
    fi
}

if promtool="$(find_promtool)"; then
    echo "promtool found at ${promtool}:"
    "${promtool}" --version
    exit 0
fi

if [[ "${EUID}" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    # Refresh the package lists only when they do not know the package yet (e.g. a fresh image with
    # empty lists); otherwise install from what is there.
    if ! apt-cache show prometheus >/dev/null 2>&1; then
        echo "ensure-promtool: updating the apt package lists" >&2
        apt-get update -qq
    fi
    echo "ensure-promtool: installing the prometheus package (it provides promtool)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus
    if promtool="$(find_promtool)"; then
        "${promtool}" --version
        exit 0
    fi
    echo "ensure-promtool: the prometheus package is installed but promtool is still missing" >&2
    exit 1
fi

cat >&2 <<'EOF'
ensure-promtool: promtool is not installed, and it cannot be installed automatically here
(that needs root and apt-get). Install it with one of:
  - Debian/Ubuntu:  sudo apt-get install --no-install-recommends prometheus
  - macOS:          brew install prometheus
  - any system:     download a release from https://prometheus.io/download/ and put the
                    `promtool` binary from the archive on your PATH
Or set SLEUTH_SKIP_PROMTOOL=1 to skip the promtool check in tests/metrics.rs.
EOF
exit 1
