package kpl_test

import (
	"fmt"

	"github.com/sluicehq/sluice/events/kpl"
)

// An aggregate as the Kinesis Producer Library writes it, read back into
// its user records; ordinary data is reported as such (ok false).
func ExampleDeaggregate() {
	data := kpl.Encode([]kpl.Record{
		{PartitionKey: "order-41", Data: []byte(`{"id":41}`)},
		{PartitionKey: "order-42", Data: []byte(`{"id":42}`)},
	})
	fmt.Println(kpl.IsAggregated(data))
	recs, ok, err := kpl.Deaggregate(data)
	fmt.Println(len(recs), ok, err)
	for i, r := range recs {
		fmt.Println(kpl.SubSequenceKey("49590338271490256608559692538361571095921575989136588898", i), r.PartitionKey, string(r.Data))
	}

	_, ok, err = kpl.Deaggregate([]byte(`{"id":43}`))
	fmt.Println(ok, err)
	// Output:
	// true
	// 2 true <nil>
	// 49590338271490256608559692538361571095921575989136588898:0 order-41 {"id":41}
	// 49590338271490256608559692538361571095921575989136588898:1 order-42 {"id":42}
	// false <nil>
}

// Parse reads the user records one at a time, without a []Record between,
// and Read reuses the Aggregate for the next Kinesis record.
func ExampleParse() {
	a, ok, err := kpl.Parse(kpl.Encode([]kpl.Record{
		{PartitionKey: "sensor-1", Data: []byte("21.5")},
		{PartitionKey: "sensor-2", ExplicitHashKey: "170141183460469231731687303715884105728", Data: []byte("19.0")},
	}))
	fmt.Println(a.Len(), ok, err)
	for i := range a.Len() {
		pk, ehk, data, err := a.Keys(i)
		fmt.Printf("%s %q %s %v\n", pk, ehk, data, err)
	}
	ok, err = a.Read(kpl.Encode([]kpl.Record{{PartitionKey: "sensor-3", Data: []byte("18.25")}}))
	r, _ := a.Record(0)
	fmt.Println(a.Len(), ok, err, r.PartitionKey, string(r.Data))
	// Output:
	// 2 true <nil>
	// sensor-1 "" 21.5 <nil>
	// sensor-2 "170141183460469231731687303715884105728" 19.0 <nil>
	// 1 true <nil> sensor-3 18.25
}
