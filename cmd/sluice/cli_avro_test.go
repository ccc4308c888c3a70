package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sluicehq/sluice/internal/testsupport/rie"
)

// The writer schemas of the Avro walk-through: version 2 adds a field the
// function's reader schema (examples/kafka-avro) does not have.
const (
	orderV1 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"amount_cents","type":"long"}]}`
	orderV2 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"channel","type":"string"},{"name":"amount_cents","type":"long"}]}`
)

// avroOrders registers both schema versions in a Confluent-compatible
// registry (franz-go's srfake, over HTTP) and returns it with n values
// framed as a Confluent serializer writes them: 0x00, the schema id, the
// Avro bytes. Even orders are written with version 1, odd ones with 2.
func avroOrders(t *testing.T, n int) (*srfake.Registry, [][]byte) {
	t.Helper()
	reg := srfake.New()
	t.Cleanup(reg.Close)
	var ids [2]int
	for i, s := range []string{orderV1, orderV2} {
		id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: s, Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	v1, v2 := hamba.MustParse(orderV1), hamba.MustParse(orderV2)
	var values [][]byte
	for i := range n {
		id := fmt.Sprintf("o%d", i)
		var body []byte
		var err error
		if i%2 == 0 {
			body, err = hamba.Marshal(v1, map[string]any{"id": id, "amount_cents": int64(100 * (i + 1))})
		} else {
			body, err = hamba.Marshal(v2, map[string]any{"id": id, "channel": "web", "amount_cents": int64(100 * (i + 1))})
		}
		if err != nil {
			t.Fatal(err)
		}
		value := binary.BigEndian.AppendUint32([]byte{0}, uint32(ids[i%2]))
		values = append(values, append(value, body...))
	}
	return reg, values
}

// avroEffectIDs reads the order ids of an effects file: the ids the function
// decoded from the Avro values.
func avroEffectIDs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct{ ID string }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("effects line %q: %v", sc.Text(), err)
		}
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	return ids
}

func orderIDs(n int) []string {
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("o%d", i))
	}
	slices.Sort(ids)
	return ids
}

// A Kafka topic of Avro values framed by a schema registry runs end to end
// through sluice run: from a records file (the values in "valueBase64", as
// a JSON value cannot carry them) and from a Kafka cluster (kfake), into
// examples/kafka-avro, which decodes each value with its writer's schema
// from the registry. Every order takes effect once, named by the id the
// function decoded.
func TestRunKafkaAvroWithARegistry(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/kafka-avro")
	const n = 6
	reg, values := avroOrders(t, n)
	env := []string{"--env", "SCHEMA_REGISTRY_URL=" + reg.URL()}

	t.Run("records file", func(t *testing.T) {
		dir := t.TempDir()
		var lines []string
		for i, v := range values {
			lines = append(lines, fmt.Sprintf(`{"partition":%d,"key":"customer-%d","valueBase64":%q}`, i%2, i, base64.StdEncoding.EncodeToString(v)))
		}
		records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
		mapping := write(t, dir, "mapping.json", `{"EventSource":"kafka","Mode":"provisioned","Topic":"orders","Partitions":2,
			"StartingPosition":"TRIM_HORIZON","FunctionResponseTypes":["ReportBatchItemFailures"]}`)
		effects := filepath.Join(dir, "effects.jsonl")
		code, out, errs := runCLI(t, append([]string{"run", "--mapping", mapping, "--records", records, "--handler", bin,
			"--effects", effects, "--quiet"}, env...)...)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("processed %d ", n)) || !strings.Contains(out, "PASS") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		if got := avroEffectIDs(t, effects); !slices.Equal(got, orderIDs(n)) {
			t.Fatalf("orders decoded %v, want %v", got, orderIDs(n))
		}
	})

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	prod, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i, v := range values {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 2), Key: []byte(fmt.Sprint("customer-", i)), Value: v}
		if err := prod.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("kafka cluster", func(t *testing.T) {
		dir := t.TempDir()
		mapping := write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"kafka","Mode":"provisioned","StartingPosition":"TRIM_HORIZON",
			"FunctionResponseTypes":["ReportBatchItemFailures"],"Endpoint":"kafka://%s","Topic":"orders"}`, brokers))
		effects := filepath.Join(dir, "effects.jsonl")
		code, out, errs := runCLI(t, append([]string{"run", "--mapping", mapping, "--handler", bin, "--effects", effects, "--quiet"}, env...)...)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("processed %d ", n)) || !strings.Contains(out, "PASS") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		if got := avroEffectIDs(t, effects); !slices.Equal(got, orderIDs(n)) {
			t.Fatalf("orders decoded %v, want %v", got, orderIDs(n))
		}
	})

	t.Run("replay", func(t *testing.T) {
		effects := filepath.Join(t.TempDir(), "effects.jsonl")
		code, out, errs := runCLI(t, append([]string{"replay", "--kafka-topic", "orders", "--kafka-brokers", brokers, "--from", "TRIM_HORIZON",
			"--handler", bin, "--quiet", "--env", "SLUICE_EFFECTS_FILE=" + effects}, env...)...)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("%d records sent, %d acknowledged", n, n)) {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		if got := avroEffectIDs(t, effects); !slices.Equal(got, orderIDs(n)) {
			t.Fatalf("orders decoded %v, want %v", got, orderIDs(n))
		}
	})

	// Without the registry the function cannot decode the values: the run
	// fails, so the passes above were the registry's doing.
	t.Run("registry down", func(t *testing.T) {
		dir := t.TempDir()
		records := write(t, dir, "records.jsonl", fmt.Sprintf(`{"partition":0,"valueBase64":%q}`+"\n", base64.StdEncoding.EncodeToString(values[1])))
		mapping := write(t, dir, "mapping.json", `{"EventSource":"kafka","Mode":"provisioned","StartingPosition":"TRIM_HORIZON",
			"FunctionResponseTypes":["ReportBatchItemFailures"],"MaximumRetryAttempts":1}`)
		code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin,
			"--effects", filepath.Join(dir, "effects.jsonl"), "--quiet", "--env", "SCHEMA_REGISTRY_URL=http://127.0.0.1:1")
		if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "schema registry") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
	})
}
