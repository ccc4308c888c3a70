package main

import (
	"flag"
	"fmt"
	"io"
)

// commandFlags is the flag set of a sluice command (name is how its
// messages name it, "sluice replay"): it reports to stderr and, when usage
// is not empty, -h prints usage and then the flags.
func commandFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if usage != "" {
		fs.Usage = func() {
			fmt.Fprint(fs.Output(), usage)
			fs.PrintDefaults()
		}
	}
	return fs
}

// usageErrors returns how a command (name, "sluice replay") refuses its
// arguments: it says why on stderr, points to -h and returns exit status 2.
func usageErrors(name string, stderr io.Writer) func(format string, a ...any) int {
	return func(format string, a ...any) int {
		fmt.Fprintf(stderr, name+": "+format+"\n", a...)
		fmt.Fprintln(stderr, `Run "`+name+` -h" for the flags.`)
		return 2
	}
}
