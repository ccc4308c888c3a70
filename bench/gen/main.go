// Command gen writes the event files the peer benchmark (make bench-peers)
// feeds to Sluice, the Go hand loop and Powertools for AWS Lambda
// (TypeScript), so that every contender decodes the very same bytes:
//
//	kinesis-10k.json  events.KinesisEvent, 10,000 records of one shard
//	sqs-1k.json       events.SQSEvent, 1,000 standard-queue messages
//	dynamodb-10k.json events.DynamoDBEvent, 10,000 MODIFY records of a
//	                  NEW_AND_OLD_IMAGES stream (an order, PLACED -> PAID)
//	kafka-10k.json    events.KafkaEvent (MSK), 10,000 records over 4
//	                  partitions, keyed by customer
//
// Every payload (for DynamoDB, the order's fields as an item) is an order of about 267 bytes of JSON (three line items).
// The output is identical on every run: fixed seeds, fixed clock.
//
//	go run ./bench/gen -out DIR
package main

import (
	"bufio"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

const (
	region   = "us-east-1"
	account  = "123456789012"
	seed     = 0x5eed
	nKinesis = 10000
	nSQS     = 1000
	nStreams = 10000 // DynamoDB Streams and Kafka records
	nKeys    = 100
)

// base is the fixed "now" every timestamp derives from.
var base = time.Date(2025, 11, 3, 9, 30, 0, 0, time.UTC)

type item struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

// order has the fields, in the JSON order, of the benchmarks' order type
// (handlers/bench_test.go benchOrder).
type order struct {
	OrderID    string  `json:"orderId"`
	CustomerID string  `json:"customerId"`
	Amount     float64 `json:"amount"`
	Currency   string  `json:"currency"`
	Items      []item  `json:"items"`
	CreatedAt  string  `json:"createdAt"`
}

var currencies = []string{"USD", "EUR", "GBP", "JPY"}

func newOrder(r *rand.Rand, prefix string, n int, at time.Time) []byte {
	o := order{
		OrderID:    fmt.Sprintf("%s-%08d", prefix, n),
		CustomerID: fmt.Sprintf("cust-%06d", r.IntN(50000)),
		Currency:   currencies[r.IntN(len(currencies))],
		CreatedAt:  at.Format("2006-01-02T15:04:05.000Z"),
	}
	var cents int64
	for range 3 {
		qty := 1 + r.IntN(5)
		pc := int64(199 + r.IntN(19800)) // 1.99 .. 199.98
		o.Items = append(o.Items, item{SKU: fmt.Sprintf("SKU-%06d", r.IntN(1000000)), Qty: qty, Price: float64(pc) / 100})
		cents += int64(qty) * pc
	}
	o.Amount = float64(cents) / 100
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

// uuid4 formats 16 bytes from r as an RFC 4122 version-4 UUID.
func uuid4(r *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func token(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)
}

func kinesis(r *rand.Rand) events.KinesisEvent {
	const shard = "shardId-000000000003"
	arn := "arn:aws:kinesis:" + region + ":" + account + ":stream/orders"
	// Kinesis sequence numbers are decimals of up to 128 bits that grow within a shard.
	seq, _ := new(big.Int).SetString("49656734590271318743261822349586220417738112402617876530", 10)
	ev := events.KinesisEvent{Records: make([]events.KinesisEventRecord, 0, nKinesis)}
	for i := range nKinesis {
		seq.Add(seq, big.NewInt(int64(1+r.IntN(1<<20))*(1<<16)))
		sn := seq.String()
		at := base.Add(time.Duration(i) * 3 * time.Millisecond)
		ev.Records = append(ev.Records, events.KinesisEventRecord{
			AwsRegion:         region,
			EventID:           shard + ":" + sn,
			EventName:         "aws:kinesis:record",
			EventSource:       "aws:kinesis",
			EventSourceArn:    arn,
			EventVersion:      "1.0",
			InvokeIdentityArn: "arn:aws:iam::" + account + ":role/orders-consumer",
			Kinesis: events.KinesisRecord{
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: at},
				Data:                        newOrder(r, "ord-k", i, at), // encoding/json writes []byte as base64
				PartitionKey:                fmt.Sprintf("pk-%03d", r.IntN(nKeys)),
				SequenceNumber:              sn,
				KinesisSchemaVersion:        "1.0",
			},
		})
	}
	return ev
}

func sqs(r *rand.Rand) events.SQSEvent {
	arn := "arn:aws:sqs:" + region + ":" + account + ":orders"
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, nSQS)}
	for i := range nSQS {
		at := base.Add(time.Duration(i) * 7 * time.Millisecond)
		body := newOrder(r, "ord-s", i, at)
		sum := md5.Sum(body)
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:     uuid4(r),
			ReceiptHandle: "AQEB" + token(r, 132),
			Body:          string(body),
			Md5OfBody:     hex.EncodeToString(sum[:]),
			Attributes: map[string]string{
				"ApproximateReceiveCount":          "1",
				"SentTimestamp":                    strconv.FormatInt(at.UnixMilli(), 10),
				"SenderId":                         "AROAEXAMPLEID:orders-producer",
				"ApproximateFirstReceiveTimestamp": strconv.FormatInt(at.UnixMilli()+12, 10),
			},
			MessageAttributes: map[string]events.SQSMessageAttribute{},
			EventSourceARN:    arn,
			EventSource:       "aws:sqs",
			AWSRegion:         region,
		})
	}
	return ev
}

