package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/events"
)

// snsBody is an SNS notification as SNS delivers it to a subscribed SQS
// queue with raw message delivery off
// (https://docs.aws.amazon.com/sns/latest/dg/sns-sqs-as-subscriber.html).
func snsBody(id string, message []byte) string {
	m, _ := json.Marshal(string(message))
	return `{"Type":"Notification","MessageId":"` + id + `","TopicArn":"arn:aws:sns:us-west-2:123456789012:MyTopic",` +
		`"Subject":"orders","Message":` + string(m) + `,"Timestamp":"2012-03-29T05:12:16.901Z","SignatureVersion":"1",` +
		`"Signature":"EXAMPLEnTrFPa3...","SigningCertURL":"https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",` +
		`"UnsubscribeURL":"https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-west-2:123456789012:MyTopic:c7fe3a54-ab0e-4ec2-88e0-db410a0f2bee"}`
}

// firehoseFile is a Firehose transformation event as Firehose sends it
// (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesisfirehose.html),
// one record per action.
func firehoseFile(t *testing.T, dir string, actions ...string) (string, []string) {
	var recs, ids []string
	for i, a := range actions {
		id := fmt.Sprintf("4954698668313554428650745793632162567570019247115678515%d", i)
		ids = append(ids, id)
		recs = append(recs, fmt.Sprintf(`    {"recordId": %q, "approximateArrivalTimestamp": 1495072949453, "data": %q}`,
			id, base64.StdEncoding.EncodeToString(command(fmt.Sprintf("h%d", i+1), a))))
	}
	return write(t, dir, "firehose.json", `{
  "invocationId": "invocationIdExample",
  "deliveryStreamArn": "arn:aws:firehose:us-east-1:123456789012:deliverystream/orders",
  "region": "us-east-1",
  "records": [
`+strings.Join(recs, ",\n")+`
  ]
}
`), ids
}

// sluice invoke sends an SQS event of SNS notifications and a Firehose
// transformation event to a compiled function, and reads each answer as
// its service would.
func TestInvokePayloads(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	b := &events.SQSBuilder{Clock: fixedClock}
	b.Add(snsBody("sns-1", command("n1", "ok")))
	b.Add(snsBody("sns-2", command("n2", "fail")))
	ev := b.Event()
	sns := prettyEvent(t, dir, "sns.json", ev)
	fh, fhIDs := firehoseFile(t, dir, "ok", "fail", "ok")
	fhOK, _ := firehoseFile(t, t.TempDir(), "ok")
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		verdict string
		stdout  []string
	}{
		{"sns in sqs", []string{"--event", sns, "--env", "SLUICE_SOURCE=sqs-sns"}, 1,
			"SQS event, 2 records in", []string{`"itemIdentifier": "` + ev.Records[1].MessageId + `"`}},
		{"firehose", []string{"--event", fh, "--env", "SLUICE_SOURCE=firehose"}, 1,
			": processing failed: 1 record answered ProcessingFailed, which Firehose delivers to the destination's error output (processing-failed) without retrying: " + fhIDs[1], []string{`"result": "ProcessingFailed"`, `"result": "Ok"`, `"recordId": "` + fhIDs[2] + `"`}},
		{"firehose success", []string{"--event", fhOK, "--env", "SLUICE_SOURCE=firehose"}, 0, ": Firehose event, 1 record in", nil},
		{"firehose event to an sqs function", []string{"--event", fhOK, "--env", "SLUICE_SOURCE=sqs"}, 1,
			": function error: SourceMismatchError: event is an Amazon Data Firehose transformation event", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := invokeCLI(t, "", append([]string{"--handler", bin}, tc.args...)...)
			if code != tc.code || !strings.Contains(lastLine(errs), tc.verdict) {
				t.Fatalf("exit %d, last line %q; want %d and %q\nstdout:\n%s\nstderr:\n%s", code, lastLine(errs), tc.code, tc.verdict, out, errs)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
