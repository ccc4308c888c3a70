package invoke

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/invocation"
)

// The Runtime API paths (API version 2018-06-01), as the runtimes-api page
// of the Lambda developer guide lists them.
const (
	pathNext      = "/2018-06-01/runtime/invocation/next"
	pathResponse  = "/2018-06-01/runtime/invocation/{id}/response"
	pathError     = "/2018-06-01/runtime/invocation/{id}/error"
	pathInitError = "/2018-06-01/runtime/init/error"
)

// sandbox is one function process with its own Runtime API server: an
// execution environment's current incarnation. A killed or exited process
// takes its server with it, so nothing it left behind (a pending /next)
// can take an invocation meant for its successor.
type sandbox struct {
	arn   string
	lines *lineLog // the environment's log, for the invoker's notes about the process
	cmd   *exec.Cmd
	out   *funcOutput
	ln    net.Listener
	srv   *http.Server

	idle       chan struct{} // a GET /next waiting for an invocation offers itself here
	give       chan *call    // and Invoke hands it the invocation here (buffered: Invoke never waits)
	done       chan result   // the invocation's answer
	exited     chan struct{} // closed once the process is reaped
	initFailed chan struct{} // closed on POST /runtime/init/error
	closing    chan struct{} // closed by shutdown

	mu       sync.Mutex // guards call, initDoc, initType, initSet
	call     call       // the one invocation in flight (reused)
	initDoc  []byte
	initType string
	initSet  bool

	stopOnce     sync.Once
	stopErr      error
	shutdownOnce sync.Once
}

type call struct {
	id       string
	payload  []byte
	deadline time.Time
	active   bool // handed out and not yet answered
	hold     bool // an injected kill is coming: the answer gets no reply
}

type result struct {
	payload   []byte
	errorType string
	failed    bool
}

func (res result) response(d time.Duration) invocation.Response {
	r := invocation.Response{Payload: res.payload, Duration: d}
	if res.failed {
		r.FunctionError, r.ErrorType = "Unhandled", res.errorType
	}
	return r
}

// discardLog silences http.Server's own log: a killed function leaves
// broken connections behind, which are expected here.
var discardLog = log.New(io.Discard, "", 0)

// newSandbox listens on a free port of 127.0.0.1 and serves the Runtime
// API there with net/http (one goroutine per connection, keep-alive, the
// chunked bodies and trailers aws-lambda-go's streamed responses use).
func newSandbox(arn string, lines *lineLog) (*sandbox, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("localtest: Runtime API server: listening on 127.0.0.1: %w", err)
	}
	sb := &sandbox{
		arn:        arn,
		lines:      lines,
		ln:         ln,
		idle:       make(chan struct{}),
		give:       make(chan *call, 1),
		done:       make(chan result, 1),
		exited:     make(chan struct{}),
		initFailed: make(chan struct{}),
		closing:    make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc(pathNext, sb.serveNext)
	mux.HandleFunc(pathResponse, func(w http.ResponseWriter, req *http.Request) { sb.serveResult(w, req, false) })
	mux.HandleFunc(pathError, func(w http.ResponseWriter, req *http.Request) { sb.serveResult(w, req, true) })
	mux.HandleFunc(pathInitError, sb.serveInitError)
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		apiError(w, http.StatusNotFound, "UnknownPath", "no such Runtime API path: "+req.Method+" "+req.URL.Path)
	})
	// No read timeouts: the one client is the function's own process on
	// loopback, and a GET /next waits as long as no invocation comes.
	sb.srv = &http.Server{Handler: mux, ErrorLog: discardLog}
	go sb.srv.Serve(ln)
	return sb, nil
}

// allow answers 405 to a request whose method is not method.
func allow(w http.ResponseWriter, req *http.Request, method string) bool {
	if req.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	apiError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "use "+method+" "+req.URL.Path)
	return false
}

// abort ends a request without an answer (the connection is closed), for
// a process that is being killed.
func abort() { panic(http.ErrAbortHandler) }

