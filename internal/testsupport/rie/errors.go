package rie

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// ErrorTypeTimeout is the FunctionError.Type of an invocation that ran past
// the function timeout. RIE itself answers such an invocation with HTTP 200
// and the plain-text body "Task timed out after N.00 seconds"; Invoke maps
// that to a FunctionError with this type, the one AWS Lambda uses.
const ErrorTypeTimeout = "Sandbox.Timedout"

// FunctionError is the error Invoke returns when the handler failed: it
// returned an error, panicked, exited, or timed out.
type FunctionError struct {
	// Type is the errorType reported by the runtime, for example
	// "errorString" for errors.New, the panic value's type for a panic,
	// "Runtime.ExitError" when the process exited, or ErrorTypeTimeout.
	Type string
	// Message is the errorMessage reported by the runtime.
	Message string
	// StatusCode is RIE's HTTP status: 200 for an error returned by the
	// handler or a timeout, 502 when the runtime process died (panic, exit).
	StatusCode int
	// Body is RIE's raw response body (it includes any stackTrace).
	Body []byte
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("lambda function error: %s: %s (RIE HTTP %d)", e.Type, e.Message, e.StatusCode)
}

var timeoutPrefix = []byte("Task timed out after ")

// parseFunctionError reports whether an RIE response is a function error.
// RIE drops the X-Amz-Function-Error header, so an error is recognised by its
// body: a JSON object with errorType or errorMessage and no keys other than
// errorType, errorMessage and stackTrace. A successful handler result of
// exactly that shape is indistinguishable from an error.
func parseFunctionError(status int, body []byte) (*FunctionError, bool) {
	if status == http.StatusOK && bytes.HasPrefix(body, timeoutPrefix) {
		return &FunctionError{Type: ErrorTypeTimeout, Message: string(body), StatusCode: status, Body: body}, true
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil, false
	}
	var e struct {
		Type    *string `json:"errorType"`
		Message *string `json:"errorMessage"`
	}
	if json.Unmarshal(body, &e) != nil || (e.Type == nil && e.Message == nil) {
		return nil, false
	}
	for k := range fields {
		if k != "errorType" && k != "errorMessage" && k != "stackTrace" {
			return nil, false
		}
	}
	fe := &FunctionError{StatusCode: status, Body: body}
	if e.Type != nil {
		fe.Type = *e.Type
	}
	if e.Message != nil {
		fe.Message = *e.Message
	}
	return fe, true
}
