package handlers_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"strings"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
)

// gzipped is data as CloudWatch Logs writes it into a record.
func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// A CloudWatch Logs subscription filter whose destination is a Kinesis
// stream: each record is one message of a log stream's events. The
// CONTROL_MESSAGE CloudWatch Logs sends to check the stream is
// acknowledged without running the function. ItemID names each log event
// for the effects written per event.
func ExampleCloudWatchLogs() {
	h := handlers.MustKinesis(func(ctx context.Context, r handlers.KinesisRecord[handlers.CloudWatchLogs]) error {
		for i, e := range r.Value.LogEvents {
			fmt.Println(r.Value.LogGroup, strings.TrimSpace(e.Message), handlers.ItemID(r.SequenceNumber(), i) == r.SequenceNumber()+"#"+fmt.Sprint(i))
		}
		return nil
	}, exampleOpts...)
	b := &sevents.KinesisBuilder{}
	b.Add("c1", gzipped(`{"messageType":"CONTROL_MESSAGE","owner":"CloudwatchLogs","logGroup":"","logStream":"","subscriptionFilters":[],`+
		`"logEvents":[{"id":"","timestamp":1668093033744,"message":"CWL CONTROL MESSAGE: Checking health of destination Kinesis stream."}]}`))
	b.Add("c2", gzipped(`{"messageType":"DATA_MESSAGE","owner":"123456789012","logGroup":"/aws/lambda/orders","logStream":"2024/05/01/[$LATEST]26b6a45d",`+
		`"subscriptionFilters":["errors"],"logEvents":[{"id":"37199717562907174288355125807040114704837640994633613312","timestamp":1668093027015,"message":"ERROR payment declined\n"},`+
		`{"id":"37199717563107880995141901415313936169291476248187437057","timestamp":1668093027024,"message":"ERROR card expired\n"}]}`))
	ev, _ := sevents.MarshalEvent(b.Event())
	out, err := h.Invoke(context.Background(), ev)
	fmt.Println(string(out), err)
	// Output:
	// /aws/lambda/orders ERROR payment declined true
	// /aws/lambda/orders ERROR card expired true
	// {"batchItemFailures":[]} <nil>
}

// A Firehose stream reading an Amazon MSK cluster: each record's
// kafkaRecordValue decodes into the function's type, its Kafka metadata is
// at hand, and the result goes back as kafkaRecordValue.
func ExampleFirehoseRecord_mSK() {
	h := handlers.MustFirehose(func(ctx context.Context, r handlers.FirehoseRecord[Order]) (handlers.FirehoseResult, error) {
		m, _ := r.MSKMetadata()
		fmt.Println(r.SourceMSKARN(), m.PartitionID, m.Offset, r.Value.OrderID)
		return handlers.Transformed([]byte(r.Value.OrderID + "\n")), nil
	}, exampleOpts...)
	ev := `{"invocationId":"12345621-4787-0000-a418-36e56Example","sourceMSKArn":"arn:aws:kafka:us-east-1:123456789012:cluster/orders/abc",` +
		`"deliveryStreamArn":"arn:aws:firehose:us-east-1:123456789012:deliverystream/orders","region":"us-east-1","records":[` +
		`{"recordId":"49546986683135544286507457936321625675700192471156785154","approximateArrivalTimestamp":1716369573887,` +
		`"mskRecordMetadata":{"offset":"42","partitionId":"1","approximateArrivalTimestamp":1716369573887},` +
		`"kafkaRecordValue":"eyJvcmRlcklkIjoiby05IiwiYW1vdW50IjoxfQ=="}]}`
	out, err := h.Invoke(context.Background(), []byte(ev))
	fmt.Println(string(out), err)
	// Output:
	// arn:aws:kafka:us-east-1:123456789012:cluster/orders/abc 1 42 o-9
	// {"records":[{"recordId":"49546986683135544286507457936321625675700192471156785154","result":"Ok","kafkaRecordValue":"by05Cg=="}]} <nil>
}
