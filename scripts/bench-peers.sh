#!/usr/bin/env bash
# make bench-peers: Sluice against the same work written by hand in Go and
# against Powertools for AWS Lambda (TypeScript), in one run on one machine,
# on the very same event bytes. Everything it needs is in this repository:
#
#   bench/gen             writes kinesis-10k.json, sqs-1k.json, dynamodb-10k.json
#                         and kafka-10k.json (deterministic)
#   bench/powertools-ts   the Powertools peer (exact versions, committed lock)
#   handlers/*bench*_test.go  Sluice's benchmarks and the Go hand loops
#   bench/coldstart       start -> first Runtime API /next, against bare aws-lambda-go
#
# Steps: generate the events, npm ci the peer, run the Go benchmarks
# (median of GO_COUNT samples, Sluice's and the hand loop's alternating)
# and the Node ones (median of ITER iterations after WARMUP), time the
# cold starts (COLD_COUNT interleaved pairs per source), then print ns per record and the ratios of this run.
# Then idempotency: start DynamoDB Local (go run ./bench/dynamodblocal, the
# server internal/testsupport/servers installs for the tests), run Sluice's
# BenchmarkSQS1kIdempotent (idempotency/dynamodbstore) and
# bench/powertools-ts/idem.mjs against it, first pass and replay of the
# 1,000-message batch, and print wall ms, requests and units per record and
# the ratios.
#
# Needs Go, Node >= 20 and npm, the npm registry on the first run, and Java
# >= 11 for DynamoDB Local. Output (events, raw results, log) goes to
# BENCH_OUT, default bench/out (gitignored). Env: GO_COUNT (5), ITER (20),
# WARMUP (5), JSONV2=1 adds the Go hand loop built with GOEXPERIMENT=jsonv2
# (one more build, about a minute); IDEM_REPEATS (5: samples of each
# idempotency phase, after one warm-up), IDEM_VARIANTS (the peer's variants,
# default parallel,sequential,sdk-floor), SKIP_IDEM=1 leaves idempotency out,
# INSTR=1 adds instructions per record of the Go benchmarks, counted by
# valgrind (a few minutes more; the one figure a busy machine does not move).
#
# Latency mode, IDEM_RTT=50ms (any Go duration): only idempotency, at
# production latency. DynamoDB Local and a redis-server sit behind
# latencyproxy delay lines of that round trip; Sluice's
# bench/idemlatency benchmarks (on the DynamoDB and the Redis store) and
# Powertools' idem.mjs (on DynamoDB, through the same proxy) run SQS
# standard, 10 and 100 messages, and Kinesis, 40 and 200 records of one
# shard, each first pass (new keys) and replay (and for Sluice's streams
# next: new records on an established lane); it prints wall ms, the
# store's requests, writes and (DynamoDB) write and read units per record,
# and round trips on the critical path (wall / RTT), median of
# IDEM_REPEATS after one warm-up; then DynamoDB Local's write rate (Sluice's
# SQS first pass again with no delay: writes/s, and so the floor its 200
# writes put under any round trip). IDEM_RTT_VARIANTS picks the peer's SQS
# variants (default parallel,sdk-floor). It needs redis-server
# (scripts/install-redis.sh installs it with apt-get when it can).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
for tool in go node npm; do
	command -v "$tool" >/dev/null || { echo "bench-peers: $tool not found on PATH (needs Go, Node >= 20, npm)" >&2; exit 1; }
done

out="${BENCH_OUT:-$root/bench/out}"
mkdir -p "$out"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
results="$out/run-$stamp.txt"
log="$out/run-$stamp.log"
: >"$results"
start=$SECONDS
step() { printf '== %s (%ds)\n' "$*" $((SECONDS - start)) >&2; }
emit() { tee -a "$results"; }

echo "env date=$stamp go=$(go env GOVERSION) node=$(node --version) cpus=$(nproc) cpu=\"$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null)\" loadavg=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)" | emit

step "events: go run ./bench/gen -out $out"
go run ./bench/gen -out "$out" | emit

step "powertools-ts: npm ci"
(cd bench/powertools-ts && npm ci --no-audit --no-fund --loglevel=error) >>"$log" 2>&1 ||
	{ echo "bench-peers: npm ci failed in bench/powertools-ts (is the npm registry reachable?); see $log" >&2; exit 1; }

