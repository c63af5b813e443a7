#!/usr/bin/env bash
# Makes sure `redis-server` is installed: the store and cluster tests (tests/it/store_redis.rs,
# tests/it/cluster_queue.rs) start their own on a free port. Installs Debian's `redis-server` package when
# running as root with apt-get; otherwise explains how to install it and exits 1.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
    redis-server --version
    exit 0
fi

if [[ "${EUID}" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    if ! apt-cache show redis-server >/dev/null 2>&1; then
        echo "ensure-redis: updating the apt package lists" >&2
        apt-get update -qq
    fi
    echo "ensure-redis: installing the redis-server package" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server
    redis-server --version
    exit 0
fi

cat >&2 <<'MSG'
ensure-redis: redis-server is not installed, and it cannot be installed automatically here (that
needs root and apt-get). Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew
install redis); the Redis tests start their own server on a free port and leave any other alone.
MSG
exit 1
