package infra

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func TestValidate(t *testing.T) {
	stream := mappingSettings{source: sourceKinesis, timeout: 30, batchSize: 100, retries: 5, maxAge: 21600, parallelization: 1,
		maxAttempts: 3, startingPosition: "TRIM_HORIZON"}
	queue := mappingSettings{source: sourceSQS, timeout: 30, batchSize: 10, maxAttempts: 3, maxReceive: 5, visibility: 180}
	fifo := queue
	fifo.source = sourceSQSFIFO
	kafka := stream
	kafka.source = sourceKafka
	with := func(s mappingSettings, f func(*mappingSettings)) mappingSettings { f(&s); return s }
	cases := []struct {
		name string
		s    mappingSettings
		want string // "" valid
	}{
		{"stream defaults", stream, ""},
		{"queue defaults", queue, ""},
		{"fifo defaults", fifo, ""},
		{"kafka defaults", kafka, ""},
		{"record age -1", with(stream, func(s *mappingSettings) { s.maxAge = -1 }), ""},
		{"record age 60", with(stream, func(s *mappingSettings) { s.maxAge = 60 }), ""},
		{"record age 59", with(stream, func(s *mappingSettings) { s.maxAge = 59 }), "MaxRecordAge 59 s"},
		{"record age 1", with(stream, func(s *mappingSettings) { s.maxAge = 1 }), "MaxRecordAge 1 s"},
		{"record age 0", with(stream, func(s *mappingSettings) { s.maxAge = 0 }), "MaxRecordAge 0 s"},
		{"record age 604801", with(stream, func(s *mappingSettings) { s.maxAge = 604801 }), "MaxRecordAge 604801 s"},
		{"retries -1", with(stream, func(s *mappingSettings) { s.retries = -1 }), ""},
		{"retries -2", with(stream, func(s *mappingSettings) { s.retries = -2 }), "MaximumRetryAttempts -2 is outside -1..10000"},
		{"attempts over retries", with(stream, func(s *mappingSettings) { s.retries = 1; s.maxAttempts = 3 }), "MaxAttempts 3 exceeds MaximumRetryAttempts 1 + 1"},
		{"attempts at retries+1", with(stream, func(s *mappingSettings) { s.retries = 2; s.maxAttempts = 3 }), ""},
		{"attempts 0", with(stream, func(s *mappingSettings) { s.maxAttempts = 0 }), "MaxAttempts 0"},
		{"batch 10001", with(stream, func(s *mappingSettings) { s.batchSize = 10001 }), "BatchSize 10001 is outside 1..10000"},
		{"parallel 11", with(stream, func(s *mappingSettings) { s.parallelization = 11 }), "ParallelizationFactor 11"},
		{"window 301", with(stream, func(s *mappingSettings) { s.window = 301 }), "MaxBatchingWindow (seconds) 301"},
		{"timeout 901", with(stream, func(s *mappingSettings) { s.timeout = 901 }), "Function.Timeout (seconds) 901"},
		{"at timestamp kinesis", with(stream, func(s *mappingSettings) { s.startingPosition = "AT_TIMESTAMP"; s.timestamp = true }), ""},
		{"at timestamp dynamodb", with(stream, func(s *mappingSettings) { s.source = sourceDynamoDB; s.startingPosition = "AT_TIMESTAMP" }),
			`StartingPosition "AT_TIMESTAMP" is not valid for dynamodb`},
		// Lambda starts MSK and self-managed Kafka mappings at a timestamp too.
		{"at timestamp kafka", with(kafka, func(s *mappingSettings) { s.startingPosition = "AT_TIMESTAMP"; s.timestamp = true }), ""},
		{"at timestamp kafka without one", with(kafka, func(s *mappingSettings) { s.startingPosition = "AT_TIMESTAMP" }),
			"StartingPositionTimestamp goes with StartingPosition AT_TIMESTAMP"},
		{"kafka on-demand ignores retries", with(kafka, func(s *mappingSettings) { s.onDemand = true; s.maxAge = 5 }), ""},
		{"fifo window 1", with(fifo, func(s *mappingSettings) { s.window = 1 }), "no batching window for FIFO"},
		{"fifo window 0", with(fifo, func(s *mappingSettings) { s.window = 0 }), ""},
		{"fifo batch 11", with(fifo, func(s *mappingSettings) { s.batchSize = 11 }), "BatchSize 11: a FIFO queue's mapping takes 1..10"},
		{"standard batch 11 no window", with(queue, func(s *mappingSettings) { s.batchSize = 11 }), "BatchSize 11 needs a MaxBatchingWindow of at least 1 s"},
		{"standard batch 11 window 1", with(queue, func(s *mappingSettings) { s.batchSize = 11; s.window = 1 }), ""},
		{"attempts over receive count", with(queue, func(s *mappingSettings) { s.maxAttempts = 6 }), "MaxAttempts 6 exceeds MaxReceiveCount 5"},
		{"receive count 0", with(queue, func(s *mappingSettings) { s.maxReceive = 0; s.maxAttempts = 0 }), "MaxReceiveCount 0 is outside 1..1000"},
		{"visibility = timeout", with(queue, func(s *mappingSettings) { s.visibility = 30 }), ""},
		{"visibility < timeout + window", with(queue, func(s *mappingSettings) { s.visibility = 30; s.window = 1 }), "VisibilityTimeout 30 s is below"},
		{"visibility 43201", with(queue, func(s *mappingSettings) { s.visibility = 43201 }), "VisibilityTimeout (seconds) 43201 is outside"},
		{"concurrency 1", with(queue, func(s *mappingSettings) { s.maxConcurrency = 1 }), "MaximumConcurrency 1 is outside 2..1000"},
		{"at timestamp without a timestamp", with(stream, func(s *mappingSettings) { s.startingPosition = "AT_TIMESTAMP"; s.timestamp = false }),
			"StartingPositionTimestamp goes with StartingPosition AT_TIMESTAMP"},
		{"timestamp without at timestamp", with(stream, func(s *mappingSettings) { s.timestamp = true }), "(StartingPosition TRIM_HORIZON)"},
		{"kafka queue mode takes no starting position", with(kafka, func(s *mappingSettings) { s.queueMode = true; s.startingPosition = "" }), ""},
		{"sqs pollers 2..", with(queue, func(s *mappingSettings) { s.minPollers, s.maxPollers = 2, 2 }), ""},
		{"sqs min pollers 1", with(queue, func(s *mappingSettings) { s.minPollers = 1 }), "MinimumPollers 1: sqs takes at least 2"},
		{"sqs max pollers 1", with(queue, func(s *mappingSettings) { s.maxPollers = 1 }), "MaximumPollers 1: sqs takes at least 2"},
		{"kafka min pollers 1", with(kafka, func(s *mappingSettings) { s.minPollers = 1 }), ""},
		{"kafka min pollers 0 is unset", with(kafka, func(s *mappingSettings) { s.minPollers = 0 }), ""},
		{"min over max pollers", with(kafka, func(s *mappingSettings) { s.minPollers, s.maxPollers = 5, 4 }), "MinimumPollers 5 exceeds MaximumPollers 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := strings.Join(c.s.validate(), "\n")
			switch {
			case c.want == "" && p != "":
				t.Fatalf("problems:\n%s", p)
			case c.want != "" && !strings.Contains(p, c.want):
				t.Fatalf("problems:\n%s\nwant one containing %q", p, c.want)
			}
		})
	}
}