# go_bench LABEL_SLUICE LABEL_HANDLOOP BENCH REGEX BENCHTIME [env...]: run the
# benchmarks and print one line per benchmark with the median of the samples.
go_bench() {
	local sluice="$1" hand="$2" bench="$3" regex="$4" benchtime="$5"
	shift 5
	local raw="$out/go-$hand-$bench-$stamp.txt"
	# One binary, run GO_COUNT times: each run times Sluice and then the
	# hand loop, so the samples of the two alternate and a machine that
	# slows down for a minute weighs on both (go test -count would take all
	# of one benchmark's samples first).
	local bin="$out/handlers-$hand.test"
	env "$@" go test -c -o "$bin" ./handlers >>"$log" 2>&1 ||
		{ echo "bench-peers: go test -c failed; see $log" >&2; exit 1; }
	: >"$raw"
	for _ in $(seq 1 "${GO_COUNT:-5}"); do
		env "$@" SLUICE_BENCH_KINESIS="$out/kinesis-10k.json" SLUICE_BENCH_SQS="$out/sqs-1k.json" \
			SLUICE_BENCH_DYNAMODB="$out/dynamodb-10k.json" SLUICE_BENCH_KAFKA="$out/kafka-10k.json" \
			"$bin" -test.run '^$' -test.bench "$regex" -test.benchtime "$benchtime" -test.count 1 >>"$raw" 2>>"$log" ||
			{ echo "bench-peers: the benchmark binary failed; see $raw and $log" >&2; exit 1; }
	done
	awk -v sluice="$sluice" -v hand="$hand" -v bench="$bench" '
		/^Benchmark/ {
			name = $1; sub(/-[0-9]+$/, "", name)
			for (i = 2; i < NF; i++) {
				if ($(i+1) == "ns/record") v[name] = v[name] " " $i
				if ($(i+1) == "allocs/op") a[name] = $i
			}
		}
		END {
			for (n in v) {
				k = split(substr(v[n], 2), x, " ")
				for (i = 2; i <= k; i++) { y = x[i] + 0; j = i - 1; while (j >= 1 && x[j] + 0 > y) { x[j+1] = x[j]; j-- } x[j+1] = y }
				med = (k % 2) ? x[(k+1)/2] : (x[k/2] + x[k/2+1]) / 2
				peer = (n ~ /HandLoop$/) ? hand : sluice
				records = (bench == "sqs-1k") ? 1000 : 10000
				printf "peer=%s bench=%s variant=frombytes ns_per_record_median=%.1f ns_per_record_min=%.1f ns_per_record_max=%.1f samples=%d allocs_per_record=%.1f go_bench=%s\n",
					peer, bench, med, x[1], x[k], k, a[n] / records, n
			}
		}' "$raw" | sort -r | emit
}

# start_dynamodb: DynamoDB Local for both sides; sets ddb and ddb_pid.
start_dynamodb() {
	go build -o "$out/dynamodblocal" ./bench/dynamodblocal
	: >"$out/dynamodb-endpoint"
	# It stops on SIGTERM (the trap) or when this script exits.
	"$out/dynamodblocal" >"$out/dynamodb-endpoint" 2>>"$log" &
	ddb_pid=$!
	trap 'kill "$ddb_pid" 2>/dev/null || true; wait "$ddb_pid" 2>/dev/null || true' EXIT
	for _ in $(seq 1 600); do
		[[ -s "$out/dynamodb-endpoint" ]] && break
		kill -0 "$ddb_pid" 2>/dev/null || break
		sleep 0.5
	done
	ddb="$(head -1 "$out/dynamodb-endpoint")"
	[[ -n "$ddb" ]] || { echo "bench-peers: DynamoDB Local did not start; see $log" >&2; exit 1; }
	echo "env dynamodb_local=$ddb" | emit
}

