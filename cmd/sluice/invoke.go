package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// Exit statuses of sluice invoke: a script can tell its own mistakes (2)
// and an environment that could not run the function (3) from what the
// function did (0, 1).
const (
	invokeSucceeded  = 0 // the function answered, and nothing failed
	invokeFailed     = 1 // a function error, a batch failure, records reported
	invokeUsage      = 2 // bad flags, or a file that cannot be read
	invokeNotStarted = 3 // no bootstrap to start, an endpoint that does not answer or refuses the request
)

// invokeCommand sends one file, byte for byte, to the function and says
// what Lambda would make of the answer, as `sam local invoke -e` does for
// the event and an event source mapping would for the answer.
func invokeCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := commandFlags("sluice invoke", invokeUsageText, stderr)
	eventPath := fs.String("event", "", "the file sent to the function, byte for byte: one Lambda event of a Kinesis, DynamoDB Streams, SQS, Kafka "+
		"or Firehose source, as sam local generate-event writes it, or any other payload; - reads standard input (required)")
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
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "sluice invoke: %v\n", err)
		return code
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
		return fail(invokeUsage, fmt.Errorf("--event: %w", err))
	}
	// The file is sent as it is, whatever it holds: how a function treats
	// an envelope it does not expect is what a user wants to see. An event
	// names the records the answer is read against.
	ev, evErr := invocation.ParseEvent(data)
	if evErr != nil {
		fmt.Fprintf(stderr, "sluice invoke: note: %s is not one event of a stream or queue source (%s); it is sent as it is, "+
			"and the answer is read without records to name\n", name, notEventWhy(data, evErr))
	}

	functionNameSet := false
	fs.Visit(func(f *flag.Flag) { functionNameSet = functionNameSet || f.Name == "function-name" })
	if fromTemplate != nil && !functionNameSet {
		*functionName, functionNameSet = fromTemplate.name, true
	}
	target, isAPI, err := resolveInvokeTarget(*handler, *functionName, functionNameSet, *invokeEndpoint, "")
	if err != nil {
		return usageError(err.Error())
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
		return fail(invokeNotStarted, fmt.Errorf("the function could not be started: %w", err))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	resp, err := inv.Invoke(ctx, invocation.Invocation{Payload: data, Timeout: *timeout})
	inv.Close() // the process exits, and all it wrote is in its logs
	if l, ok := inv.(interface{ Logs() string }); ok {
		io.WriteString(stderr, withoutCloseLines(l.Logs()))
	}
	if err != nil {
		return fail(invokeNotStarted, fmt.Errorf("the function could not be invoked: %w", err))
	}
	writeResponse(stdout, resp.Payload)
	var v invocation.Verdict
	what := "a payload that is not an event"
	if ev != nil {
		v, what = ev.Verdict(resp), describeEvent(ev)
	} else {
		v = invocation.AnswerVerdict(resp)
	}
	took := ""
	if resp.Duration > 0 {
		took = " in " + resp.Duration.Round(time.Millisecond).String()
	}
	fmt.Fprintf(stderr, "sluice invoke: %s%s: %s\n", what, took, v)
	if v.Outcome != invocation.OutcomeSuccess {
		return invokeFailed
	}
	return invokeSucceeded
}

// notEventWhy says briefly what data is instead of an event.
func notEventWhy(data []byte, err error) string {
	if len(bytes.TrimSpace(data)) == 0 {
		return "it is empty"
	}
	why := err.Error()
	if ne := (*invocation.NotEventError)(nil); errors.As(err, &ne) {
		why = ne.Why // without the list of event shapes
	}
	return why
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

// invokeUsageText is what "sluice invoke -h" prints before the flags.
const invokeUsageText = `Usage: sluice invoke --event FILE --handler TARGET [flags]
       sluice invoke --event FILE --template template.yaml --function NAME [flags]

Sends FILE to the function byte for byte, as sam local invoke -e does: one
Lambda event, or anything else ({}, null, an empty file, truncated JSON), to
see how the function treats it. Prints the function's response on standard
output and the function's own output on standard error, then one line with
what an event source mapping with ReportBatchItemFailures makes of the
answer (a Firehose event's answer as Firehose reads it).

Exit status:
  0  the function answered, and nothing failed
  1  the function failed: a function error (a crash, a timeout, an init
     failure), an answer that fails the whole batch, records it reported
     failed, or Firehose records answered ProcessingFailed
  2  usage: a bad flag, or FILE cannot be read
  3  the function could not be started or invoked: no bootstrap at that
     path, an endpoint that does not answer or refuses the request

Flags:
`
