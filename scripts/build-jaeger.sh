#!/usr/bin/env bash
# build-jaeger.sh builds Jaeger (all-in-one: OTLP receiver, in-memory store,
# query API), the trace backend the tracing package's end-to-end test
# exports to (internal/testsupport/jaeger starts it on 127.0.0.1).
#
# The version is pinned in scripts/jaeger.version. It is built from the Go
# module proxy in a throwaway module of its own (Jaeger's go.mod holds a
# replace directive, which `go install module@version` refuses), so its
# dependencies stay out of Sluice's go.mod. Running this is
# optional: internal/testsupport/jaeger runs it on first use when the
# binary is missing or was built from another version.
#
# Output: $SLUICE_JAEGER if set, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/bin/jaeger-<version>.
# The first build downloads and compiles a few hundred MB: minutes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="$(tr -d '[:space:]' < "$root/scripts/jaeger.version")"
pkg=github.com/jaegertracing/jaeger/cmd/jaeger
out="${SLUICE_JAEGER:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/bin/jaeger-$version}"

if [[ -x "$out" ]]; then
	echo "$out ($pkg $version) is built" >&2
	exit 0
fi
mkdir -p "$(dirname "$out")"
gobin="$(mktemp -d "$(dirname "$out")/.jaeger-build.XXXXXX")"
trap 'rm -rf "$gobin"' EXIT
# Outside the repository, so Sluice's go.mod plays no part.
(
	cd "$gobin"
	export GOFLAGS=-mod=mod CGO_ENABLED=0
	go mod init sluice.invalid/jaeger-build >/dev/null 2>&1
	go get -tool "$pkg@$version"
	go build -trimpath -o "$gobin/jaeger" "$pkg"
)
mv -f "$gobin/jaeger" "$out"
echo "built $out ($pkg $version)" >&2
