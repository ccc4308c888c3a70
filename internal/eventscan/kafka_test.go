package eventscan

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// FuzzKafkaDecode checks that the Kafka scanner and encoding/json agree on
// every input the scanner accepts: the records in Partitions's order, their
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
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, ok := scanKafkaEvent(in)
		if !ok {
			return // the general decoder decides
		}
		var ref struct {
			EventSource    string                          `json:"eventSource"`
			EventSourceArn string                          `json:"eventSourceArn"`
			Records        map[string][]events.KafkaRecord `json:"records"`
		}
		if err := json.Unmarshal(in, &ref); err != nil {
			t.Fatalf("scanner accepted what encoding/json rejects (%v): %q", err, in)
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
				if !reflect.DeepEqual(e.Record, r) {
					t.Fatalf("entry %d of %q:\n scanner %#v\nreference %#v", i, in, e.Record, r)
				}
				i++
			}
		}
	})
}