if [[ -n "${IDEM_RTT:-}" ]]; then
	case "$IDEM_RTT" in
	*ms) rtt_ms="${IDEM_RTT%ms}" ;;
	*s) rtt_ms="$(awk -v s="${IDEM_RTT%s}" 'BEGIN { print s * 1000 }')" ;;
	*) echo "bench-peers: IDEM_RTT=$IDEM_RTT: want a duration such as 50ms" >&2; exit 1 ;;
	esac
	reps="${IDEM_REPEATS:-5}"
	step "latency mode: redis-server (scripts/install-redis.sh)"
	scripts/install-redis.sh
	step "latency mode: DynamoDB Local and a latencyproxy of $IDEM_RTT in front of it"
	start_dynamodb
	go build -o "$out/latencyproxy" ./bench/latencyproxy/cmd/latencyproxy
	: >"$out/proxy-endpoint"
	"$out/latencyproxy" -upstream "$ddb" -rtt "$IDEM_RTT" >"$out/proxy-endpoint" 2>>"$log" &
	proxy_pid=$!
	trap 'kill "$proxy_pid" "$ddb_pid" 2>/dev/null || true; wait "$proxy_pid" "$ddb_pid" 2>/dev/null || true' EXIT
	for _ in $(seq 1 100); do
		[[ -s "$out/proxy-endpoint" ]] && break
		sleep 0.1
	done
	proxy="$(head -1 "$out/proxy-endpoint")"
	[[ -n "$proxy" ]] || { echo "bench-peers: latencyproxy did not start; see $log" >&2; exit 1; }
	echo "env idem_rtt=$IDEM_RTT rtt_ms=$rtt_ms proxy=$proxy" | emit

	step "latency mode: Sluice (bench/idemlatency: DynamoDB and Redis stores, each behind its own proxy)"
	raw="$out/go-sluice-idem-rtt-$stamp.txt"
	go test -c -o "$out/idemlatency.test" ./bench/idemlatency >>"$log" 2>&1 ||
		{ echo "bench-peers: go test -c ./bench/idemlatency failed; see $log" >&2; exit 1; }
	(cd bench/idemlatency && SLUICE_BENCH_DYNAMODB="$ddb" SLUICE_BENCH_RTT="$IDEM_RTT" \
		SLUICE_BENCH_SQS="$out/sqs-1k.json" SLUICE_BENCH_KINESIS="$out/kinesis-10k.json" \
		"$out/idemlatency.test" -test.run '^$' -test.bench '^BenchmarkLatency' -test.benchtime 1x -test.count $((reps + 1))) >"$raw" 2>>"$log" ||
		{ echo "bench-peers: the latency benchmarks failed; see $raw and $log" >&2; exit 1; }
	# One iteration per sample; the first sample of each is the warm-up.
	awk -v rtt="$rtt_ms" '
		/^BenchmarkLatency/ {
			name = $1; sub(/-[0-9]+$/, "", name)
			if (!(name in seen)) { seen[name] = 1; next }
			for (i = 2; i < NF; i++) {
				if ($(i+1) == "ns/op") w[name] = w[name] " " $i / 1e6
				if ($(i+1) ~ /record$|allocs\/op|^records$/) m[name, $(i+1)] = $i
			}
		}
		END {
			for (nm in w) {
				split(nm, p, "/")
				# BenchmarkLatencySQS10 -> sqs-10-idem-rtt, BenchmarkLatencyKinesis200 -> kinesis-200-idem-rtt
				src = p[1]; sub(/^BenchmarkLatency/, "", src)
				size = src; gsub(/[^0-9]/, "", size); sub(/[0-9]+$/, "", src)
				bench = tolower(src) "-" size "-idem-rtt"
				k = split(substr(w[nm], 2), x, " ")
				for (i = 2; i <= k; i++) { y = x[i] + 0; j = i - 1; while (j >= 1 && x[j] + 0 > y) { x[j+1] = x[j]; j-- } x[j+1] = y }
				med = (k % 2) ? x[(k+1)/2] : (x[k/2] + x[k/2+1]) / 2
				n = m[nm, "records"]
				units = (p[2] == "dynamodb") ? sprintf(" wcu_per_record=%.3f rcu_per_record=%.3f", m[nm, "WCU/record"], m[nm, "RCU/record"]) : ""
				printf "peer=sluice-%s bench=%s variant=default phase=%s wall_ms_median=%.1f wall_ms_min=%.1f wall_ms_max=%.1f rtts=%.2f requests_per_record=%.3f writes_per_record=%.3f%s allocs_per_record=%.1f records=%d repeats=%d rtt_ms=%s\n",
					p[2], bench, p[3], med, x[1], x[k], med / rtt, m[nm, "requests/record"], m[nm, "writes/record"], units, m[nm, "allocs/op"] / n, n, k, rtt
			}
		}' "$raw" | sort | emit

	# DynamoDB Local writes one item at a time (SQLite): the first pass's
	# 200 writes (claim and complete per message) take at least 200 over
	# its write rate, whatever the round trip. Measured as Sluice's SQS
	# first pass with no delay (a 0 ms proxy): writes/s and that floor.
	step "latency mode: DynamoDB Local's write rate (Sluice SQS100 first pass at 0 RTT)"
	raw0="$out/go-sluice-idem-rtt0-$stamp.txt"
	(cd bench/idemlatency && SLUICE_BENCH_DYNAMODB="$ddb" SLUICE_BENCH_RTT=0 SLUICE_BENCH_SQS="$out/sqs-1k.json" \
		"$out/idemlatency.test" -test.run '^$' -test.bench '^BenchmarkLatencySQS100$/^dynamodb$/^first$' -test.benchtime 1x -test.count $((reps + 1))) >"$raw0" 2>>"$log" ||
		{ echo "bench-peers: the 0 RTT benchmark failed; see $raw0 and $log" >&2; exit 1; }
	awk -v rtt="$rtt_ms" '
		/^BenchmarkLatency/ {
			if (!seen++) next # the warm-up
			for (i = 2; i < NF; i++) {
				if ($(i+1) == "ns/op") w[++k] = $i / 1e6
				if ($(i+1) == "writes/record") wr = $i
				if ($(i+1) == "records") n = $i
			}
		}
		END {
			for (i = 2; i <= k; i++) { y = w[i]; j = i - 1; while (j >= 1 && w[j] > y) { w[j+1] = w[j]; j-- } w[j+1] = y }
			med = (k % 2) ? w[(k+1)/2] : (w[k/2] + w[k/2+1]) / 2
			writes = wr * n
			printf "peer=dynamodb-local bench=write-rate variant=sluice-sqs100-first-0rtt wall_ms_median=%.1f wall_ms_min=%.1f wall_ms_max=%.1f writes=%d writes_per_s=%.0f floor_rtts_at_%sms=%.2f repeats=%d\n",
				med, w[1], w[k], writes, writes / (med / 1000), rtt, med / rtt, k
		}' "$raw0" | emit

	step "latency mode: Powertools for AWS Lambda (TypeScript), idem.mjs through the proxy"
	peer() { # SOURCE BATCH VARIANTS
		(cd bench/powertools-ts &&
			SLUICE_BENCH_DYNAMODB="$proxy" SLUICE_BENCH_DYNAMODB_ADMIN="$ddb" RTT_MS="$rtt_ms" REPEATS="$reps" WARMUP=1 \
				SOURCE="$1" BATCH="$2" BENCH="$1-$2-idem-rtt" VARIANTS="$3" node idem.mjs "$out") 2>>"$log" | emit
	}
	peer sqs 10 "${IDEM_RTT_VARIANTS:-parallel,sdk-floor}"
	peer sqs 100 "${IDEM_RTT_VARIANTS:-parallel,sdk-floor}"
	peer kinesis 40 sequential
	peer kinesis 200 sequential
	kill "$proxy_pid" "$ddb_pid" 2>/dev/null || true
	wait "$proxy_pid" "$ddb_pid" 2>/dev/null || true
	trap - EXIT

	step "latency mode: summary"
	awk '
		/^peer=.* bench=(sqs|kinesis)-[0-9]+-idem-rtt / {
			delete f
			for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
			id = f["peer"] " " f["variant"]; b = f["bench"] " " f["phase"]
			if (!(b in knownb)) { knownb[b] = 1; bs[++nb] = b }
			if (!((b, id) in known)) { known[b, id] = 1; ids[b] = ids[b] "|" id }
			ms[b, id] = f["wall_ms_median"]; rt[b, id] = f["rtts"]; rq[b, id] = f["requests_per_record"]; wr[b, id] = f["writes_per_record"]
			wc[b, id] = f["wcu_per_record"]; rc[b, id] = f["rcu_per_record"]
			rtt = f["rtt_ms"]
		}
		END {
			if (nb == 0) exit
			for (i = 1; i <= nb; i++) {
				b = bs[i]
				s = ms[b, "sluice-dynamodb default"]
				printf "\n%-30s %-28s %10s %8s %13s %11s %8s %8s %16s\n", b " (RTT " rtt " ms)", "contender", "wall ms", "RTTs", "requests/rec", "writes/rec", "WCU/rec", "RCU/rec", "wall/Sluice-ddb"
				k = split(substr(ids[b], 2), list, "|")
				for (j = 1; j <= k; j++) {
					id = list[j]
					r = (s > 0) ? sprintf("%.2f", ms[b, id] / s) : ""
					printf "%-30s %-28s %10s %8s %13s %11s %8s %8s %16s\n", "", id, ms[b, id], rt[b, id], rq[b, id], wr[b, id], wc[b, id], rc[b, id], r
				}
			}
			print "\nRTTs: wall time over the round trip, the round trips on the critical path. wall/Sluice-ddb: the contender'"'"'s wall time over Sluice'"'"'s on DynamoDB (above 1: Sluice is faster). Same servers, same proxy round trip, one run."
			print "Phases: first, a batch of new records on a fresh table (for Sluice on a stream, a lane'"'"'s first batch, which also reads its records'"'"' own keys once); next (Sluice, streams), new records on a lane that ran earlier ones, what a shard pays batch after batch; replay, the batch again (Sluice on SQS: redelivered, ApproximateReceiveCount 2). Units as billed for 1 KB items (Sluice: counted by request, AWS'"'"'s rules; Powertools: DynamoDB Local'"'"'s ConsumedCapacity, plus one per refused write)."
		}' "$results" | tee "$out/summary-$stamp.txt"
	echo "results: $results $out/summary-$stamp.txt  log: $log" >&2
	exit 0
