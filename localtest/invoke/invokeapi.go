package invoke

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/invocation"
)

// DefaultInvokeGrace is how long InvokeAPI waits for an answer beyond the
// invocation's timeout before it gives up on the endpoint.
const DefaultInvokeGrace = 5 * time.Second

// InvokeAPIInvoker calls a Lambda Invoke API endpoint (POST
// /2015-03-31/functions/{name}/invocations, RequestResponse): SAM's
// start-lambda, LocalStack, the Runtime Interface Emulator or any other
// AWS-compatible endpoint. Requests are unsigned unless a signer is set
// with InvokeAPISigner (AWS itself needs SigV4).
//
// A function error is recognised however the endpoint reports it:
//   - the X-Amz-Function-Error header (AWS, LocalStack, SAM); a body whose
//     errorMessage says "Task timed out after" is a timeout;
//   - without the header (RIE), an HTTP 200 body that is an error document
//     (a JSON object with errorType and/or errorMessage and no keys besides
//     those and stackTrace), or the plain text "Task timed out after N.00
//     seconds"; an endpoint that sends X-Amz-Executed-Version (AWS) is
//     trusted, and its header-less answers are never sniffed;
//   - HTTP 502 without X-Amzn-ErrorType (RIE: the process panicked or
//     exited), with an error document or, after a failed init, none
//     (ErrorType Runtime.ExitError).
//
// Any other non-2xx status is an *InvokeAPIError returned by Invoke.
// Invocation.RequestID is not sent (the endpoint assigns its own) and
// Invocation.Timeout does not reach the function (its timeout is the
// endpoint's configuration); Invoke waits Timeout plus a grace
// (DefaultInvokeGrace) and then answers a timeout.
//
// Invocations run one at a time unless InvokeAPIConcurrency allows more:
// RIE crashes on concurrent invocations.
type InvokeAPIInvoker struct {
	url    string
	client *http.Client
	sign   func(*http.Request, []byte) error
	grace  time.Duration
	sem    chan struct{}
}

var _ invocation.Invoker = (*InvokeAPIInvoker)(nil)

// An InvokeAPIOption configures InvokeAPI.
type InvokeAPIOption func(*InvokeAPIInvoker) error

// InvokeAPIHTTPClient sets the HTTP client (default: a client of its own,
// with no proxy).
func InvokeAPIHTTPClient(c *http.Client) InvokeAPIOption {
	return func(i *InvokeAPIInvoker) error {
		if c == nil {
			return errors.New("InvokeAPIHTTPClient(nil)")
		}
		i.client = c
		return nil
	}
}

// InvokeAPISigner sets a function called on every request, with its body,
// just before it is sent: the place to add SigV4 headers (for example with
// aws-sdk-go-v2's v4.Signer.SignHTTP and the body's SHA-256) for AWS.
func InvokeAPISigner(sign func(req *http.Request, body []byte) error) InvokeAPIOption {
	return func(i *InvokeAPIInvoker) error {
		i.sign = sign
		return nil
	}
}

// InvokeAPIGrace sets how long to wait beyond Invocation.Timeout
// (default DefaultInvokeGrace).
func InvokeAPIGrace(d time.Duration) InvokeAPIOption {
	return func(i *InvokeAPIInvoker) error {
		if d < 0 {
			return fmt.Errorf("InvokeAPIGrace(%v): must not be negative", d)
		}
		i.grace = d
		return nil
	}
}

// InvokeAPIConcurrency sets how many invocations may be in flight at once
// (default 1).
func InvokeAPIConcurrency(n int) InvokeAPIOption {
	return func(i *InvokeAPIInvoker) error {
		if n < 1 {
			return fmt.Errorf("InvokeAPIConcurrency(%d): must be at least 1", n)
		}
		i.sem = make(chan struct{}, n)
		return nil
	}
}

// InvokeAPIError is an answer of the endpoint that is not the function's:
// the function does not exist, the caller is throttled or not authorised,
// the service failed.
type InvokeAPIError struct {
	StatusCode int
	// Type is the X-Amzn-ErrorType header or the body's __type / Type.
	Type string
	Body []byte
}

// Throttled reports whether the endpoint throttled the call (HTTP 429 or a
// TooManyRequests error type): the runner retries it with back-off, as
// Lambda does, instead of counting a function error.
func (e *InvokeAPIError) Throttled() bool {
	return e.StatusCode == 429 || strings.Contains(e.Type, "TooManyRequests")
}

func (e *InvokeAPIError) Error() string {
	return fmt.Sprintf("localtest: invoke API answered HTTP %d %s: %s", e.StatusCode, e.Type, bytes.TrimSpace(e.Body))
}

// InvokeAPI returns an *InvokeAPIInvoker for endpoint (for example
// http://127.0.0.1:3001 for sam local start-lambda, http://127.0.0.1:9000
// for RIE) and functionName (default "function", the name RIE answers to).
func InvokeAPI(endpoint, functionName string, opts ...InvokeAPIOption) (invocation.Invoker, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("localtest: invoke API endpoint %q: want http(s)://host[:port]", endpoint)
	}
	if functionName == "" {
		functionName = "function"
	}
	i := &InvokeAPIInvoker{
		url: strings.TrimSuffix(endpoint, "/") + "/2015-03-31/functions/" + url.PathEscape(functionName) + "/invocations",
		client: &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		}},
		grace: DefaultInvokeGrace,
		sem:   make(chan struct{}, 1),
	}
	var errs []error
	for _, o := range opts {
		if err := o(i); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("localtest: InvokeAPI: %w", err)
	}
	return i, nil
}

