#!/usr/bin/env bash
# Makes sure a headless browser and its WebDriver server are installed: the viewer's browser tests
# (tests/it/viewer.rs) start `chromedriver` on a free port and drive Chromium through it. Installs
# Debian's `chromium` and `chromium-driver` packages when running as root with apt-get; otherwise
# explains how to install them and exits 1. Also a font with Chinese glyphs (Debian's
# `fonts-wqy-microhei`, 5 MB): without one, Chromium draws a Chinese script's text as empty boxes, and
# the browser test that checks Chinese is drawn (tests/it/viewer.rs) fails.
set -euo pipefail

have_browser() {
    command -v chromedriver >/dev/null 2>&1 && { command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1; }
}
have_cjk_font() {
    command -v fc-list >/dev/null 2>&1 && [[ -n "$(fc-list :lang=zh family 2>/dev/null | head -1)" ]]
}

if have_browser && have_cjk_font; then
    chromedriver --version
    exit 0
fi

if [[ "${EUID}" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    if ! apt-cache show chromium-driver >/dev/null 2>&1; then
        echo "ensure-chromium: updating the apt package lists" >&2
        apt-get update -qq
    fi
    echo "ensure-chromium: installing chromium, chromium-driver and fonts-wqy-microhei" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-wqy-microhei
    chromedriver --version
    exit 0
fi

cat >&2 <<'MSG'
ensure-chromium: chromedriver, Chromium or a font with Chinese glyphs is not installed, and it
cannot be installed automatically here (that needs root and apt-get). Install them (Debian: sudo
apt-get install chromium chromium-driver fonts-wqy-microhei; Ubuntu: the chromium snap ships chromedriver; macOS: brew install chromedriver); the
viewer's browser tests start their own chromedriver on a free port, headless.
MSG
exit 1
