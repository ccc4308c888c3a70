package handlers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/eventscan"
	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
)

// FuzzEnvelopes decodes bytes as each envelope, with the default codec
// and with encoding/json for what it carries (and for DynamoDBChange's
// images, the image plan against events.UnmarshalImage): the two must
// agree on error-or-not and on the value.
func FuzzEnvelopes(f *testing.F) {
	for _, s := range []string{
		awsevents.SNSNotification("a", `{"id":"o-1","action":"ok"}`), awsevents.SNSNotification("b", "Hello world!"), awsevents.SNSNotification("c", s3TestEvent),
		`{"Type":"Notification","Message":"{\"id\":1}"}`, `{"Type":"Notification","MessageAttributes":null,"Timestamp":"x"}`,
		awsevents.EventBridgeEvent("e", `{"id":"1","action":"fail"}`), awsevents.EventBridgeEvent("f", `[1]`), `{"detail-type":"t","source":"s","detail":null}`,
		s3Notification(s3Record("a+b%2Fc", "01"), s3Record("%zz", "02")), s3TestEvent, `{"Records":[{"s3":{"bucket":{"name":""}}}]}`,
		ddbChange("1", "MODIFY", `{"Artist":{"S":"a"},"Plays":{"N":"1e3"}}`, `{"Plays":{"N":"-0"}}`), ddbChange("2", "INSERT", `{"Plays":{"S":"x"}}`, ""),
		ddbChange("3", "INSERT", `{"Artist":{"NULL":true},"SongTitle":{"L":[]}}`, "null"), `{"eventSource":"aws:dynamodb","dynamodb":{"ApproximateCreationDateTime":1e300}}`,
		eventBridgeReplayed, s3EventBridgeEvents["created"], s3EventBridgeEvents["docs"], eventBridgeWithout(""),
		`null`, `[]`, `{}`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Add(gz(f, cwlControlMessage))
	f.Add(gz(f, `{"messageType":"DATA_MESSAGE","owner":"1","logGroup":"g","logStream":"s","subscriptionFilters":["f"],"logEvents":[{"id":"1","timestamp":1,"message":"m"}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		agree(t, in, func() any { return new(CloudWatchLogs) })
		agree(t, in, func() any { return new(SNSMessage[msg]) })
		agree(t, in, func() any { return new(SNSMessage[string]) })
		agree(t, in, func() any { return new(SNSMessage[S3Notification]) })
		agree(t, in, func() any { return new(EventBridgeEvent[msg]) })
		agree(t, in, func() any { return new(EventBridgeEvent[S3EventBridgeDetail]) })
		agree(t, in, func() any { return new(S3Notification) })
		agree(t, in, func() any { return new(DynamoDBChange[song]) })
		var sns SNSMessage[msg]
		if decodeValue(JSON(), append([]byte(nil), in...), &sns) == nil {
			_ = sns.MessageAttributes() // never panics
		}
	})
}

// agree decodes in into two values made by mk, one with each codec.
func agree(t *testing.T, in []byte, mk func() any) {
	a, b := mk(), mk()
	errA := decodeAny(JSON(), append([]byte(nil), in...), a)
	errB := decodeAny(StdJSON(), append([]byte(nil), in...), b)
	if (errA == nil) != (errB == nil) {
		t.Fatalf("%T on %q: default codec %v, encoding/json %v", a, in, errA, errB)
	}
	if errA == nil && !reflect.DeepEqual(a, b) {
		t.Fatalf("%T on %q:\n default %+v\n    std %+v", a, in, a, b)
	}
}

func decodeAny(c Codec, data []byte, v any) error {
	switch v := v.(type) {
	case *SNSMessage[msg]:
		return decodeValue(c, data, v)
	case *SNSMessage[string]:
		return decodeValue(c, data, v)
	case *SNSMessage[S3Notification]:
		return decodeValue(c, data, v)
	case *EventBridgeEvent[msg]:
		return decodeValue(c, data, v)
	case *EventBridgeEvent[S3EventBridgeDetail]:
		return decodeValue(c, data, v)
	case *S3Notification:
		return decodeValue(c, data, v)
	case *CloudWatchLogs:
		return decodeValue(c, data, v)
	case *DynamoDBChange[song]:
		return decodeValue(c, data, v)
	}
	panic("unknown type")
}

// FuzzFirehoseEvent: what eventscan.DecodeFirehose accepts, encoding/json
// decodes into aws-lambda-go's event with the same records, and into the
// wire's own struct with the same fields (an MSK source's kafkaRecordValue
// and metadata, which aws-lambda-go's type lacks); and the response
// written for it reads back as aws-lambda-go's response (kafkaRecordValue
// for an MSK record), one result per record.
func FuzzFirehoseEvent(f *testing.F) {
	f.Add(firehoseEventOf(`{"customer_id":"c1"}`, "Hello", ""))
	f.Add([]byte(`{"records":[{"recordId":"r\u00e9","data":"SGk=","approximateArrivalTimestamp":1.5}]}`))
	f.Add([]byte(`{"Records":[{"recordId":"r","data":"SGk=\n"}],"invocationId":null}`))
	f.Add([]byte(`{"records":[{"recordId":"","data":""}]}`))
	f.Add([]byte(`{"records":null}`))
	f.Add([]byte(firehoseMSKEvent))
	f.Add([]byte(`{"sourceMSKArn":"a","records":[{"recordId":"r","kafkaRecordValue":"SGk=","mskRecordMetadata":{"offset":7,"partitionId":null}},{"recordId":"s","data":"SGk="}]}`))
	f.Add([]byte(`{"records":[{"recordId":"r","kafkaRecordValue":"SGk=","data":"SGk="}]}`))
	f.Add([]byte(`{"records":[{"recordId":"0","kAfkAReCordVAlue":"0","dAtA":"0000"}]}`))
	f.Add([]byte(`{"records":[{"recordId":"0","kafkaRecordValue":"0","data":null}]}`))
	f.Add([]byte(`{"records":[{"recordId":"r","data":"SGk=","data":null,"kafkaRecordValue":"SGk=","mskRecordMetadata":{"offset":{"a" : [1]},"partitionId":"\u0031","approximateArrivalTimestamp":5},"mskRecordMetadata":{"offset":null}}]}`))
	f.Add([]byte(`{"records":[{"recordId":"r","data":"\n","kafkaRecordValue":"SGk=","mskRecordMetadata":null}]}`))
	f.Add([]byte(`{"records":[{"recordId":"r","data":"","kinesisRecordMetadata":{"shardId":"s","sequenceNumber":"1","approximateArrivalTimestamp":7},"kinesisRecordMetadata":null}]}`))
	f.Add([]byte(firehoseKinesisSource))
	f.Fuzz(func(t *testing.T, in []byte) {
		ev, err := eventscan.DecodeFirehose(in)
		if err != nil {
			return
		}
		var std events.KinesisFirehoseEvent
		if err := json.Unmarshal(in, &std); err != nil {
			t.Fatalf("accepted what encoding/json rejects (%v): %q", err, in)
		}
		// The fields as the decoder keeps them: timestamps are *int64 (null
		// is no time, where aws-lambda-go's type makes it 1970).
		var wire struct {
			SourceMSKArn string `json:"sourceMSKArn"`
			Records      []struct {
				ApproximateArrivalTimestamp *int64 `json:"approximateArrivalTimestamp"`
				KinesisRecordMetadata       struct {
					ApproximateArrivalTimestamp *int64 `json:"approximateArrivalTimestamp"`
				} `json:"kinesisRecordMetadata"`
				KafkaRecordValue  *string `json:"kafkaRecordValue"`
				MSKRecordMetadata *struct {
					Offset                      json.RawMessage `json:"offset"`
					PartitionID                 json.RawMessage `json:"partitionId"`
					ApproximateArrivalTimestamp *int64          `json:"approximateArrivalTimestamp"`
				} `json:"mskRecordMetadata"`
			} `json:"records"`
		}
		if err := json.Unmarshal(in, &wire); err != nil {
			t.Fatalf("accepted what encoding/json rejects (%v): %q", err, in)
		}
		if len(std.Records) != len(ev.Records) || len(wire.Records) != len(ev.Records) {
			t.Fatalf("%d records, encoding/json %d", len(ev.Records), len(std.Records))
		}
		if ev.InvocationID != std.InvocationID || ev.DeliveryStreamArn != std.DeliveryStreamArn || ev.SourceKinesisStreamArn != std.SourceKinesisStreamArn ||
			ev.Region != std.Region || ev.SourceMSKArn != wire.SourceMSKArn {
			t.Fatalf("event fields %+v, encoding/json %+v", ev.KinesisFirehoseEvent, std)
		}
		results := make([]FirehoseResult, len(ev.Records))
		for i, r := range ev.Records {
			want := std.Records[i].Data
			w := wire.Records[i]
			// A record without data takes its kafkaRecordValue (an MSK
			// source's record), which must then be base64.
			msk := len(want) == 0 && w.KafkaRecordValue != nil
			if msk != (ev.MSK != nil && ev.MSK[i] != nil) {
				t.Fatalf("record %d: MSK %v, encoding/json %v", i, !msk, msk)
			}
			if msk {
				if want, err = base64.StdEncoding.DecodeString(*w.KafkaRecordValue); err != nil {
					t.Fatalf("record %d: accepted a kafkaRecordValue that is not base64 (%v): %q", i, err, in)
				}
				m := ev.MSK[i]
				var off, part string
				var at *int64
				if w.MSKRecordMetadata != nil {
					off, part = rawText(w.MSKRecordMetadata.Offset), rawText(w.MSKRecordMetadata.PartitionID)
					at = w.MSKRecordMetadata.ApproximateArrivalTimestamp
				}
				if m.Offset != off || m.PartitionID != part || !m.ApproximateArrivalTimestamp.Time.Equal(msTimeOf(at)) {
					t.Fatalf("record %d: MSK metadata %+v, encoding/json %q %q %v", i, m, off, part, msTimeOf(at))
				}
			}
			sm, km := std.Records[i].KinesisFirehoseRecordMetadata, r.KinesisFirehoseRecordMetadata
			if r.RecordID != std.Records[i].RecordID || !bytes.Equal(r.Data, want) || km.SequenceNumber != sm.SequenceNumber ||
				km.ShardID != sm.ShardID || km.PartitionKey != sm.PartitionKey || km.SubsequenceNumber != sm.SubsequenceNumber ||
				!r.ApproximateArrivalTimestamp.Time.Equal(msTimeOf(w.ApproximateArrivalTimestamp)) ||
				!km.ApproximateArrivalTimestamp.Time.Equal(msTimeOf(w.KinesisRecordMetadata.ApproximateArrivalTimestamp)) {
				t.Fatalf("record %d: %+v, encoding/json %+v", i, r, std.Records[i])
			}
			results[i] = Transformed(r.Data).WithPartitionKeys(map[string]string{string(r.Data): r.RecordID})
		}
		out, err := appendFirehoseResponse(nil, ev, results)
		if err != nil {
			return // over 6 MB
		}
		var resp events.KinesisFirehoseResponse
		var kafka struct {
			Records []struct {
				KafkaRecordValue []byte `json:"kafkaRecordValue"`
			} `json:"records"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || len(resp.Records) != len(ev.Records) || json.Unmarshal(out, &kafka) != nil {
			t.Fatalf("response %q: %v", out, err)
		}
		for i, r := range resp.Records {
			// A key that is not UTF-8 is written as encoding/json writes it
			// (U+FFFD for each bad byte).
			var key string
			kb, _ := json.Marshal(string(ev.Records[i].Data))
			_ = json.Unmarshal(kb, &key)
			data := r.Data
			if ev.MSK != nil && ev.MSK[i] != nil {
				if r.Data != nil {
					t.Fatalf("result %d of an MSK record carries data: %s", i, out)
				}
				data = kafka.Records[i].KafkaRecordValue
			}
			if r.RecordID != ev.Records[i].RecordID || r.Result != FirehoseOk || !bytes.Equal(data, ev.Records[i].Data) ||
				r.Metadata.PartitionKeys[key] != r.RecordID {
				t.Fatalf("result %d: %+v", i, r)
			}
		}
	})
}

// rawText is what the Firehose decoder makes of an mskRecordMetadata
// field: a string's text, another value's JSON, "" for null or nothing.
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// msTimeOf is the time a Firehose timestamp's milliseconds name, none for
// nil.
func msTimeOf(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return time.UnixMilli(*ms)
}
