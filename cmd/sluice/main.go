// Command sluice runs Lambda event source mappings on one machine.
//
//	sluice run --mapping mapping.json --records records.jsonl --handler ./bootstrap \
//	    [--trace trace.jsonl] [--report report.json] [--effects effects.jsonl] \
//	    [--timeout 30s] [--env KEY=VALUE]... [--faults error=0.01,crash=0.01,timeout=0.01,duplicate=0.05]
//
// The handler is a compiled Lambda bootstrap (run behind a Lambda Runtime API
// that sluice hosts; a timeout kills and restarts it, as Lambda does) or an
// http(s):// Lambda Invoke API endpoint (SAM start-lambda, LocalStack, the
// Runtime Interface Emulator). The function inherits sluice's environment
// plus the --env flags, as a function inherits its configuration.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `sluice runs AWS Lambda event source mappings on one machine.

Usage:
  sluice run --mapping FILE --records FILE --handler TARGET [flags]

Run "sluice run -h" for the flags.
`

// cli runs one command and returns the exit code: 0 when the run finished
// and every invariant held, 1 when an invariant was violated or the run
// failed, 2 for a usage error.
func cli(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", args[0], usage)
	return 2
}