// dynamodb is a table stream's batch of MODIFY records (NEW_AND_OLD_IMAGES):
// orders going from PLACED to PAID, as DynamoDB items.
func dynamodb(r *rand.Rand) events.DynamoDBEvent {
	arn := "arn:aws:dynamodb:" + region + ":" + account + ":table/orders/stream/2025-11-03T09:00:00.000"
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, 0, nStreams)}
	seq, _ := new(big.Int).SetString("4421584500000000017450439091", 10)
	for i := range nStreams {
		at := base.Add(time.Duration(i) * 5 * time.Millisecond)
		id := fmt.Sprintf("ord-d-%08d", i)
		var o order
		if err := json.Unmarshal(newOrder(r, "ord-d", i, at), &o); err != nil {
			panic(err)
		}
		item := func(status string, version int) map[string]events.DynamoDBAttributeValue {
			return map[string]events.DynamoDBAttributeValue{
				"orderId":    events.NewStringAttribute(id),
				"customerId": events.NewStringAttribute(o.CustomerID),
				"amount":     events.NewNumberAttribute(strconv.FormatFloat(o.Amount, 'f', -1, 64)),
				"currency":   events.NewStringAttribute(o.Currency),
				"status":     events.NewStringAttribute(status),
				"version":    events.NewNumberAttribute(strconv.Itoa(version)),
				"createdAt":  events.NewStringAttribute(o.CreatedAt),
			}
		}
		seq.Add(seq, big.NewInt(int64(1+r.IntN(1000))*100))
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{
			AWSRegion: region,
			EventID:   md5hex(id),
			EventName: "MODIFY", EventSource: "aws:dynamodb", EventVersion: "1.1", EventSourceArn: arn,
			Change: events.DynamoDBStreamRecord{
				ApproximateCreationDateTime: events.SecondsEpochTime{Time: at.Truncate(time.Second)},
				Keys:                        map[string]events.DynamoDBAttributeValue{"orderId": events.NewStringAttribute(id)},
				NewImage:                    item("PAID", 2),
				OldImage:                    item("PLACED", 1),
				SequenceNumber:              seq.String(),
				SizeBytes:                   int64(300 + r.IntN(40)),
				StreamViewType:              "NEW_AND_OLD_IMAGES",
			},
		})
	}
	return ev
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// kafka is an Amazon MSK batch of orders over 4 partitions of one topic,
// keyed by customer.
func kafka(r *rand.Rand) events.KafkaEvent {
	ev := events.KafkaEvent{
		EventSource:      "aws:kafka",
		EventSourceARN:   "arn:aws:kafka:" + region + ":" + account + ":cluster/orders/a1b2c3d4-5678-90ab-cdef-11111EXAMPLE-2",
		BootstrapServers: "b-1.orders.abc123.c2.kafka.us-east-1.amazonaws.com:9098,b-2.orders.abc123.c2.kafka.us-east-1.amazonaws.com:9098",
		Records:          map[string][]events.KafkaRecord{},
	}
	for i := range nStreams {
		at := base.Add(time.Duration(i) * 2 * time.Millisecond)
		p := int64(i % 4)
		pk := "orders-" + strconv.FormatInt(p, 10)
		value := newOrder(r, "ord-f", i, at)
		var o order
		if err := json.Unmarshal(value, &o); err != nil {
			panic(err)
		}
		ev.Records[pk] = append(ev.Records[pk], events.KafkaRecord{
			Topic: "orders", Partition: p, Offset: int64(1_000_000 + len(ev.Records[pk])),
			Timestamp:     events.MilliSecondsEpochTime{Time: at},
			TimestampType: "CREATE_TIME",
			Key:           base64.StdEncoding.EncodeToString([]byte(o.CustomerID)),
			Value:         base64.StdEncoding.EncodeToString(value),
			Headers:       []map[string]events.JSONNumberBytes{},
		})
	}
	return ev
}

func write(path string, v any) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		f.Close()
		return 0, fmt.Errorf("encode %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return st.Size(), f.Close()
}

func main() {
	out := flag.String("out", ".", "directory to write the event files into")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
	// One random source per file, so each file stays the same if the other changes.
	for _, f := range []struct {
		name    string
		records int
		v       any
	}{
		{"kinesis-10k.json", nKinesis, kinesis(rand.New(rand.NewPCG(seed, 1)))},
		{"sqs-1k.json", nSQS, sqs(rand.New(rand.NewPCG(seed, 2)))},
		{"dynamodb-10k.json", nStreams, dynamodb(rand.New(rand.NewPCG(seed, 3)))},
		{"kafka-10k.json", nStreams, kafka(rand.New(rand.NewPCG(seed, 4)))},
	} {
		path := filepath.Join(*out, f.name)
		size, err := write(path, f.v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gen: %v (is -out %s writable?)\n", err, *out)
			os.Exit(1)
		}
		fmt.Printf("gen file=%s records=%d bytes=%d\n", path, f.records, size)
	}
}