fi

step "go: Sluice and the hand loop, Kinesis 10k"
go_bench sluice go-handloop kinesis-10k '^BenchmarkKinesis10k(HandLoop)?$' 20x
step "go: Sluice and the hand loop, SQS 1k"
go_bench sluice go-handloop sqs-1k '^BenchmarkSQS1k(HandLoop)?$' 200x
step "go: Sluice and the hand loop, DynamoDB Streams 10k"
go_bench sluice go-handloop dynamodb-10k '^BenchmarkDynamoDB10k(HandLoop)?$' 3x
step "go: Sluice and the hand loop, Kafka 10k"
go_bench sluice go-handloop kafka-10k '^BenchmarkKafka10k(HandLoop)?$' 10x
if [[ -n "${JSONV2:-}" ]]; then
	step "go: the hand loops with GOEXPERIMENT=jsonv2"
	go_bench sluice-jsonv2 go-handloop-jsonv2 kinesis-10k '^BenchmarkKinesis10kHandLoop$' 20x GOEXPERIMENT=jsonv2
	go_bench sluice-jsonv2 go-handloop-jsonv2 sqs-1k '^BenchmarkSQS1kHandLoop$' 200x GOEXPERIMENT=jsonv2
fi

if [[ -n "${INSTR:-}" ]]; then
	# Instructions per record, counted by valgrind's cachegrind: the same on
	# every run, where the clock moves with the machine. GOGC=off and one
	# thread keep the collector's share out of the count; two iteration
	# counts cancel the set-up.
	step "go: instructions per record (valgrind cachegrind)"
	command -v valgrind >/dev/null || { echo "bench-peers: INSTR=1 needs valgrind (Debian/Ubuntu: apt-get install valgrind)" >&2; exit 1; }
	go test -c -o "$out/handlers.test" ./handlers
	instr() {
		env GOGC=off GOMAXPROCS=1 SLUICE_BENCH_KINESIS="$out/kinesis-10k.json" SLUICE_BENCH_SQS="$out/sqs-1k.json" \
			SLUICE_BENCH_DYNAMODB="$out/dynamodb-10k.json" SLUICE_BENCH_KAFKA="$out/kafka-10k.json" \
			valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
			"$out/handlers.test" -test.run '^$' -test.bench "^$1\$" -test.benchtime "$2x" 2>&1 |
			awk '/I *refs/ { gsub(",", "", $NF); print $NF }'
	}
	for spec in Kinesis10k:10000:1:3 SQS1k:1000:10:30 DynamoDB10k:10000:1:3 Kafka10k:10000:1:3; do
		IFS=: read -r name recs lo hi <<<"$spec"
		for b in "Benchmark$name" "Benchmark${name}HandLoop"; do
			a="$(instr "$b" "$lo")"
			z="$(instr "$b" "$hi")"
			[[ -n "$a" && -n "$z" ]] || { echo "bench-peers: cachegrind gave no count for $b; see $log" >&2; exit 1; }
			echo "instr bench=$name go_bench=$b instructions_per_record=$(((z - a) / ((hi - lo) * recs)))" | emit
		done
	done
