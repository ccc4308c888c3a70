#!/usr/bin/env bash
# Run the packages a Lambda function links (events, batch, handlers) as
# arm64 binaries under qemu-user, since Graviton is where many functions
# run. Installs qemu-user with apt-get when it is missing, as root or with
# passwordless sudo. When it cannot (no root, no sudo, no apt-get) it skips
# the arm64 run with a note saying how to get it: the one part of `make test`
# that may be skipped. On an arm64 machine `go test` already runs them natively.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

case "$(uname -m)" in
aarch64 | arm64)
	echo "test-arm64: this machine is arm64; go test runs events, batch and handlers natively, nothing to emulate"
	exit 0
	;;
esac

skip() {
	cat >&2 <<-MSG
	test-arm64: SKIPPED the arm64 run of events, batch and handlers: $1.
	test-arm64: To get it, install qemu-user once (Debian/Ubuntu: sudo apt-get install qemu-user)
	test-arm64: and run make test-arm64 (or make test). CI runs as root and installs it.
	MSG
	exit 0
}

if ! command -v qemu-aarch64 >/dev/null; then
	sudo=""
	if [[ $(id -u) -ne 0 ]]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			sudo=sudo
		else
			skip "qemu-aarch64 is not installed and this user can not install it (not root, no passwordless sudo)"
		fi
	fi
	command -v apt-get >/dev/null || skip "qemu-aarch64 is not installed and there is no apt-get to install it with"
	echo "test-arm64: installing qemu-user with apt-get"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq qemu-user >/dev/null
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for pkg in events batch handlers; do
	GOARCH=arm64 go test -c -o "$out/$pkg.test" "./$pkg"
	# Run from the package directory, as go test does (testdata paths). On
	# a failure, show what failed, not only the verdict.
	if (cd "$pkg" && qemu-aarch64 "$out/$pkg.test" -test.count=1 -test.run '.' >"$out/$pkg.log" 2>&1); then
		echo "arm64 $pkg: $(tail -1 "$out/$pkg.log")"
	else
		echo "arm64 $pkg: FAIL; the failures:" >&2
		grep -v ' level=' "$out/$pkg.log" | grep -E -A25 -- '--- FAIL|^panic:|DATA RACE' | head -200 >&2 || tail -50 "$out/$pkg.log" >&2
		exit 1
	fi
done