// serveNext answers GET /next with the invocation, once Invoke hands one
// over (or kills the process instead: an injected crash at the hand-over).
// The Runtime API has one /next waiting at a time.
func (sb *sandbox) serveNext(w http.ResponseWriter, req *http.Request) {
	if !allow(w, req, http.MethodGet) {
		return
	}
	select {
	case sb.idle <- struct{}{}:
	case <-sb.closing:
		abort()
	case <-req.Context().Done():
		return
	}
	var c *call
	select {
	case c = <-sb.give:
	case <-sb.closing:
		abort()
	}
	var buf [128]byte
	// One allocation for the header values (net/http only reads them).
	v := &[5]string{c.id, strconv.FormatInt(c.deadline.UnixMilli(), 10), sb.arn, string(appendTraceID(buf[:0], c.deadline)), strconv.Itoa(len(c.payload))}
	h := w.Header()
	h["Content-Type"] = jsonType
	h[hdrRequestID] = v[0:1:1]
	h[hdrDeadline] = v[1:2:2]
	h[hdrFunctionARN] = v[2:3:3]
	h[hdrTraceID] = v[3:4:4]
	h["Content-Length"] = v[4:5:5]
	w.WriteHeader(http.StatusOK)
	w.Write(c.payload) // if this fails the process is gone or late: Invoke learns it from sb.exited or its timer
}

func (sb *sandbox) serveResult(w http.ResponseWriter, req *http.Request, isError bool) {
	if !allow(w, req, http.MethodPost) {
		return
	}
	id := req.PathValue("id")
	body, tooLarge, err := readBody(req)
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequest", "reading the body: "+err.Error())
		return
	}
	res := result{payload: body, failed: isError}
	if isError {
		res.errorType = req.Header.Get(hdrErrorType)
		if res.errorType == "" {
			res.errorType = docErrorType(body)
		}
	} else if t := req.Trailer.Get(hdrErrorType); t != "" {
		// aws-lambda-go reports a response body that failed mid-stream in
		// trailers.
		res.failed, res.errorType = true, t
		if doc, err := base64.StdEncoding.DecodeString(req.Trailer.Get(hdrErrorBody)); err == nil && len(doc) > 0 {
			res.payload = doc
		} else {
			res.payload = errorDocument("the response stream failed", t)
		}
	}
	if tooLarge {
		res = result{failed: true, errorType: "Function.ResponseSizeTooLarge",
			payload: errorDocument(fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", maxResponseSize), "Function.ResponseSizeTooLarge")}
	}

	sb.mu.Lock()
	ok := sb.call.active && sb.call.id == id
	hold := sb.call.hold
	if ok {
		sb.call.active = false
	}
	sb.mu.Unlock()
	if !ok {
		apiError(w, http.StatusBadRequest, "InvalidRequestID", "no invocation "+id+" is waiting for an answer")
		return
	}
	sb.done <- res // buffered, one answer per invocation
	if hold {
		// The process is about to be killed (or frozen) with its answer
		// undelivered: it gets no 202, and does nothing after answering.
		<-sb.closing
		abort()
	}
	if tooLarge {
		apiError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "response larger than the limit")
		return
	}
	accepted(w)
}

func (sb *sandbox) serveInitError(w http.ResponseWriter, req *http.Request) {
	if !allow(w, req, http.MethodPost) {
		return
	}
	body, _, _ := readBody(req)
	typ := req.Header.Get(hdrErrorType)
	if typ == "" {
		typ = docErrorType(body)
	}
	if typ == "" {
		typ = "Runtime.Unknown"
	}
	if len(body) == 0 {
		body = errorDocument("the runtime reported an init error", typ)
	}
	sb.mu.Lock()
	first := !sb.initSet
	sb.initDoc, sb.initType, sb.initSet = body, typ, true
	sb.mu.Unlock()
	if first {
		close(sb.initFailed)
	}
	accepted(w)
}

// takeResult returns an answer already delivered, if any.
func (sb *sandbox) takeResult() (result, bool) {
	select {
	case res := <-sb.done:
		return res, true
	default:
		return result{}, false
	}
}

// note writes a line of the invoker's own about the process: to Logs, and
// to the RuntimeAPILogs stream under the current label.
func (sb *sandbox) note(s string) { sb.lines.note(s) }

func (sb *sandbox) pid() int {
	if sb.cmd == nil || sb.cmd.Process == nil {
		return 0
	}
	return sb.cmd.Process.Pid
}

func (sb *sandbox) initError() ([]byte, string, bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.initDoc, sb.initType, sb.initSet
}