fi

step "node: Powertools for AWS Lambda (TypeScript), Kinesis 10k and SQS 1k"
for source in kinesis sqs; do
	(cd bench/powertools-ts && ITER="${ITER:-20}" WARMUP="${WARMUP:-5}" node bench.mjs "$source" "$out") 2>>"$log" | emit
done

step "go: cold start, each source's minimal bootstrap against bare aws-lambda-go"
raw="$out/go-coldstart-$stamp.txt"
go test -run '^$' -bench ColdStart -benchtime "${COLD_COUNT:-15}x" -count 1 ./bench/coldstart >"$raw" 2>>"$log" ||
	{ echo "bench-peers: cold-start benchmark failed; see $raw and $log" >&2; exit 1; }
awk '/^BenchmarkColdStart\// {
	name = $1; sub(/^BenchmarkColdStart\//, "", name); sub(/-[0-9]+$/, "", name)
	line = "coldstart source=" name
	for (i = 3; i < NF; i++) if ($(i+1) ~ /-(ms|MB)$/) line = line " " $(i+1) "=" $i
	print line
}' "$raw" | emit

if [[ -z "${SKIP_IDEM:-}" ]]; then
	step "idempotency: DynamoDB Local"
	start_dynamodb

	step "idempotency: Sluice (go test -bench BenchmarkSQS1kIdempotent)"
	raw="$out/go-sluice-sqs-1k-idem-$stamp.txt"
	reps="${IDEM_REPEATS:-5}"
	SLUICE_BENCH_DYNAMODB="$ddb" SLUICE_BENCH_SQS="$out/sqs-1k.json" \
		go test -run '^$' -bench '^BenchmarkSQS1kIdempotent$' -benchtime 1x -count $((reps + 1)) ./idempotency/dynamodbstore >"$raw" 2>>"$log" ||
		{ echo "bench-peers: go test failed; see $raw and $log" >&2; exit 1; }
	# One iteration per sample; the first sample of each phase is the warm-up.
	awk '
		/^BenchmarkSQS1kIdempotent\// {
			split($1, p, "/"); phase = p[2]; sub(/-[0-9]+$/, "", phase)
			if (!(phase in seen)) { seen[phase] = 1; next }
			for (i = 2; i < NF; i++) {
				if ($(i+1) == "ns/op") w[phase] = w[phase] " " $i / 1e6
				if ($(i+1) != "" && $(i+1) ~ /record$|allocs\/op|records/) m[phase, $(i+1)] = $i
			}
		}
		END {
			for (ph in w) {
				k = split(substr(w[ph], 2), x, " ")
				for (i = 2; i <= k; i++) { y = x[i] + 0; j = i - 1; while (j >= 1 && x[j] + 0 > y) { x[j+1] = x[j]; j-- } x[j+1] = y }
				med = (k % 2) ? x[(k+1)/2] : (x[k/2] + x[k/2+1]) / 2
				n = m[ph, "records"]
				printf "peer=sluice bench=sqs-1k-idem variant=default phase=%s wall_ms_median=%.1f wall_ms_min=%.1f wall_ms_max=%.1f requests_per_record=%.3f writes_per_record=%.3f wcu_per_record=%.3f rcu_per_record=%.3f allocs_per_record=%.1f records=%d repeats=%d\n",
					ph, med, x[1], x[k], m[ph, "requests/record"], m[ph, "writes/record"], m[ph, "WCU/record"], m[ph, "RCU/record"], m[ph, "allocs/op"] / n, n, k
			}
		}' "$raw" | sort | emit

	step "idempotency: Powertools for AWS Lambda (TypeScript), idem.mjs"
	(cd bench/powertools-ts && SLUICE_BENCH_DYNAMODB="$ddb" REPEATS="$reps" WARMUP=1 \
		VARIANTS="${IDEM_VARIANTS:-parallel,sequential,sdk-floor}" node idem.mjs "$out") 2>>"$log" | emit
	kill "$ddb_pid" 2>/dev/null || true
	wait "$ddb_pid" 2>/dev/null || true
	trap - EXIT
