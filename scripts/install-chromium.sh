#!/usr/bin/env bash
# Make sure a headless Chromium is on PATH for the tests that load the
# HTML report of a run in a real browser (localtest/internal/htmlreport).
# Uses chromium (or the binary SLUICE_CHROMIUM names) when it is there;
# otherwise installs the Debian package chromium with apt-get, as root or
# with passwordless sudo (CI runs as root). When it cannot, it says how
# and exits 1: those tests fail without a browser, they are never skipped.
set -euo pipefail

for bin in "${SLUICE_CHROMIUM:-}" chromium chromium-browser; do
	[[ -n "$bin" ]] && command -v "$bin" >/dev/null && exit 0
done

fail() {
	cat >&2 <<-MSG
	install-chromium: no chromium on PATH, and $1.
	install-chromium: Install it (Debian/Ubuntu: sudo apt-get install chromium; macOS: install Chromium or Chrome),
	install-chromium: or set SLUICE_CHROMIUM to its path. The tests of the HTML run report need it.
	MSG
	exit 1
}

sudo=""
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo=sudo
	else
		fail "this user can not install it (not root, no passwordless sudo)"
	fi
fi
command -v apt-get >/dev/null || fail "there is no apt-get to install it with"
echo "install-chromium: installing chromium with apt-get" >&2
install() { DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
# The package lists may be missing or stale: update them once if the
# install does not find the package.
install 2>/dev/null || { $sudo apt-get update -qq && install; } || fail "apt-get install chromium failed"
command -v chromium >/dev/null || fail "apt-get installed chromium but it is not on PATH"