// stop kills the process group, waits for the process to be reaped and
// shuts the server down.
func (sb *sandbox) stop(why string) error {
	sb.stopOnce.Do(func() {
		select {
		case <-sb.exited:
		default:
			sb.note(fmt.Sprintf("localtest: killing pid %d: %s", sb.cmd.Process.Pid, why))
			killProcessGroup(sb.cmd.Process)
			select {
			case <-sb.exited:
			case <-time.After(stopWait):
				sb.stopErr = fmt.Errorf("function process %d did not exit within %v of SIGKILL", sb.cmd.Process.Pid, stopWait)
			}
		}
		sb.shutdown()
	})
	return sb.stopErr
}

// shutdown releases the handlers that wait and closes the server and its
// connections.
func (sb *sandbox) shutdown() {
	sb.shutdownOnce.Do(func() {
		close(sb.closing)
		sb.srv.Close()
	})
}

// readBody reads a request body of at most maxResponseSize bytes into a
// slice of its own.
func readBody(req *http.Request) (body []byte, tooLarge bool, err error) {
	if n := req.ContentLength; n >= 0 {
		if n > maxResponseSize {
			_, err = io.Copy(io.Discard, req.Body)
			return nil, true, err
		}
		body = make([]byte, n)
		if _, err = io.ReadFull(req.Body, body); err != nil {
			return nil, false, err
		}
		_, err = io.Copy(io.Discard, req.Body) // reach EOF, so that trailers are read
		return body, false, err
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(req.Body, maxResponseSize+1))
	if err != nil {
		return nil, false, err
	}
	if n > maxResponseSize {
		_, err = io.Copy(io.Discard, req.Body)
		return nil, true, err
	}
	return buf.Bytes(), false, nil
}

// docErrorType returns the errorType of an error document, or "".
func docErrorType(doc []byte) string {
	var e struct {
		Type string `json:"errorType"`
	}
	if json.Unmarshal(doc, &e) != nil {
		return ""
	}
	return e.Type
}

// Header values shared by every answer; net/http only reads them.
var (
	jsonType       = []string{"application/json"}
	acceptedLength = []string{strconv.Itoa(len(acceptedBody))}
)

// acceptedBody is the body of the 202 answer to a posted response or error.
var acceptedBody = []byte(`{"status":"OK"}`)

func accepted(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Content-Length"] = acceptedLength
	w.WriteHeader(http.StatusAccepted)
	w.Write(acceptedBody)
}

// apiError answers with Lambda's error document.
func apiError(w http.ResponseWriter, status int, typ, msg string) {
	doc := errorDocument(msg, typ)
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Content-Length"] = []string{strconv.Itoa(len(doc))}
	w.WriteHeader(status)
	w.Write(doc)
}

// errorDocument is Lambda's error document {"errorMessage","errorType"}.
func errorDocument(msg, typ string) []byte {
	b, _ := json.Marshal(map[string]string{"errorMessage": msg, "errorType": typ})
	return b
}

// newRequestID returns a random UUID (version 4) string.
func newRequestID() string {
	var b [16]byte
	a, c := rand.Uint64(), rand.Uint64()
	for i := range 8 {
		b[i], b[8+i] = byte(a>>(8*i)), byte(c>>(8*i))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	var s [36]byte
	j := 0
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hex[x>>4], hex[x&0xf]
		j += 2
	}
	return string(s[:])
}

// appendTraceID appends an X-Ray trace header ("Root=1-<epoch hex>-<96
// random bits>;Parent=<64 random bits>;Sampled=0").
func appendTraceID(b []byte, t time.Time) []byte {
	const hex = "0123456789abcdef"
	b = append(b, "Root=1-"...)
	b = strconv.AppendUint(b, uint64(t.Unix()), 16)
	b = append(b, '-')
	x, y := rand.Uint64(), rand.Uint64()
	for i := range 24 {
		v := x
		if i >= 16 {
			v = y >> 32
		}
		b = append(b, hex[(v>>(4*(i%16)))&0xf])
	}
	b = append(b, ";Parent="...)
	for i := range 16 {
		b = append(b, hex[(y>>(4*i))&0xf])
	}
	return append(b, ";Sampled=0"...)
}