fi

step "summary"
awk '
	/^coldstart / {
		delete f
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		cold = cold sprintf("%-20s %12s %12s %12s %12s %12s\n", f["source"], f["sluice-ms"], f["bare-ms"], f["delta-ms"], f["sluice-MB"], f["extra-MB"])
	}
	/^peer=/ {
		delete f
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		id = f["peer"] "/" f["bench"] "/" f["variant"]
		ns[id] = f["ns_per_record_median"]; al[id] = f["allocs_per_record"]; mn[id] = f["ns_per_record_min"]
		order[++n] = id
	}
	END {
		split("kinesis-10k sqs-1k dynamodb-10k kafka-10k", benches, " ")
		for (b = 1; b <= 4; b++) {
			bench = benches[b]
			s = ns["sluice/" bench "/frombytes"]; sm = mn["sluice/" bench "/frombytes"]
			printf "\n%-52s %12s %14s %12s %12s %14s\n", bench ": contender", "ns/record", "allocs/record", "Sluice/it", "min ns/rec", "Sluice/it min"
			for (i = 1; i <= n; i++) {
				split(order[i], p, "/")
				if (p[2] != bench) continue
				r = (s != "" && ns[order[i]] > 0) ? sprintf("%.2f", s / ns[order[i]]) : ""
				rm = (sm != "" && mn[order[i]] > 0) ? sprintf("%.2f", sm / mn[order[i]]) : ""
				printf "%-52s %12s %14s %12s %12s %14s\n", p[1] " " p[3], ns[order[i]], al[order[i]], r, mn[order[i]], rm
				if (r != "" && p[1] != "sluice") ratios = ratios sprintf("ratio bench=%s sluice_over=%s/%s value=%s min_value=%s\n", bench, p[1], p[3], r, rm)
			}
		}
		printf "\n%s", ratios
		if (cold != "") printf "\n%-20s %12s %12s %12s %12s %12s\n%s", "cold start: source", "sluice ms", "bare ms", "delta ms", "sluice MB", "extra MB", cold
		print "Sluice/it below 1: Sluice spends less time per record. Every figure comes from this one run."
		print "Medians are the figures; the ratio of the fastest samples (min) shows how much of a ratio is the machine: on a shared box the two can differ by a third."
	}' "$results" | tee "$out/summary-$stamp.txt"
