#!/usr/bin/env bash
# Run the packages a Lambda function links (events, batch, handlers) as
# arm64 binaries under qemu-user, since Graviton is where many functions
# run. Installs qemu-user with apt when it is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v qemu-aarch64 >/dev/null; then
	echo "test-arm64: installing qemu-user"
	sudo=""
	[[ $(id -u) -ne 0 ]] && sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq qemu-user >/dev/null
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for pkg in events batch handlers; do
	GOARCH=arm64 go test -c -o "$out/$pkg.test" "./$pkg"
	# Run from the package directory, as go test does (testdata paths).
	(cd "$pkg" && qemu-aarch64 "$out/$pkg.test" -test.count=1 -test.run '.' | tail -1 | sed "s|^|arm64 $pkg: |")
done
