// Command hello is a tiny Lambda handler used by the internal/rie tests.
// Its behaviour is chosen by the "action" field of the JSON payload.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type request struct {
	Action  string          `json:"action"`
	Message string          `json:"message,omitempty"`
	Millis  int             `json:"ms,omitempty"`
	Key     string          `json:"key,omitempty"`
	Echo    json.RawMessage `json:"echo,omitempty"`
}

type response struct {
	Echo       json.RawMessage `json:"echo,omitempty"`
	Value      string          `json:"value,omitempty"`
	Set        bool            `json:"set,omitempty"`
	DeadlineMs int64           `json:"deadline_ms,omitempty"`
	RequestID  string          `json:"request_id,omitempty"`
	FuncName   string          `json:"function_name,omitempty"`
	PID        int             `json:"pid,omitempty"`
	Slept      bool            `json:"slept,omitempty"`
}

func handle(ctx context.Context, req request) (response, error) {
	switch req.Action {
	case "echo":
		return response{Echo: req.Echo}, nil
	case "error":
		return response{}, errors.New(req.Message)
	case "panic":
		panic(req.Message)
	case "sleep":
		time.Sleep(time.Duration(req.Millis) * time.Millisecond)
		return response{Slept: true}, nil
	case "deadline":
		var r response
		if d, ok := ctx.Deadline(); ok {
			r.DeadlineMs = time.Until(d).Milliseconds()
		}
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			r.RequestID = lc.AwsRequestID
		}
		r.FuncName = lambdacontext.FunctionName
		return r, nil
	case "env":
		v, ok := os.LookupEnv(req.Key)
		return response{Value: v, Set: ok}, nil
	case "pid":
		return response{PID: os.Getpid()}, nil
	case "exit":
		os.Exit(3)
	}
	return response{}, errors.New("hello: unknown action " + req.Action)
}

func main() {
	lambda.Start(handle)
}
