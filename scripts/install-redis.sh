#!/usr/bin/env bash
# Make sure a Redis server is on PATH for the Redis idempotency store's
# tests (internal/testsupport/servers starts it on a free 127.0.0.1 port). Uses
# redis-server or valkey-server when one is there; otherwise installs the
# Debian package redis-server with apt-get, as root or with passwordless
# sudo (CI runs as root). When it cannot, it says how and exits 1: those
# tests fail without a server, they are never skipped.
set -euo pipefail

for bin in "${SLUICE_REDIS_SERVER:-}" redis-server valkey-server; do
	[[ -n "$bin" ]] && command -v "$bin" >/dev/null && exit 0
done

fail() {
	cat >&2 <<-MSG
	install-redis: no redis-server (or valkey-server) on PATH, and $1.
	install-redis: Install one (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis),
	install-redis: or set SLUICE_REDIS_SERVER to its path. The tests of idempotency/redisstore need it.
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
echo "install-redis: installing redis-server with apt-get" >&2
install() { DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends redis-server >/dev/null; }
# The package lists may be missing or stale: update them once if the
# install does not find the package.
install 2>/dev/null || { $sudo apt-get update -qq && install; } || fail "apt-get install redis-server failed"
command -v redis-server >/dev/null || fail "apt-get installed redis-server but it is not on PATH"
