package eventscan

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// FuzzKafkaDecode checks that DecodeKafka and encoding/json agree on every
// input (a record encoding/json refuses fails, alone or with the event): the records in Partitions's order, their
// partitions and identifiers, the eventSource and whether there is a records
// object.
func FuzzKafkaDecode(f *testing.F) {
	f.Add(kafkaFixture(f, 5))
	raw, _ := sevents.MarshalEvent((&sevents.KafkaBuilder{}).Add("t", 0, nil, []byte(`{"id":"1"}`), sevents.KafkaHeader{Key: "h", Value: []byte{0, 200, 255}}).Add("t-x", 1, []byte("k"), nil).Event())
	f.Add(raw)
	for _, s := range []string{
		`{}`, `{"records":null}`, `{"records":{}}`, `{"records":{"t-0":null}}`, `{"records":{"t-0":[]}}`, `{"records":{"t-0":[{}]}}`,
		`{"eventSource":"aws:kafka","eventSourceArn":"a","bootstrapServers":"b","records":{"b-1":[{"offset":3}],"a-0":[{"offset":1},{"offset":2}]}}`,
		`{"records":{"t-0":[{"topic":"t","partition":0,"offset":9,"timestamp":1545084650987,"timestampType":"CREATE_TIME","key":"aw==","value":"e30=","headers":[{"a":[1,-2]},{}]}]}}`,
		`{"records":{"t-0":[{"timestamp":-1545084650987}]}}`, `{"records":{"t-0":[{"offset":1.5}]}}`, `{"records":{"t-0":[{"offset":1e2}]}}`,
		`{"records":{"t-0":[{"headers":[{"a":[128]}]}]}}`, `{"records":{"t-0":[{"headers":[{"a":[1],"a":[2]}]}]}}`,
		`{"records":{"t-0":[{"headers":null}]}}`, `{"records":{"t-0":[{"headers":[{"a":null}]}]}}`,
		`{"records":{"t-0":[{"topic":"\u00e9\n"}]}}`, `{"records":{"t-0":[],"t-0":[]}}`, `{"Records":{}}`, `{"records":{"t-0":[{"Offset":1}]}}`,
		`{"records":{}} x`, `{"records":{`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"records":{"t-0":[{"offset":1,"keySchemaMetadata":{"dataFormat":"AVRO","schemaId":"7"},"valueSchemaMetadata":null,"newField":[1]}]}}`))
	f.Add([]byte(`{"records":{"t-0":[{"offset":1,"value":"%%%"},{"offset":2,"partition":"x"}]}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, err := DecodeKafka(in)
		type refRecord struct {
			events.KafkaRecord
			KafkaMeta
		}
		var ref struct {
			EventSource    string                 `json:"eventSource"`
			EventSourceArn string                 `json:"eventSourceArn"`
			Records        map[string][]refRecord `json:"records"`
		}
		if rerr := json.Unmarshal(in, &ref); rerr != nil {
			if err == nil && !slices.ContainsFunc(fast.Entries, func(e KafkaEntry) bool { return e.Err != nil }) {
				t.Fatalf("accepted what encoding/json rejects (%v): %q", rerr, in)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: error %v, encoding/json none", in, err)
		}
		if fast.Source != ref.EventSource || fast.ARN != ref.EventSourceArn || fast.Records != (ref.Records != nil) {
			t.Fatalf("source %q arn %q records %t, reference %q %q %t", fast.Source, fast.ARN, fast.Records, ref.EventSource, ref.EventSourceArn, ref.Records != nil)
		}
		keys, n := Partitions(ref.Records)
		if len(fast.Entries) != n || len(fast.Parts) != n {
			t.Fatalf("%d entries, reference %d", len(fast.Entries), n)
		}
		i := 0
		for _, k := range keys {
			for _, r := range ref.Records[k] {
				e := fast.Entries[i]
				if e.Err != nil || fast.Parts[i] != k || e.ID != k+"@"+strconv.FormatInt(r.Offset, 10) {
					t.Fatalf("entry %d: partition %q id %q err %v, reference %q offset %d", i, fast.Parts[i], e.ID, e.Err, k, r.Offset)
				}
				if !reflect.DeepEqual(e.Record, r.KafkaRecord) || !reflect.DeepEqual(e.Meta, r.KafkaMeta) {
					t.Fatalf("entry %d of %q:\n read %#v %+v\nreference %#v %+v", i, in, e.Record, e.Meta, r.KafkaRecord, r.KafkaMeta)
				}
				for _, p := range []struct {
					text string
					got  []byte
					err  error
				}{{r.KafkaRecord.Key, e.Key, e.KeyErr}, {r.KafkaRecord.Value, e.Value, e.ValueErr}} {
					want, werr := base64.StdEncoding.DecodeString(p.text)
					if (werr == nil) != (p.err == nil) || werr == nil && !bytes.Equal(want, p.got) {
						t.Fatalf("entry %d of %q: %q decoded %q (%v), base64 %q (%v)", i, in, p.text, p.got, p.err, want, werr)
					}
				}
				i++
			}
		}
	})
}