func TestMinVisibility(t *testing.T) {
	for _, c := range []struct{ timeout, window, want int }{{30, 0, 180}, {20, 5, 125}, {900, 300, 5700}} {
		if got := minVisibility(c.timeout, c.window); got != c.want {
			t.Errorf("minVisibility(%d, %d) = %d, want %d", c.timeout, c.window, got, c.want)
		}
	}
}

func TestWhole(t *testing.T) {
	var p []string
	half := 2.5
	if got := whole("BatchSize", &half, 7, &p); got != 7 || len(p) != 1 || !strings.Contains(p[0], "BatchSize 2.5 is not a whole number") {
		t.Fatalf("whole(2.5) = %d, %v", got, p)
	}
	if got := whole("BatchSize", nil, 7, &p); got != 7 {
		t.Fatalf("whole(nil) = %d", got)
	}
}

func TestSeconds(t *testing.T) {
	for _, c := range []struct {
		d    awscdk.Duration
		want int
		err  string
	}{
		{nil, 7, ""},
		{awscdk.Duration_Seconds(jsii.Number(90)), 90, ""},
		{awscdk.Duration_Minutes(jsii.Number(2)), 120, ""},
		{awscdk.Duration_Millis(jsii.Number(1500)), 7, "MaxBatchingWindow 1 second 500 millis is not a whole number of seconds"},
	} {
		var p []string
		got := seconds("MaxBatchingWindow", c.d, 7, &p)
		if got != c.want || (c.err == "") != (len(p) == 0) || (c.err != "" && !strings.Contains(p[0], c.err)) {
			t.Errorf("seconds(%v) = %d, %q; want %d, %q", c.d, got, p, c.want, c.err)
		}
	}
}

