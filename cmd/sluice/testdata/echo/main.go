// Command echo is a Lambda function for sluice invoke's tests: it answers
// the exact bytes it received, in base64, so a test can see that the file
// reached the function unchanged; a payload holding "fail-me" is a function
// error.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/aws/aws-lambda-go/lambda"
)

type echo struct{}

func (echo) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	if bytes.Contains(payload, []byte("fail-me")) {
		return nil, errors.New("asked to fail")
	}
	return json.Marshal(map[string]any{"received": base64.StdEncoding.EncodeToString(payload), "bytes": len(payload)})
}

func main() { lambda.StartHandler(echo{}) }