// Close releases idle connections.
func (i *InvokeAPIInvoker) Close() error {
	i.client.CloseIdleConnections()
	return nil
}

// Invoke posts the payload and reads the answer; see InvokeAPIInvoker.
func (i *InvokeAPIInvoker) Invoke(ctx context.Context, inv invocation.Invocation) (invocation.Response, error) {
	select {
	case i.sem <- struct{}{}:
	case <-ctx.Done():
		return invocation.Response{}, ctx.Err()
	}
	defer func() { <-i.sem }()

	timeout := inv.Timeout
	if timeout <= 0 {
		timeout = invocation.DefaultFunctionTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout+i.grace)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, i.url, bytes.NewReader(inv.Payload))
	if err != nil {
		return invocation.Response{}, fmt.Errorf("localtest: invoke %s: %w", i.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Amz-Invocation-Type", "RequestResponse")
	if i.sign != nil {
		if err := i.sign(req, inv.Payload); err != nil {
			return invocation.Response{}, fmt.Errorf("localtest: signing the invoke request to %s: %w", i.url, err)
		}
	}
	start := time.Now()
	resp, err := i.client.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	d := time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return invocation.Response{}, ctx.Err()
		}
		if cctx.Err() != nil {
			return timedOutResponse(fmt.Sprintf("no answer from %s within %.2f seconds (timeout %v plus grace %v)", i.url, (timeout+i.grace).Seconds(), timeout, i.grace), d), nil
		}
		return invocation.Response{}, fmt.Errorf("localtest: invoke %s: %w", i.url, err)
	}
	return classifyInvokeResponse(resp.StatusCode, resp.Header, body, d)
}

// classifyInvokeResponse reads an Invoke API answer; see InvokeAPIInvoker.
func classifyInvokeResponse(status int, h http.Header, body []byte, d time.Duration) (invocation.Response, error) {
	fnErr := h.Get("X-Amz-Function-Error")
	trusted := fnErr != "" || h.Get("X-Amz-Executed-Version") != ""
	switch {
	case status >= 200 && status < 300 && fnErr != "":
		typ, msg, _ := parseErrorDocument(body)
		r := invocation.Response{Payload: body, FunctionError: fnErr, ErrorType: typ, Duration: d}
		if typ == "Sandbox.Timedout" || strings.Contains(msg, "Task timed out after") || bytes.HasPrefix(body, []byte("Task timed out after")) {
			r.TimedOut, r.ErrorType = true, "Sandbox.Timedout"
		}
		return r, nil
	case status >= 200 && status < 300 && !trusted:
		if bytes.HasPrefix(body, []byte("Task timed out after ")) {
			return timedOutResponse(string(bytes.TrimSpace(body)), d), nil
		}
		if typ, _, ok := parseErrorDocument(body); ok {
			return invocation.Response{Payload: body, FunctionError: "Unhandled", ErrorType: typ, Duration: d}, nil
		}
		return invocation.Response{Payload: body, Duration: d}, nil
	case status >= 200 && status < 300:
		return invocation.Response{Payload: body, Duration: d}, nil
	case status == http.StatusBadGateway && h.Get("X-Amzn-ErrorType") == "":
		// RIE: the process died (with an error document after a panic,
		// with an empty body after a failed init).
		if typ, _, ok := parseErrorDocument(body); ok {
			return invocation.Response{Payload: body, FunctionError: "Unhandled", ErrorType: typ, Duration: d}, nil
		}
		msg := "Runtime exited (the endpoint answered HTTP 502"
		if b := bytes.TrimSpace(body); len(b) > 0 {
			msg += ": " + string(b)
		}
		return invocation.Response{FunctionError: "Unhandled", ErrorType: "Runtime.ExitError", Duration: d,
			Payload: errorDocument(msg+")", "Runtime.ExitError")}, nil
	}
	e := &InvokeAPIError{StatusCode: status, Type: h.Get("X-Amzn-ErrorType"), Body: body}
	if e.Type == "" {
		var v struct {
			Type  string `json:"__type"`
			Type2 string `json:"Type"`
		}
		if json.Unmarshal(body, &v) == nil {
			e.Type = v.Type
			if e.Type == "" {
				e.Type = v.Type2
			}
		}
	}
	if t, _, ok := strings.Cut(e.Type, ":"); ok { // "ResourceNotFoundException:http://..."
		e.Type = t
	}
	return invocation.Response{}, e
}

func timedOutResponse(msg string, d time.Duration) invocation.Response {
	return invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true, Duration: d,
		Payload: errorDocument(msg, "Sandbox.Timedout")}
}

// parseErrorDocument reports whether body is a Lambda error document: a
// JSON object with errorType and/or errorMessage (strings) and no keys but
// those and stackTrace. A successful result of exactly that shape cannot be
// told apart from an error by an endpoint that drops X-Amz-Function-Error.
func parseErrorDocument(body []byte) (typ, msg string, ok bool) {
	b := bytes.TrimSpace(body)
	if len(b) < 2 || b[0] != '{' {
		return "", "", false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return "", "", false
	}
	var hasType, hasMsg bool
	for k, v := range fields {
		switch k {
		case "errorType":
			hasType = json.Unmarshal(v, &typ) == nil
		case "errorMessage":
			hasMsg = json.Unmarshal(v, &msg) == nil
		case "stackTrace":
		default:
			return "", "", false
		}
	}
	return typ, msg, hasType || hasMsg
}
