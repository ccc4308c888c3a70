package main

import (
	"context"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest"
)

// templateFlags are what a template adds to sluice run and sluice invoke.
type templateFlags struct {
	path      *string
	overrides multiFlag
}

func addTemplateFlags(fs *flag.FlagSet, what string) *templateFlags {
	tf := &templateFlags{}
	tf.path = fs.String("template", "", "an AWS SAM template (template.yaml, YAML or JSON) or a CloudFormation template (cdk.out/STACK.template.json): "+what)
	fs.Var(&tf.overrides, "parameter-overrides", "the template's parameter values over their defaults, as sam takes them: "+
		`"KEY=VALUE KEY2=VALUE2", "ParameterKey=KEY,ParameterValue=VALUE", or file://FILE (JSON or YAML); repeatable, the last value wins`)
	return tf
}

// read reads the template's text and the overrides.
func (tf *templateFlags) read() ([]byte, localtest.TemplateOptions, error) {
	params, err := localtest.ParseParameterOverrides(tf.overrides)
	if err != nil {
		return nil, localtest.TemplateOptions{}, err
	}
	data, err := os.ReadFile(*tf.path)
	if err != nil {
		return nil, localtest.TemplateOptions{}, fmt.Errorf("--template: %w", err)
	}
	return data, localtest.TemplateOptions{Parameters: params}, nil
}

// missingVariables names the variables of a function's environment that
// only a deploy knows and --env does not give.
func missingVariables(unresolved map[string]string, env []string) []string {
	var missing []string
	for _, k := range slices.Sorted(maps.Keys(unresolved)) {
		if envValue(env, k) == "" {
			missing = append(missing, fmt.Sprintf("%s: %s; pass --env %s=VALUE", k, unresolved[k], k))
		}
	}
	return missing
}

// functionEnv is the environment a template gives a function: its
// variables, and the memory size Lambda tells it.
func functionEnv(vars map[string]string, memory int) []string {
	var env []string
	if memory > 0 {
		env = append(env, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(memory))
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// builtBootstrap is where sam build puts a Go function's binary:
// <dir>/.aws-sam/build/<LogicalId>/bootstrap, dir being the template's
// directory, or the working directory (sam build's default build
// directory is .aws-sam/build under it). A template that is itself sam
// build's output (.aws-sam/build/template.yaml) has each function's
// directory beside it.
func builtBootstrap(templatePath string, fn localtest.TemplateFunctionCode) (string, error) {
	if fn.PackageType == "Image" {
		return "", fmt.Errorf("the function %s is a container image (PackageType Image): sluice runs a bootstrap binary; "+
			"pass --handler with the function's bootstrap, or an Invoke API endpoint (sam local start-lambda)", fn.LogicalID)
	}
	dir := filepath.Dir(templatePath)
	candidates := []string{filepath.Join(dir, fn.LogicalID, "bootstrap"), filepath.Join(dir, ".aws-sam", "build", fn.LogicalID, "bootstrap")}
	if wd, err := os.Getwd(); err == nil {
		if p := filepath.Join(wd, ".aws-sam", "build", fn.LogicalID, "bootstrap"); !slices.Contains(candidates, p) {
			candidates = append(candidates, p)
		}
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	why := ""
	if fn.Runtime != "" && !strings.HasPrefix(fn.Runtime, "provided") {
		why = fmt.Sprintf(" (its Runtime is %s: sluice runs a compiled bootstrap, the provided.al2023 runtime's, or an Invoke API endpoint "+
			"such as sam local start-lambda given with --handler)", fn.Runtime)
	}
	if !fn.Serverless {
		return "", fmt.Errorf("the function %s is an AWS::Lambda::Function, which sam build does not build: pass --handler%s", fn.LogicalID, why)
	}
	return "", fmt.Errorf("no --handler, and sam build's output for %s is not there (looked for %s): run sam build, or pass --handler%s",
		fn.LogicalID, strings.Join(candidates[1:], ", "), why)
}

// elfArch is the Lambda architecture a Linux binary is built for ("" when
// the file is not an ELF binary for either).
func elfArch(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "x86_64"
	case elf.EM_AARCH64:
		return "arm64"
	}
	return ""
}

// hostArch is this machine's architecture as Lambda names it.
func hostArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "arm64"
	}
	return runtime.GOARCH
}

