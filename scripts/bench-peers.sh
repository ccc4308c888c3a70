#!/usr/bin/env bash
# Sluice against the hand-written Go loop and Powertools for AWS Lambda
# (TypeScript), in one run on one machine, on the very same event bytes.
#
# Needs the peers kit beside the repository (../shared/peers, or PEERS=dir).
# It copies the kit to a temporary directory (the original may be read-only),
# runs its run.sh (fixtures, Go hand loops, Powertools on Node, DynamoDB
# Local), then Sluice's own benchmarks on the kit's kinesis-10k.json, and
# prints ratios. Env: GO_COUNT (samples, default 5), SKIP_IDEM=1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="${PEERS:-$root/../shared/peers}"
if [[ ! -x "$peers/run.sh" ]]; then
	echo "bench-peers: no peers kit at $peers (set PEERS=dir)" >&2
	exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$peers" "$work/peers"
chmod -R u+w "$work/peers"
out="$work/results.txt"

echo "== peers: run.sh (Go hand loop, Powertools TypeScript)"
SKIP_IDEM="${SKIP_IDEM:-1}" "$work/peers/run.sh" | tee "$out"

echo "== sluice: BenchmarkKinesis10k on the same kinesis-10k.json"
(cd "$root" && SLUICE_BENCH_KINESIS="$work/peers/fixtures/kinesis-10k.json" \
	go test -run '^$' -bench 'Kinesis10k$|Kinesis10kHandLoop$' -benchtime 20x -count "${GO_COUNT:-5}" ./handlers) |
	tee "$work/sluice.txt"
awk '
	/^BenchmarkKinesis10k(HandLoop)?-/ {
		name=$1; sub(/-[0-9]+$/, "", name)
		for (i=2;i<=NF;i++) { if ($(i+1)=="ns/record") v[name]=v[name] " " $i; if ($(i+1)=="allocs/record") a[name]=$i }
	}
	END {
		for (n in v) {
			k=split(substr(v[n],2), x, " ")
			for (i=2;i<=k;i++) { y=x[i]+0; j=i-1; while (j>=1 && x[j]+0>y) { x[j+1]=x[j]; j-- } x[j+1]=y }
			med=(k%2)?x[(k+1)/2]:(x[k/2]+x[k/2+1])/2
			printf "peer=%s bench=kinesis-10k-frombytes ns_per_record_median=%.1f samples=%d allocs_per_record=%s\n", (n=="BenchmarkKinesis10k"?"sluice":"sluice-handloop"), med, k, a[n]
		}
	}' "$work/sluice.txt" | sort | tee -a "$out"

echo "== ratios (lower is faster for sluice)"
awk '
	/^peer=/ {
		delete f
		for (i=1;i<=NF;i++) { split($i, kv, "="); f[kv[1]]=kv[2] }
		id=f["peer"] "/" f["bench"] (f["variant"] ? "/" f["variant"] : "")
		ns[id]=f["ns_per_record_median"]
	}
	function r(name, a, b) { if (ns[a] != "" && ns[b] > 0) printf "ratio %s value=%.2f (%s / %s)\n", name, ns[a]/ns[b], ns[a], ns[b] }
	END {
		r("sluice_vs_go_handloop_frombytes", "sluice/kinesis-10k-frombytes", "go-handloop/kinesis-10k-frombytes")
		r("sluice_vs_sluice_repo_handloop", "sluice/kinesis-10k-frombytes", "sluice-handloop/kinesis-10k-frombytes")
		r("sluice_vs_powertools_parallel_frombytes", "sluice/kinesis-10k-frombytes", "powertools-ts/kinesis-10k/parallel-frombytes")
		r("sluice_vs_go_handloop_jsonv2_frombytes", "sluice/kinesis-10k-frombytes", "go-handloop-jsonv2/kinesis-10k-frombytes")
	}' "$out"
