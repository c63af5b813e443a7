#!/usr/bin/env bash
# Makes sure a TrueType font is installed for the PNG plots of `sleuth report` (report/plots.rs reads
# DejaVu Sans at run time; tests/it/report.rs decodes the PNGs). Prints the font's path and exits 0 when
# it is there; installs Debian's `fonts-dejavu-core` when running as root with apt-get; otherwise
# explains how to install it and exits 1. Without a font, `sleuth report` still writes SVG plots.
set -euo pipefail

FONT=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf

if [[ -n "${SLEUTH_FONT:-}" && -r "${SLEUTH_FONT}" ]]; then
    echo "font: ${SLEUTH_FONT} (SLEUTH_FONT)"
    exit 0
fi
if [[ -r "${FONT}" ]]; then
    echo "font: ${FONT}"
    exit 0
fi

if [[ "${EUID}" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    # Refresh the package lists only when they do not know the package yet (e.g. a fresh image with
    # empty lists); otherwise install from what is there.
    if ! apt-cache show fonts-dejavu-core >/dev/null 2>&1; then
        echo "ensure-fonts: updating the apt package lists" >&2
        apt-get update -qq
    fi
    echo "ensure-fonts: installing fonts-dejavu-core (DejaVu Sans, for the report's PNG plots)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-dejavu-core
    if [[ -r "${FONT}" ]]; then
        echo "font: ${FONT}"
        exit 0
    fi
    echo "ensure-fonts: fonts-dejavu-core is installed but ${FONT} is still missing" >&2
    exit 1
fi

cat >&2 <<EOF
ensure-fonts: ${FONT} is not installed, and it cannot be installed automatically here
(that needs root and apt-get). Install it with one of:
  - Debian/Ubuntu:  sudo apt-get install --no-install-recommends fonts-dejavu-core
  - Fedora:         sudo dnf install dejavu-sans-fonts
  - any system:     set SLEUTH_FONT to the path of a TrueType (.ttf) font
Without a font, sleuth report writes its plots as SVG only.
EOF
exit 1
