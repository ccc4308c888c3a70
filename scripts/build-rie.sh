#!/usr/bin/env bash
# build-rie.sh builds the AWS Lambda Runtime Interface Emulator (aws-lambda-rie)
# used by internal/testsupport/rie to run Lambda handlers on the host in tests.
#
# The version is pinned in go.mod by a Go tool directive:
#   go get -tool github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@<version>
# so this script needs only Go. Running it is optional: internal/testsupport/rie builds the
# binary itself on first use if it is missing or was built from another version.
#
# Output: $SLUICE_RIE if set, else ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/bin/aws-lambda-rie.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mod=github.com/aws/aws-lambda-runtime-interface-emulator
out="${SLUICE_RIE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/bin/aws-lambda-rie}"

cd "$root"
if ! version="$(go list -m -f '{{.Version}}' "$mod")"; then
	echo "build-rie.sh: $mod is not in go.mod; add it with:" >&2
	echo "  go get -tool $mod/cmd/aws-lambda-rie@<version>" >&2
	exit 1
fi

mkdir -p "$(dirname "$out")"
tmp="$(mktemp "$out.tmp.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp" "$mod/cmd/aws-lambda-rie"
chmod 0755 "$tmp"
mv -f "$tmp" "$out"
trap - EXIT
echo "built $out ($mod $version)"
