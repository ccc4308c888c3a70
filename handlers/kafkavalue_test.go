package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
)

type kvOrder struct {
	ID    string `json:"id"`
	Total int    `json:"total"`
}

// refuse is a codec that must not be called.
var refuse = KafkaCodecFunc(func(context.Context, []byte, *sevents.KafkaSchemaMetadata, any) error {
	return errors.New("codec called")
})

// binaryCodec stands in for Avro: it reads "bin:<id>:<total>".
var binaryCodec = KafkaCodecFunc(func(_ context.Context, data []byte, s *sevents.KafkaSchemaMetadata, v any) error {
	var id string
	var total int
	if _, err := fmt.Sscanf(strings.ReplaceAll(string(data), ":", " "), "bin %s %d", &id, &total); err != nil {
		return fmt.Errorf("not binary: %q", data)
	}
	if s == nil || s.SchemaID != "7" {
		return fmt.Errorf("schema metadata %+v", s)
	}
	*v.(*kvOrder) = kvOrder{id, total}
	return nil
})

func runKafka(t *testing.T, payload []byte, opts ...Option) (got []KafkaRecord[kvOrder], resp string, report BatchReport) {
	t.Helper()
	h, err := NewKafka(func(_ context.Context, r KafkaRecord[kvOrder]) error {
		got = append(got, r)
		return nil
	}, append(opts, withLookupEnv(noEnv), WithLogger(slog.New(slog.DiscardHandler)), WithConcurrency(1),
		WithPartialResponseWhenNoneSucceed(), WithOnBatch(func(_ context.Context, r BatchReport) { report = r }))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	return got, string(out), report
}

func TestKafkaValidatedByTheMapping(t *testing.T) {
	meta := `{"dataFormat":"AVRO","schemaId":"7"}`
	jsonValues := []string{`{"id":"o-1","total":5}`, `{"id":"o-2","total":6}`}
	binValues := []string{"bin:o-1:5", "bin:o-2:6"}
	for _, tc := range []struct {
		name   string
		values []string
		opts   []Option
	}{
		{"JSON format, stated", jsonValues, []Option{WithKafkaValue(refuse), WithKafkaEventRecordFormat(KafkaRecordFormatJSON)}},
		{"JSON format, detected", jsonValues, []Option{WithKafkaValue(refuse)}},
		{"JSON format, default codec", jsonValues, nil},
		{"SOURCE format, stated", binValues, []Option{WithKafkaValue(binaryCodec), WithKafkaEventRecordFormat(KafkaRecordFormatSource)}},
		{"SOURCE format, detected", binValues, []Option{WithKafkaValue(binaryCodec)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, resp, _ := runKafka(t, awsevents.KafkaSchemaEvent("k", "", tc.values, meta), tc.opts...)
			if resp != `{"batchItemFailures":[]}` || len(got) != 2 {
				t.Fatalf("response %s, %d records", resp, len(got))
			}
			if got[1].Value != (kvOrder{"o-2", 6}) || got[1].ValueSchema == nil || got[1].ValueSchema.SchemaID != "7" ||
				got[1].ValueSchema.DataFormat != "AVRO" || got[1].KeySchema != nil || string(got[1].Key) != "k" {
				t.Fatalf("record %+v", got[1])
			}
		})
	}
	t.Run("JSON Schema values are JSON in SOURCE format too", func(t *testing.T) {
		got, resp, _ := runKafka(t, awsevents.KafkaSchemaEvent("", "", jsonValues, `{"dataFormat":"JSON","schemaId":"7"}`),
			WithKafkaValue(refuse), WithKafkaEventRecordFormat(KafkaRecordFormatSource))
		if resp != `{"batchItemFailures":[]}` || got[0].Value != (kvOrder{"o-1", 5}) {
			t.Fatalf("%s %+v", resp, got)
		}
	})
	t.Run("a SOURCE value that does not decode names its schema and offset", func(t *testing.T) {
		_, resp, rep := runKafka(t, awsevents.KafkaSchemaEvent("", "", []string{"bin:o-1:5", "garbage"}, meta), WithKafkaValue(binaryCodec))
		if resp != `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":1}}]}` {
			t.Fatalf("response %s", resp)
		}
		err := rep.Records[1].Err
		var kde *KafkaDecodeError
		if !errors.As(err, &kde) || kde.SchemaID != "7" || kde.Offset != 1 || batch.Classify(err) != batch.ClassPermanent ||
			!strings.Contains(err.Error(), "kafka value of orders-0 at offset 1 (validated against schema 7) did not decode") {
			t.Fatalf("err %v", err)
		}
	})
}

func TestKafkaKeyCodec(t *testing.T) {
	upper := KafkaCodecFunc(func(_ context.Context, data []byte, _ *sevents.KafkaSchemaMetadata, v any) error {
		if string(data) == "bad" {
			return errors.New("bad key")
		}
		*v.(*string) = strings.ToUpper(string(data))
		return nil
	})
	got, resp, _ := runKafka(t, awsevents.KafkaSchemaEvent("cust-1", "", []string{`{"id":"o-1"}`}, ""), WithKafkaKey[string](upper))
	if resp != `{"batchItemFailures":[]}` {
		t.Fatal(resp)
	}
	if k, ok := KafkaKey[string](got[0]); !ok || k != "CUST-1" || string(got[0].Key) != "cust-1" {
		t.Fatalf("key %q %v, raw %q", k, ok, got[0].Key)
	}
	if _, ok := KafkaKey[int](got[0]); ok {
		t.Fatal("KafkaKey[int] of a string key")
	}

	// A key the mapping validated in JSON format is JSON.
	got, _, _ = runKafka(t, awsevents.KafkaSchemaEvent(`{"customer":"c-9"}`, `{"dataFormat":"AVRO","schemaId":"3"}`, []string{`{"id":"o-1"}`}, ""),
		WithKafkaKey[map[string]string](refuse), WithKafkaEventRecordFormat(KafkaRecordFormatJSON))
	if k, _ := KafkaKey[map[string]string](got[0]); k["customer"] != "c-9" || got[0].KeySchema.SchemaID != "3" {
		t.Fatalf("JSON key %v", k)
	}

	// A key that does not decode fails its record.
	_, resp, rep := runKafka(t, awsevents.KafkaSchemaEvent("bad", "", []string{`{"id":"o-1"}`}, ""), WithKafkaKey[string](upper))
	var kde *KafkaDecodeError
	if !strings.Contains(resp, `"offset":0`) || !errors.As(rep.Records[0].Err, &kde) || kde.Part != "key" {
		t.Fatalf("%s %v", resp, rep.Records[0].Err)
	}
	// A record without a key has no decoded key.
	got, _, _ = runKafka(t, awsevents.KafkaSchemaEvent("", "", []string{`{"id":"o-1"}`}, ""), WithKafkaKey[string](upper))
	if got[0].DecodedKey != nil {
		t.Fatalf("decoded key %v", got[0].DecodedKey)
	}
}

type transientErr struct{}

func (transientErr) Error() string   { return "registry unreachable" }
func (transientErr) Transient() bool { return true }

func TestKafkaTransientDecodeFailureIsNotPermanent(t *testing.T) {
	down := KafkaCodecFunc(func(context.Context, []byte, *sevents.KafkaSchemaMetadata, any) error { return transientErr{} })
	_, resp, rep := runKafka(t, awsevents.KafkaSchemaEvent("", "", []string{"x"}, ""), WithKafkaValue(down))
	err := rep.Records[0].Err
	var de *batch.DecodeError
	if !strings.Contains(resp, `"offset":0`) || errors.As(err, &de) || batch.Classify(err) != batch.ClassTransient {
		t.Fatalf("%s: %v (class %v)", resp, err, batch.Classify(err))
	}
}

func TestKafkaCodecOptionsValidate(t *testing.T) {
	fn := func(context.Context, KafkaRecord[kvOrder]) error { return nil }
	for name, opts := range map[string][]Option{
		"nil value codec": {WithKafkaValue(nil)},
		"nil key codec":   {WithKafkaKey[string](nil)},
		"unknown format":  {WithKafkaEventRecordFormat("AVRO")},
	} {
		if _, err := NewKafka(fn, append(opts, withLookupEnv(noEnv))...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	_, err := NewSQS(func(context.Context, SQSRecord[kvOrder]) error { return nil }, WithKafkaValue(refuse), withLookupEnv(noEnv))
	if err == nil || !strings.Contains(err.Error(), "apply to Kafka handlers only") {
		t.Fatalf("WithKafkaValue on an SQS handler: %v", err)
	}
}

// TestJSONHandlerLinksNoSchemaLibraries keeps Avro, Protobuf's message
// runtime and the Glue client out of a function that decodes JSON. (The
// KPL reader, events/kpl, reads the aggregate's wire format with
// protowire, which links only its own two internal packages.)
func TestJSONHandlerLinksNoSchemaLibraries(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	wire := map[string]bool{"google.golang.org/protobuf/encoding/protowire": true,
		"google.golang.org/protobuf/internal/errors": true, "google.golang.org/protobuf/internal/detrand": true}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/hamba/avro") || strings.HasPrefix(pkg, "google.golang.org/protobuf") && !wire[pkg] ||
			strings.HasPrefix(pkg, "github.com/sluicehq/sluice/kafkacodec") {
			t.Errorf("handlers links %s", pkg)
		}
	}
}
