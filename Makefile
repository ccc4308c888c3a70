# Two commands do everything: `make demo` and `make test`. The rest are for
# working on Sluice itself.
GO ?= go
FUZZTIME ?= 30s

.PHONY: demo test test-arm64 lint fuzz bench bench-peers synth

## demo: run an order-processing function over sample Kinesis and SQS batches
demo:
	$(GO) run ./examples/demo

## test: install the servers the tests need, then vet and run every test with -race
test:
	scripts/test.sh

## lint: gofmt and go vet only
lint:
	scripts/test.sh lint

## test-arm64: the packages a function links, as arm64 binaries under qemu-user
test-arm64:
	scripts/test-arm64.sh

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	scripts/fuzz.sh $(FUZZTIME)

## bench: the Kinesis 10k benchmarks (Sluice, hand loop, envelope only)
bench:
	$(GO) test -run '^$$' -bench 'Kinesis10k' -benchtime 20x -count 5 ./handlers

## bench-peers: Sluice, the Go hand loop and Powertools (TypeScript) on the same events, in one run (bench/)
bench-peers:
	scripts/bench-peers.sh

## synth: the example CDK app's CloudFormation templates in cdk.out/ (no AWS credentials, no cdk CLI); fails on cdk-nag errors
synth:
	cd infra/examples/app && JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 CDK_OUTDIR=$(CURDIR)/cdk.out $(GO) run .