// checkArchitecture compares the bootstrap with the template's
// architecture. A binary sam build made for another architecture than the
// template's is stale (sam build builds for the template's): an error. A
// --handler of the user's own is only noted, as is one this machine runs
// only under emulation.
func checkArchitecture(bootstrap string, archs []string, fromBuild bool, stderr io.Writer, cmd string) error {
	want := "x86_64"
	if len(archs) == 1 {
		want = archs[0]
	}
	got := elfArch(bootstrap)
	if got == "" {
		return nil
	}
	if got != want {
		msg := fmt.Sprintf("%s is built for %s, but the template deploys the function on %s", bootstrap, got, want)
		if fromBuild {
			return errors.New(msg + ": run sam build again (it builds for the template's Architectures), or pass --handler")
		}
		fmt.Fprintf(stderr, "%s: note: %s; Lambda would not run this binary\n", cmd, msg)
	}
	if got != hostArch() {
		fmt.Fprintf(stderr, "%s: note: %s is built for %s and this machine is %s: it starts only where the kernel runs %s binaries under emulation (qemu-user binfmt)\n",
			cmd, bootstrap, got, hostArch(), got)
	}
	return nil
}

// templateEndpoint points a mapping read from a template at a real server
// (--endpoint): the stream, table or queue the template names, under the
// name the template gives it (its Name, TableName or QueueName, or its
// logical ID when CloudFormation would choose the name).
func templateEndpoint(ctx context.Context, m *localtest.Mapping, endpoint string) error {
	m.Endpoint = endpoint
	if m.EventSource == events.SourceKafka {
		if !strings.HasPrefix(endpoint, "kafka://") {
			return fmt.Errorf("--endpoint %s: a Kafka mapping reads a cluster: kafka://host:port[,host:port...]", endpoint)
		}
		return nil
	}
	if strings.HasPrefix(endpoint, "kafka://") {
		return fmt.Errorf("--endpoint %s: a %s mapping reads an AWS API endpoint (http://127.0.0.1:4566, or aws), not a Kafka cluster", endpoint, m.EventSource)
	}
	if m.StartingPosition == "AT_TIMESTAMP" {
		return fmt.Errorf("--endpoint %s: the mapping starts AT_TIMESTAMP, which sluice run does not read from a real stream yet: "+
			"run it emulated (without --endpoint), or from a mapping file with StartingPosition TRIM_HORIZON or LATEST", endpoint)
	}
	cfg, err := awsConfig(ctx, m)
	if err != nil {
		return err
	}
	switch m.EventSource {
	case events.SourceDynamoDB:
		out, err := dynamodb.NewFromConfig(cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(m.TableName)})
		if err != nil {
			return fmt.Errorf("--endpoint %s: the table %s, as the template names it: %w (create it there, with a stream)", endpoint, m.TableName, err)
		}
		if out.Table == nil || out.Table.LatestStreamArn == nil {
			return fmt.Errorf("--endpoint %s: the table %s has no stream: enable one (StreamSpecification)", endpoint, m.TableName)
		}
		m.StreamARN = *out.Table.LatestStreamArn
	case events.SourceSQS, events.SourceSQSFIFO:
		out, err := sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(m.QueueName)})
		if err != nil {
			return fmt.Errorf("--endpoint %s: the queue %s, as the template names it: %w (create it there)", endpoint, m.QueueName, err)
		}
		m.QueueURL = aws.ToString(out.QueueUrl)
	}
	return nil
}

// templateInvoke is what sluice invoke --template takes from the
// template for the function name designates: its bootstrap (sam build's,
// unless handler is given), timeout, memory, name and environment.
type templateInvoke struct {
	handler string
	timeout time.Duration
	name    string
	env     []string
}

// invokeFromTemplate reads it.
func invokeFromTemplate(tf *templateFlags, name, handler string, env []string, stderr io.Writer) (*templateInvoke, error) {
	if name == "" {
		return nil, errors.New("--template needs --function: the function's logical ID or FunctionName")
	}
	raw, opts, err := tf.read()
	if err != nil {
		return nil, err
	}
	f, err := localtest.ReadTemplateFunction(raw, name, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", *tf.path, err)
	}
	if missing := missingVariables(f.Unresolved, env); len(missing) > 0 {
		return nil, fmt.Errorf("%s: the function %s reads variables known only once deployed:\n  %s",
			*tf.path, f.Function.LogicalID, strings.Join(missing, "\n  "))
	}
	for _, n := range f.Notes {
		fmt.Fprintf(stderr, "sluice invoke: %s: %s\n", *tf.path, n)
	}
	ti := &templateInvoke{handler: handler, timeout: f.Timeout, name: f.FunctionName, env: functionEnv(f.Environment, f.Memory)}
	if ti.timeout == 0 {
		ti.timeout = invocation.DefaultFunctionTimeout
	}
	fromBuild := handler == ""
	if fromBuild {
		if ti.handler, err = builtBootstrap(*tf.path, f.Function); err != nil {
			return nil, err
		}
	}
	if !strings.Contains(ti.handler, "://") && !strings.HasPrefix(ti.handler, "aws:") {
		if err := checkArchitecture(ti.handler, f.Architectures, fromBuild, stderr, "sluice invoke"); err != nil {
			return nil, err
		}
	}
	return ti, nil
}
