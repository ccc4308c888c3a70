#!/usr/bin/env bash
# What `make test` runs: check formatting and vet, install every server the
# tests use (nothing is assumed to be on the machine but Go, Node, Java and
# npm; redis-server and chromium come from apt-get), then run all tests with the race detector. Each test binary starts
# the servers it needs on free 127.0.0.1 ports and stops them when it exits.
#
#   scripts/test.sh          everything
#   scripts/test.sh lint     formatting and vet only
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

start=$SECONDS
step() { printf '== %s (%ds)\n' "$*" $((SECONDS - start)); }

step "gofmt"
unformatted="$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*'))"
if [[ -n "$unformatted" ]]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
step "go vet"
go vet ./...
step "staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
[[ "${1:-}" == "lint" ]] && exit 0

# What the rest needs besides Go (docs/development.md).
missing=""
for tool in node npm java; do
	command -v "$tool" >/dev/null || missing="$missing $tool"
done
if [[ -n "$missing" ]]; then
	echo "make test: not found on PATH:$missing. The tests need Node 18 or later with npm" >&2
	echo "(to install the test servers) and Java 11 or later (DynamoDB Local); see docs/development.md." >&2
	exit 1
fi

step "install: AWS Lambda Runtime Interface Emulator"
scripts/build-rie.sh
# Jaeger, the trace backend of package tracing's end-to-end test, built from
# the version in scripts/jaeger.version (minutes the first time, then cached).
step "install: Jaeger"
scripts/build-jaeger.sh
if [[ -x scripts/servers/install.sh ]]; then
	step "install: local AWS servers"
	scripts/servers/install.sh
fi

# A Redis server for idempotency/redisstore (the Debian package
# redis-server, installed with apt-get as root or with passwordless sudo).
step "install: redis-server"
scripts/install-redis.sh

# Headless Chromium for the tests that load a run's HTML report in a real
# browser (the Debian package chromium, installed the same way).
step "install: chromium"
scripts/install-chromium.sh

# Skips, with a note, only when qemu-user is missing and cannot be installed.
step "arm64 (qemu-user): events, batch, handlers"
scripts/test-arm64.sh
# infra/ is its own module (CDK and jsii stay out of every Lambda binary):
# vet, staticcheck and its tests, in one package that starts one Node
# process for jsii.
step "infra: vet, staticcheck, go test -race (CDK, cdk-nag)"
(
	cd infra
	export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	go test -race -count=1 -timeout 15m ./...
)
# The 100,000-record idempotency chaos run: the race detector makes it ten
# times slower, so a race build runs 10,000 and this build runs it whole.
step "idempotency chaos, 100,000 records (no -race)"
go test -count=1 -run '^TestChaosIdempotency$' ./localtest
# go test last, so its summary lines close the output.
step "go test -race"
go test -race -count=1 -timeout 30m ./...
