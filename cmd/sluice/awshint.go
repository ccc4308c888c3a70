package main

import (
	"fmt"
	"os"
	"strings"
)

// awsHint adds to an error of an AWS SDK call what is missing and how to
// fix it, when the error says that no credentials were found (the SDK's
// default chain ends at the EC2 instance metadata service: "no EC2 IMDS
// role found") or that nothing answers at the endpoint. Other errors are
// returned as they are.
func awsHint(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	service, envVar := "", ""
	for _, s := range []struct{ name, env string }{
		{"DynamoDB Streams", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS"},
		{"DynamoDB", "AWS_ENDPOINT_URL_DYNAMODB"},
		{"Kinesis", "AWS_ENDPOINT_URL_KINESIS"},
		{"SQS", "AWS_ENDPOINT_URL_SQS"},
	} {
		if strings.Contains(msg, "operation error "+s.name+":") {
			service, envVar = s.name, s.env
			break
		}
	}
	endpoint := ""
	if envVar != "" {
		endpoint = os.Getenv(envVar)
		if endpoint == "" && envVar == "AWS_ENDPOINT_URL_DYNAMODB_STREAMS" {
			endpoint = os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
		}
	}
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	what := service
	if what == "" {
		what, envVar = "the service", "AWS_ENDPOINT_URL_<SERVICE>"
	}
	switch {
	case strings.Contains(msg, "get credentials") || strings.Contains(msg, "no EC2 IMDS role found") ||
		strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "failed to refresh cached credentials"):
		where := "AWS"
		if endpoint != "" {
			where = endpoint
		}
		return fmt.Errorf("%w\n\nNo AWS credentials were found for %s at %s. For the local servers (DynamoDB Local, kinesalite, fauxqs), "+
			"set %s to the server's URL and any credentials: eval \"$(sluice local start)\" starts them and exports both "+
			"(AWS_ENDPOINT_URL_*, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY). For AWS itself, give credentials "+
			"(AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) and AWS_REGION", err, what, where, envVar)
	case endpoint != "" && (strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") ||
		strings.Contains(msg, "dial tcp")):
		return fmt.Errorf("%w\n\nNothing answers at %s (%s). Start the local servers with sluice local start "+
			"and export what it prints (eval \"$(sluice local start)\"), or point %s elsewhere", err, endpoint, envVar, envVar)
	}
	return err
}
