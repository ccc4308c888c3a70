package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/localaws"
)

const localUsage = `Usage: sluice local (start | stop | env | serve) [flags]

Runs the local AWS API servers the project installs (scripts/servers:
DynamoDB Local with DynamoDB Streams, kinesalite for Kinesis, fauxqs for
SQS, SNS and S3) on free ports of 127.0.0.1, for sluice fetch-failed,
tables create, redrive and run against endpoints, and for a function under
sluice run:

  eval "$(sluice local start)"   # start them in the background; export
                                 # AWS_ENDPOINT_URL_* and dummy credentials
  sluice tables create --idempotency orders-idem
  ...
  sluice local stop              # stop them

  start   start the servers in the background (a "sluice local serve"
          process) and print the shell exports on standard output:
          AWS_ENDPOINT_URL_DYNAMODB and _DYNAMODB_STREAMS, _KINESIS, and
          _SQS, _SNS, _S3 (fauxqs serves all three on one port; the SDKs
          address its buckets path-style, as its host is an IP address),
          AWS_REGION, AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID,
          AWS_SECRET_ACCESS_KEY
  env     print the exports of the running servers again
  stop    stop them
  serve   run them in the foreground until interrupted (Ctrl-C)

The servers keep everything in memory: stopping them forgets every table,
stream, queue, topic and bucket. They accept any credentials; the exports
name dummy ones. The first start installs the servers (about 20 s; needs
node and npm, and java for DynamoDB Local).

Flags:
`

// localState is what sluice local start leaves for env and stop.
type localState struct {
	PID     int               `json:"pid"`
	Servers map[string]string `json:"servers"` // kind -> endpoint
	Started time.Time         `json:"started"`
}

// localKinds are the servers sluice local runs: the AWS APIs (Redis, which
// localaws also starts for the Redis store's tests, is not one).
var localKinds = []localaws.Kind{localaws.KindDynamoDB, localaws.KindKinesis, localaws.KindSQS}

// endpointEnv names, per server kind, the variables the AWS SDKs read for
// its endpoint.
var endpointEnv = map[localaws.Kind][]string{
	localaws.KindDynamoDB: {"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS"},
	localaws.KindKinesis:  {"AWS_ENDPOINT_URL_KINESIS"},
	// fauxqs serves SNS and S3 on the SQS port.
	localaws.KindSQS: {"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_SNS", "AWS_ENDPOINT_URL_S3"},
}

// exports are the shell lines that point the AWS SDKs at the servers.
func (s *localState) exports() string {
	var b strings.Builder
	for _, k := range localKinds {
		if ep := s.Servers[string(k)]; ep != "" {
			for _, v := range endpointEnv[k] {
				fmt.Fprintf(&b, "export %s=%s\n", v, ep)
			}
		}
	}
	// AWS_DEFAULT_REGION too: version 1 of the AWS CLI reads only that.
	fmt.Fprintf(&b, "export AWS_REGION=%s\nexport AWS_DEFAULT_REGION=%s\nexport AWS_ACCESS_KEY_ID=%s\nexport AWS_SECRET_ACCESS_KEY=%s\n",
		localaws.Region, localaws.Region, localaws.AccessKeyID, localaws.SecretAccessKey)
	return b.String()
}

func localCommand(args []string, stdout, stderr io.Writer) int {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := commandFlags("sluice local "+sub, localUsage, stderr)
	state := fs.String("state", defaultLocalState(), "the file that records the running servers")
	only := fs.String("only", "", "start only these servers: a comma-separated list of dynamodb, kinesis, sqs (fauxqs: SQS, SNS and S3) (default: all)")
	if sub == "" {
		// sluice local, sluice local -h: the usage, with the flags.
		fs.Usage()
		return 2
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usageError := usageErrors("sluice local", stderr)
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	kinds, err := parseKinds(*only)
	if err != nil {
		return usageError("%v", err)
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "sluice local %s: %v\n", sub, err)
		return 1
	}
	switch sub {
	case "serve":
		return localServe(*state, kinds, stdout, stderr)
	case "start":
		if st, ok := runningState(*state); ok {
			fmt.Fprintf(stderr, "sluice local: already running (pid %d, since %s); its exports:\n", st.PID, st.Started.Format(time.RFC3339))
			fmt.Fprint(stdout, st.exports())
			return 0
		}
		st, err := localStart(*state, *only)
		if err != nil {
			return fail(err)
		}
		for _, k := range localKinds {
			if ep := st.Servers[string(k)]; ep != "" {
				fmt.Fprintf(stderr, "sluice local: %s at %s\n", k, ep)
			}
		}
		fmt.Fprintf(stderr, "sluice local: running in the background (pid %d); stop with: sluice local stop\n", st.PID)
		fmt.Fprint(stdout, st.exports())
		return 0
	case "env":
		st, ok := runningState(*state)
		if !ok {
			return fail(errors.New("no local servers are running: start them with sluice local start"))
		}
		fmt.Fprint(stdout, st.exports())
		return 0
	case "stop":
		st, ok := runningState(*state)
		if !ok {
			os.Remove(*state)
			fmt.Fprintln(stderr, "sluice local: no local servers are running")
			return 0
		}
		if err := stopPID(st.PID, 20*time.Second); err != nil {
			return fail(err)
		}
		os.Remove(*state)
		fmt.Fprintf(stderr, "sluice local: stopped (pid %d)\n", st.PID)
		return 0
	}
	return usageError("unknown subcommand %q: want start, stop, env or serve", sub)
}

