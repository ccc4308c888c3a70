package avro_test

// The 9-field order record (strings, longs, an int, a union, an array of
// records and a map) and a two-string key, for the truncation tests, the
// fuzz targets and the benchmarks.
const (
	order9Schema = `{"type":"record","name":"FullOrder","namespace":"shop","fields":[
		{"name":"id","type":"string"},
		{"name":"customer_id","type":"string"},
		{"name":"amount_cents","type":"long"},
		{"name":"currency","type":"string"},
		{"name":"created_at_ms","type":"long"},
		{"name":"priority","type":"int"},
		{"name":"note","type":["null","string"],"default":null},
		{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
			{"name":"sku","type":"string"},
			{"name":"quantity","type":"int"},
			{"name":"price_cents","type":"long"}]}}},
		{"name":"attributes","type":{"type":"map","values":"string"}}]}`
	keySchema = `{"type":"record","name":"OrderKey","namespace":"shop","fields":[
		{"name":"tenant","type":"string"},
		{"name":"customer","type":"string"}]}`
)

type Line struct {
	SKU        string `avro:"sku"`
	Quantity   int32  `avro:"quantity"`
	PriceCents int64  `avro:"price_cents"`
}

type Order9 struct {
	ID          string            `avro:"id"`
	CustomerID  string            `avro:"customer_id"`
	AmountCents int64             `avro:"amount_cents"`
	Currency    string            `avro:"currency"`
	CreatedAtMs int64             `avro:"created_at_ms"`
	Priority    int32             `avro:"priority"`
	Note        *string           `avro:"note"`
	Lines       []Line            `avro:"lines"`
	Attributes  map[string]string `avro:"attributes"`
}

type OrderKey struct {
	Tenant   string `avro:"tenant"`
	Customer string `avro:"customer"`
}

func sampleOrder9() Order9 {
	note := "leave at the door"
	return Order9{
		ID: "ord-000042", CustomerID: "cus-981", AmountCents: 129900, Currency: "EUR",
		CreatedAtMs: 1764547200000, Priority: 3, Note: &note,
		Lines:      []Line{{"sku-1", 2, 45000}, {"sku-22", 1, 39900}},
		Attributes: map[string]string{"channel": "web"},
	}
}
