#!/usr/bin/env bash
# Run every fuzz target in the module for the given time each (default 30s).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
t="${1:-30s}"
for pkg in $(go list ./...); do
	for f in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $f ($t)"
		go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"
	done
done