func defaultLocalState() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "sluice", "local.json")
}

func parseKinds(list string) ([]localaws.Kind, error) {
	if list == "" {
		return localKinds, nil
	}
	var out []localaws.Kind
	for _, k := range strings.Split(list, ",") {
		kind := localaws.Kind(strings.TrimSpace(k))
		if _, ok := endpointEnv[kind]; !ok {
			return nil, fmt.Errorf("--only %q: %q is not one of dynamodb, kinesis, sqs", list, k)
		}
		out = append(out, kind)
	}
	return out, nil
}

// runningState reads the state file and reports whether the process it
// names still runs.
func runningState(path string) (*localState, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var st localState
	if json.Unmarshal(data, &st) != nil || st.PID <= 0 || !alive(st.PID) {
		return nil, false
	}
	return &st, true
}

// localServe starts the servers, records them in the state file, prints
// their exports and waits for a signal; then stops them.
func localServe(state string, kinds []localaws.Kind, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st := &localState{PID: os.Getpid(), Servers: map[string]string{}, Started: time.Now().UTC()}
	var started []*localaws.Server
	defer func() {
		for _, s := range started {
			if err := s.Stop(); err != nil {
				fmt.Fprintf(stderr, "sluice local: %v\n", err)
			}
		}
	}()
	for _, k := range kinds {
		sctx, cancel := context.WithTimeout(ctx, localaws.InstallTimeout+localaws.StartTimeout)
		srv, err := localaws.Start(sctx, k)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "sluice local: %v\n", err)
			return 1
		}
		started = append(started, srv)
		st.Servers[string(k)] = srv.Endpoint
	}
	data, _ := json.MarshalIndent(st, "", "  ")
	if err := os.MkdirAll(filepath.Dir(state), 0o755); err != nil {
		fmt.Fprintf(stderr, "sluice local: %v\n", err)
		return 1
	}
	tmp := state + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil || os.Rename(tmp, state) != nil {
		fmt.Fprintf(stderr, "sluice local: writing %s: %v\n", state, err)
		return 1
	}
	defer func() {
		// Only our own record goes: a later start may have replaced it.
		if cur, err := os.ReadFile(state); err == nil && string(cur) == string(data)+"\n" {
			os.Remove(state)
		}
	}()
	fmt.Fprint(stdout, st.exports())
	fmt.Fprintln(stderr, "sluice local: serving; stop with Ctrl-C (or sluice local stop)")
	select {
	case <-ctx.Done():
	case <-exitedServer(started):
	}
	return 0
}

// exitedServer is closed when one of the servers exits by itself.
func exitedServer(srvs []*localaws.Server) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		for {
			for _, s := range srvs {
				if !s.Running() {
					close(ch)
					return
				}
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	return ch
}

// localStart runs "sluice local serve" in the background, detached from
// this terminal, and waits until it recorded its servers in the state
// file. Its output goes to a log file beside the state file.
func localStart(state, only string) (*localState, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(state), 0o755); err != nil {
		return nil, err
	}
	logPath := strings.TrimSuffix(state, filepath.Ext(state)) + ".log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := []string{"local", "serve", "--state", state}
	if only != "" {
		args = append(args, "--only", only)
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = detached()
	os.Remove(state)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(localaws.InstallTimeout + 3*localaws.StartTimeout)
	for {
		if st, ok := runningState(state); ok && st.PID == cmd.Process.Pid {
			return st, nil
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("the servers did not start (%v); the log (%s):\n%s", err, logPath, tailString(string(log), 4<<10))
		case <-deadline:
			_ = stopPID(cmd.Process.Pid, 5*time.Second)
			return nil, fmt.Errorf("the servers did not start in time; the log is %s", logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}

// stopPID asks process pid to stop (SIGTERM), and kills it when it has not
// after grace.
func stopPID(pid int, grace time.Duration) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if err := terminateProcess(p); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping pid %d: %w", pid, err)
	}
	for end := time.Now().Add(grace); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if !alive(pid) {
			return nil
		}
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing pid %d: %w", pid, err)
	}
	return nil
}