// TestBootstrapProblem: the bootstrap's ELF header must name the
// function's architecture; a script runs anywhere; anything else is not
// a Lambda executable. Each problem gives the build command.
func TestBootstrapProblem(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "bootstrap"), b, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	arm := write("arm", elfHeader(t, elf.ELFCLASS64, elf.EM_AARCH64))
	x86 := write("x86", elfHeader(t, elf.ELFCLASS64, elf.EM_X86_64))
	i386 := write("i386", elfHeader(t, elf.ELFCLASS32, elf.EM_386))
	script := write("script", []byte("#!/bin/sh\nexec ./handler\n"))
	macho := write("macho", []byte{0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1, 3, 0, 0, 0, 2, 0, 0, 0})
	for _, c := range []struct {
		dir, arch string
		want      []string // "" none
	}{
		{arm, "arm64", nil},
		{x86, "x86_64", nil},
		{script, "arm64", nil},
		{x86, "arm64", []string{"is built for x86_64 but the function's Architecture is arm64",
			"GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o " + filepath.Join(x86, "bootstrap"), "or set Function.Architecture to x86_64"}},
		{arm, "x86_64", []string{"is built for arm64 but the function's Architecture is x86_64", "GOARCH=amd64"}},
		{i386, "arm64", []string{"ELFCLASS32 EM_386 binary, which Lambda does not run", "GOARCH=arm64"}},
		{macho, "arm64", []string{"is not a Linux executable", "GOOS=linux GOARCH=arm64"}},
	} {
		got := bootstrapProblem(c.dir, c.arch)
		if len(c.want) == 0 && got != "" {
			t.Errorf("%s on %s: %s", c.dir, c.arch, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s on %s: %q lacks %q", c.dir, c.arch, got, w)
			}
		}
	}
}

// elfHeader is an ELF file header alone, as a compiler writes it for the
// class and machine: enough for debug/elf to read the architecture.
func elfHeader(t *testing.T, class elf.Class, m elf.Machine) []byte {
	t.Helper()
	var b bytes.Buffer
	ident := [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(class), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)}
	var err error
	if class == elf.ELFCLASS64 {
		err = binary.Write(&b, binary.LittleEndian, elf.Header64{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(m),
			Version: uint32(elf.EV_CURRENT), Ehsize: 64})
	} else {
		err = binary.Write(&b, binary.LittleEndian, elf.Header32{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(m),
			Version: uint32(elf.EV_CURRENT), Ehsize: 52})
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
