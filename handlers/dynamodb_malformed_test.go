package handlers

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

type ddbMessage struct {
	ID      int    `dynamodbav:"Id"`
	Message string `dynamodbav:"Message"`
}

// A record with a malformed attribute value ("S" holding an object) in its
// image fails alone and is reported by its SequenceNumber, which DynamoDB
// Streams writes after the images (events/testdata/dynamodb.json is the
// event of https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html).
// Before, encoding/json stopped at the bad value, the record had no
// sequence number, and the whole invocation failed.
func TestDynamoDBMalformedAttributeValue(t *testing.T) {
	ev := golden(t, "dynamodb.json")
	// Record 1 (sequence number 111) has its images before its
	// SequenceNumber; poison its NewImage.
	bad := bytes.Replace(ev, []byte(`"S": "New item!"`), []byte(`"S": {"poison": "pill"}`), 1)
	if bytes.Equal(bad, ev) {
		t.Fatal("the golden event changed: nothing replaced")
	}
	for _, raw := range []bool{false, true} {
		var ran []string
		var errs []error
		// It is the batch's first record: with nothing succeeded, the
		// default is a function error (for bisection), which names it;
		// here the partial response reports it.
		o := opts(WithPartialResponseWhenNoneSucceed(), WithOnBatch(func(_ context.Context, r BatchReport) {
			for _, rec := range r.Records {
				errs = append(errs, rec.Err)
			}
		}))
		if raw {
			o = append(o, WithRawImages())
		}
		h := must(NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbMessage]) error {
			ran = append(ran, r.SequenceNumber())
			return nil
		}, o...))
		out, err := h.Invoke(context.Background(), bad)
		if err != nil {
			t.Fatalf("raw images %v: function error %v: want the record reported alone", raw, err)
		}
		if f := failures(t, out); !slices.Equal(f, []string{"111"}) || len(ran) != 0 {
			t.Fatalf("raw images %v: reported %v, ran %v; want 111 reported, and nothing after it run (a stream stops at its first failure)", raw, f, ran)
		}
		var de interface{ Unwrap() error }
		if !errors.As(errs[0], &de) || !strings.Contains(errs[0].Error(), "malformed dynamodb record") {
			t.Fatalf("raw images %v: error %v", raw, errs[0])
		}
	}
	// Without a SequenceNumber anywhere, the whole invocation fails, as
	// before: there is nothing to report the record by.
	none := bytes.Replace(bad, []byte(`"SequenceNumber": "111",`), nil, 1)
	h := must(NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbMessage]) error { return nil }, quiet()...))
	if _, err := h.Invoke(context.Background(), none); err == nil || !strings.Contains(err.Error(), "no identifier to report it by") {
		t.Fatalf("error %v", err)
	}
	// The default answer to a batch whose only candidates failed: a
	// function error naming the record, so bisection can isolate it.
	if _, err := h.Invoke(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "record 111") {
		t.Fatalf("error %v", err)
	}
}

// A poisoned later record: the records before it run, it is reported.
func TestDynamoDBMalformedAttributeValueLaterRecord(t *testing.T) {
	ev := golden(t, "dynamodb.json")
	bad := bytes.Replace(ev, []byte(`"S": "This item has changed"`), []byte(`"S": {"poison": "pill"}`), 1)
	var ran []string
	h := must(NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbMessage]) error {
		ran = append(ran, r.SequenceNumber())
		return nil
	}, quiet()...))
	out, err := h.Invoke(context.Background(), bad)
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(t, out); !slices.Equal(f, []string{"222"}) || !slices.Equal(ran, []string{"111"}) {
		t.Fatalf("reported %v, ran %v", f, ran)
	}
}