# Idempotency: wall time of the 1,000-message batch per phase, and how many
# times faster Sluice is than each contender (its wall ms over Sluice's).
awk '
	/^peer=.* bench=sqs-1k-idem / {
		delete f
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		id = f["peer"] " " f["variant"]
		if (!(id in known)) { known[id] = 1; ids[++n] = id }
		ms[id, f["phase"]] = f["wall_ms_median"]; rq[id, f["phase"]] = f["requests_per_record"]
		wr[id, f["phase"]] = f["writes_per_record"]; wc[id, f["phase"]] = f["wcu_per_record"]; rc[id, f["phase"]] = f["rcu_per_record"]
	}
	END {
		if (n == 0) exit
		for (p = 1; p <= 2; p++) {
			ph = (p == 1) ? "first" : "replay"
			s = ms["sluice default", ph]
			printf "\nsqs-1k-idem %-6s: %-24s %10s %13s %11s %9s %9s %14s\n", ph, "contender", "wall ms", "requests/rec", "writes/rec", "WCU/rec", "RCU/rec", "it/Sluice"
			for (i = 1; i <= n; i++) {
				id = ids[i]
				if (ms[id, ph] == "") continue
				r = (s > 0) ? sprintf("%.2f", ms[id, ph] / s) : ""
				printf "%-37s %10s %13s %11s %9s %9s %14s\n", id, ms[id, ph], rq[id, ph], wr[id, ph], wc[id, ph], rc[id, ph], r
				rid = id; sub(/ /, "/", rid)
				if (r != "" && id != "sluice default") ratios = ratios sprintf("ratio bench=sqs-1k-idem phase=%s peer_over_sluice=%s value=%s\n", ph, rid, r)
			}
		}
		printf "\n%s", ratios
		print "it/Sluice above 1: Sluice takes that many times less wall time for the batch. Same DynamoDB Local, same run."
	}' "$results" | tee -a "$out/summary-$stamp.txt"
echo "results: $results $out/summary-$stamp.txt  log: $log" >&2
