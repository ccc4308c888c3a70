package avro_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	hamba "github.com/hamba/avro/v2"

	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/avro"
	"github.com/sluicehq/sluice/kafkacodec/internal/wire"
)

// memChildEnv makes the test binary a child that decodes the hostile value
// under an address-space limit: "codec" through the codec, "library" with
// the Avro library alone.
const memChildEnv = "SLUICE_AVRO_MEMLIMIT_CHILD"

// memHeadroom is what the child may map beyond what it has mapped when it
// sets its limit (the race detector maps terabytes of shadow at start, so
// a fixed limit would starve a -race child before it began).
const memHeadroom = 1 << 30

// TestHostileValueUnderMemoryLimit decodes the value (an array
// that claims 2^33 longs) in a child process whose address space may grow
// by 1 GiB only. Through the codec the child must get a DecodeError and
// exit 0; an out-of-memory crash, which no recover catches, would fail the
// test. The Avro library alone, in a second child, must die of it: that
// shows the value is hostile and the limit holds.
func TestHostileValueUnderMemoryLimit(t *testing.T) {
	if mode := os.Getenv(memChildEnv); mode != "" {
		memChild(mode)
		return
	}
	run := func(mode string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHostileValueUnderMemoryLimit$", "-test.count=1")
		cmd.Env = append(os.Environ(), memChildEnv+"="+mode)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("codec")
	if err != nil || !strings.Contains(out, "child: DecodeError: avro (confluent schema id 1): items, at byte 9: the value ends before its schema does") {
		t.Fatalf("through the codec: exit %v, output:\n%s", err, out)
	}
	out, err = run("library")
	var ee *exec.ExitError
	// A fatal error in the library's array decoding: "out of memory", or
	// under -race "too many address space collisions".
	if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(out, "fatal error: ") || !strings.Contains(out, "avro/v2.(*arrayDecoder).Decode") {
		t.Fatalf("the library alone was expected to die of the value under the limit: exit %v, output:\n%s", err, out)
	}
}

func memChild(mode string) {
	if err := limitAddressSpace(memHeadroom); err != nil {
		fmt.Println("child: cannot limit the address space:", err)
		os.Exit(3)
	}
	switch mode {
	case "codec":
		c := avro.Must(avro.WithSchema(hostileSchema))
		var v hostile
		err := c.DecodeKafka(context.Background(), hostileValue, nil, &v)
		var de *kafkacodec.DecodeError
		if !errors.As(err, &de) {
			fmt.Println("child: no DecodeError:", err)
			os.Exit(4)
		}
		fmt.Println("child: DecodeError:", err)
	case "library":
		var v hostile
		err := hamba.Unmarshal(hamba.MustParse(hostileSchema), hostileValue[wire.ConfluentHeaderSize:], &v)
		fmt.Println("child: the library returned:", err)
	}
	os.Exit(0)
}

// limitAddressSpace sets RLIMIT_AS to what the process has mapped now
// plus headroom.
func limitAddressSpace(headroom uint64) error {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return err
	}
	pages, err := strconv.ParseUint(strings.Fields(string(statm))[0], 10, 64)
	if err != nil {
		return err
	}
	limit := pages*uint64(os.Getpagesize()) + headroom
	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit})
}
