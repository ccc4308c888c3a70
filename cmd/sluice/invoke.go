package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// invokeCommand sends one event, unchanged, to the function and says what
// Lambda would make of the answer, as `sam local invoke -e` does for the
// event and an event source mapping would for the answer.
func invokeCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := commandFlags("sluice invoke", invokeUsage, stderr)
	eventPath := fs.String("event", "", "the event file: one Lambda event of a Kinesis, DynamoDB Streams, SQS or Kafka source, "+
		"as sam local generate-event writes it; - reads standard input (required)")
	handler := fs.String("handler", "", "a compiled Lambda bootstrap; an http(s):// Lambda Invoke API endpoint (SAM, LocalStack, RIE; "+
		"a host ending in amazonaws.com is AWS: requests are SigV4-signed with the default credential chain); "+
		"or aws:NAME, the function NAME (or ARN) on AWS Lambda in AWS_REGION (required)")
	functionName := fs.String("function-name", "function", "the function's name: the function an Invoke API endpoint calls; "+
		"for a bootstrap, its AWS_LAMBDA_FUNCTION_NAME")
	invokeEndpoint := fs.String("invoke-endpoint", "", "with --handler aws:NAME, send the signed Invoke request to this URL instead of "+
		"https://lambda.REGION.amazonaws.com (default $AWS_ENDPOINT_URL_LAMBDA)")
	timeout := fs.Duration("timeout", invocation.DefaultFunctionTimeout, "the function's timeout")
	var env multiFlag
	fs.Var(&env, "env", "KEY=VALUE for the function's environment (repeatable)")
	tf := addTemplateFlags(fs, "invoke the function --function names with its timeout, memory and environment, "+
		"as sam local invoke does; without --handler, from sam build's .aws-sam/build/FUNCTION/bootstrap")
	templateFunction := fs.String("function", "", "with --template, the function: its logical ID or FunctionName")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var fromTemplate *templateInvoke
	usageError := func(msg string) int {
		fmt.Fprintf(stderr, "sluice invoke: %s\n\n", msg)
		fs.Usage()
		return 2
	}
	switch {
	case *eventPath == "" || (*handler == "" && *tf.path == ""):
		return usageError("--event and --handler are required")
	case *templateFunction != "" && *tf.path == "":
		return usageError("--function goes with --template")
	case fs.NArg() > 0:
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	case *timeout <= 0:
		return usageError(fmt.Sprintf("--timeout %v: must be positive", *timeout))
	}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usageError(fmt.Sprintf("--env %q is not KEY=VALUE", kv))
		}
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "sluice invoke: %v\n", err)
		return 1
	}
	timeoutSet := false
	fs.Visit(func(f *flag.Flag) { timeoutSet = timeoutSet || f.Name == "timeout" })
	if *tf.path != "" {
		var err error
		if fromTemplate, err = invokeFromTemplate(tf, *templateFunction, *handler, env, stderr); err != nil {
			return usageError(err.Error())
		}
		*handler = fromTemplate.handler
		if !timeoutSet {
			*timeout = fromTemplate.timeout
		}
	}

	var data []byte
	var err error
	name := *eventPath
	if name == "-" {
		name = "standard input"
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(*eventPath)
	}
	if err != nil {
		return fail(err)
	}
	ev, err := invocation.ParseEvent(data)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", name, err))
	}

	functionNameSet := false
	fs.Visit(func(f *flag.Flag) { functionNameSet = functionNameSet || f.Name == "function-name" })
	if fromTemplate != nil && !functionNameSet {
		*functionName, functionNameSet = fromTemplate.name, true
	}
	target, isAPI, err := resolveInvokeTarget(*handler, *functionName, functionNameSet, *invokeEndpoint, "")
	if err != nil {
		return fail(err)
	}
	var inv invocation.Invoker
	if isAPI {
		inv, err = openInvokeAPI(context.Background(), target)
	} else {
		fenv := os.Environ()
		if functionNameSet {
			fenv = append(fenv, "AWS_LAMBDA_FUNCTION_NAME="+*functionName)
		}
		if fromTemplate != nil {
			fenv = append(fenv, fromTemplate.env...)
		}
		inv, err = invoke.RuntimeAPI(*handler, append(fenv, env...))
	}
	if err != nil {
		return fail(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	resp, err := inv.Invoke(ctx, invocation.Invocation{Payload: ev.Payload, Timeout: *timeout})
	inv.Close() // the process exits, and all it wrote is in its logs
	if l, ok := inv.(interface{ Logs() string }); ok {
		io.WriteString(stderr, withoutCloseLines(l.Logs()))
	}
	if err != nil {
		return fail(err)
	}
	writeResponse(stdout, resp.Payload)
	v := ev.Verdict(resp)
	took := ""
	if resp.Duration > 0 {
		took = " in " + resp.Duration.Round(time.Millisecond).String()
	}
	fmt.Fprintf(stderr, "sluice invoke: %s%s: %s\n", describeEvent(ev), took, v)
	if v.Failed() {
		return 1
	}
	return 0
}

// closedPid finds the Runtime API invoker's line about killing the process
// once it has answered (sluice stops it: not the function's doing).
var closedPid = regexp.MustCompile(`(?m)^localtest: killing pid (\d+): closed$`)

// withoutCloseLines drops the lines about the process that sluice stopped
// after the invocation: the kill and its exit by SIGKILL. The function's
// output may come between them, as the pipe is drained after the kill.
func withoutCloseLines(logs string) string {
	m := closedPid.FindAllStringSubmatch(logs, -1)
	if m == nil {
		return logs
	}
	drop := map[string]bool{}
	for _, sm := range m {
		drop[sm[0]] = true
		drop["localtest: pid "+sm[1]+" exited: signal: killed"] = true
	}
	lines := strings.SplitAfter(logs, "\n")
	out := lines[:0]
	for _, l := range lines {
		if !drop[strings.TrimSuffix(l, "\n")] {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// writeResponse writes a response body, indented when it is JSON, with a
// final newline.
func writeResponse(w io.Writer, body []byte) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return
	}
	var buf bytes.Buffer
	if json.Indent(&buf, body, "", "  ") == nil {
		body = buf.Bytes()
	}
	w.Write(append(body, '\n'))
}

func describeEvent(ev *invocation.Event) string {
	n := len(ev.Records)
	if n == 0 {
		return "an event without records"
	}
	noun := "records"
	if n == 1 {
		noun = "record"
	}
	return fmt.Sprintf("%s event, %d %s", invocation.SourceName(ev.Source), n, noun)
}

// invokeUsage is what "sluice invoke -h" prints before the flags.
const invokeUsage = `Usage: sluice invoke --event FILE --handler TARGET [flags]
       sluice invoke --event FILE --template template.yaml --function NAME [flags]

Sends one event, exactly as in FILE, to the function, prints the function's
response on standard output and the function's own output on standard error,
then one line with what an event source mapping with ReportBatchItemFailures
makes of the answer. Exit status: 0 when the function answered without a
function error, 1 on a function error, an answer that fails the whole batch,
or a failure to invoke, 2 on a usage error.

Flags:
`
