package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluicehq/sluice/dlq/dynamodbattempts"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/ddbchecksum"
)

// tablesCommand runs `sluice tables create --idempotency NAME --attempts
// NAME`: it creates the idempotency table (the layout package dynamodbstore
// documents) and the dead-letter attempts table (package dynamodbattempts)
// on the endpoint the standard AWS environment names (AWS_ENDPOINT_URL_DYNAMODB,
// AWS_REGION, the default credential chain). On an existing table of that
// layout it succeeds, so it can run before every local run.
func tablesCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprint(stderr, "sluice tables: the only subcommand is create\n\n"+tablesUsage)
		return 2
	}
	fs := commandFlags("sluice tables create", tablesUsage+"\nFlags:\n", stderr)
	idem := fs.String("idempotency", "", "the name of the idempotency table to create")
	attempts := fs.String("attempts", "", "the name of the dead-letter attempts table to create")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the table to become active")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	switch {
	case *idem == "" && *attempts == "":
		fmt.Fprint(stderr, "sluice tables create: --idempotency NAME or --attempts NAME is required\n\n")
		fs.Usage()
		return 2
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "sluice tables create: unexpected argument %q\n\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cfg, err := awsDefaultConfig(ctx, "AWS_ENDPOINT_URL_DYNAMODB", "")
	if err != nil {
		fmt.Fprintf(stderr, "sluice tables create: loading the AWS configuration: %v\n", awsHint(err))
		return 1
	}
	db := dynamodb.NewFromConfig(cfg, ddbchecksum.Option)
	if *idem != "" {
		if err := dynamodbstore.CreateTable(ctx, db, *idem); err != nil {
			fmt.Fprintf(stderr, "sluice tables create: idempotency table %s: %v\n", *idem, awsHint(err))
			return 1
		}
		fmt.Fprintf(stdout, "idempotency table %s is ready\n", *idem)
	}
	if *attempts != "" {
		if err := dynamodbattempts.CreateTable(ctx, db, *attempts); err != nil {
			fmt.Fprintf(stderr, "sluice tables create: attempts table %s: %v\n", *attempts, awsHint(err))
			return 1
		}
		fmt.Fprintf(stdout, "attempts table %s is ready\n", *attempts)
	}
	return 0
}

const tablesUsage = `Usage: sluice tables create [--idempotency NAME] [--attempts NAME]

Creates, with TTL on, the DynamoDB tables that handlers.WithIdempotency
(package idempotency/dynamodbstore) keeps its records in (--idempotency) and
that handlers.WithDeadLetters counts stream and Kafka attempts in (package
dlq/dynamodbattempts; --attempts), on the endpoint the standard AWS
environment names (AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION, credentials from
the default chain; dummy ones for a local endpoint). Running it again on a
table succeeds. For DynamoDB Local: eval "$(sluice local start)" first.
`
