package kafkacodec_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/kafkacodec"
)

// fakeRegistry is a Confluent Schema Registry REST API over httptest:
// GET /schemas/ids/{id} from a map, counting requests per id.
type fakeRegistry struct {
	*httptest.Server
	schemas map[string]string // id -> {"schema":...} body
	mu      sync.Mutex
	hits    map[string]int
	down    atomic.Bool
}

func newFakeRegistry(t *testing.T, schemas map[string]string) *fakeRegistry {
	f := &fakeRegistry{schemas: schemas, hits: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutPrefix(r.URL.Path, "/schemas/ids/")
		f.mu.Lock()
		f.hits[id]++
		f.mu.Unlock()
		if u, p, _ := r.BasicAuth(); u != "key" || p != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error_code":401,"message":"Unauthorized"}`))
			return
		}
		if f.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error_code":50301,"message":"the registry is restarting"}`))
			return
		}
		body, found := f.schemas[id]
		if !ok || !found {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error_code":40403,"message":"Schema ` + id + ` not found"}`))
			return
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.Write([]byte(body))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeRegistry) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[id]
}

func schemaBody(text, typ string) string {
	m := map[string]string{"schema": text}
	if typ != "" {
		m["schemaType"] = typ
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestConfluentRegistry(t *testing.T) {
	ctx := context.Background()
	avsc := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	f := newFakeRegistry(t, map[string]string{"1": schemaBody(avsc, ""), "2": schemaBody(`syntax = "proto3"; message M {}`, "PROTOBUF")})
	r, err := kafkacodec.NewConfluentRegistry(f.URL+"/", kafkacodec.WithBasicAuth("key", "secret"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("fetched once by many goroutines", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for range 32 {
			wg.Go(func() {
				s, err := r.Schema(ctx, "1")
				if err == nil && (s.Text != avsc || s.Format != "AVRO" || s.ID != "1") {
					err = errors.New("wrong schema: " + s.Text)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := f.count("1"); n != 1 {
			t.Fatalf("schema 1 fetched %d times, want once", n)
		}
		s, err := r.Schema(ctx, "2")
		if err != nil || s.Format != "PROTOBUF" {
			t.Fatalf("schema 2: %+v %v", s, err)
		}
	})

	t.Run("unknown id is permanent", func(t *testing.T) {
		_, err := r.Schema(ctx, "99")
		var re *kafkacodec.RegistryError
		if !errors.As(err, &re) || !re.NotFound || batch.Classify(err) != batch.ClassPermanent || !strings.Contains(err.Error(), "Schema 99 not found") {
			t.Fatalf("err %v", err)
		}
		if _, err := r.Schema(ctx, glueUUID); batch.Classify(err) != batch.ClassPermanent {
			t.Fatalf("a Glue id asked of a Confluent registry: %v", err)
		}
		if f.count(glueUUID) != 0 {
			t.Fatal("a non-decimal id reached the registry")
		}
	})

	t.Run("registry down is transient and not cached", func(t *testing.T) {
		f.down.Store(true)
		_, err := r.Schema(ctx, "3")
		if batch.Classify(err) != batch.ClassTransient || !strings.Contains(err.Error(), "restarting") {
			t.Fatalf("err %v (class %v)", err, batch.Classify(err))
		}
		f.down.Store(false)
		f.schemas["3"] = schemaBody(avsc, "")
		if _, err := r.Schema(ctx, "3"); err != nil {
			t.Fatalf("after recovery: %v", err)
		}
		if n := f.count("3"); n != 2 {
			t.Fatalf("schema 3 fetched %d times, want 2", n)
		}
	})

	t.Run("wrong credentials are transient", func(t *testing.T) {
		bad, err := kafkacodec.NewConfluentRegistry(f.URL)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bad.Schema(ctx, "1"); batch.Classify(err) != batch.ClassTransient || !strings.Contains(err.Error(), "401") {
			t.Fatalf("err %v", err)
		}
	})
}

func TestNewConfluentRegistryRejects(t *testing.T) {
	for _, u := range []string{"", "localhost:8081", "ftp://x", "http://"} {
		if _, err := kafkacodec.NewConfluentRegistry(u); err == nil {
			t.Errorf("%q: no error", u)
		}
	}
	if _, err := kafkacodec.NewConfluentRegistry("http://x", kafkacodec.WithHTTPClient(nil)); err == nil {
		t.Error("nil client: no error")
	}
}

func TestCacheWaiterContext(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	c := kafkacodec.NewCache(kafkacodec.RegistryFunc(func(ctx context.Context, id string) (kafkacodec.Schema, error) {
		close(started)
		<-release
		return kafkacodec.Schema{ID: id}, nil
	}))
	done := make(chan error)
	go func() { _, err := c.Schema(context.Background(), "1"); done <- err }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Schema(ctx, "1"); !errors.Is(err, context.Canceled) || batch.Classify(err) != batch.ClassTransient {
		t.Fatalf("waiter with a cancelled context: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type order struct {
	ID    string `json:"id"`
	Total int    `json:"total"`
}

func TestJSONCodec(t *testing.T) {
	body := []byte(`{"id":"o-1","total":5}`)
	for name, data := range map[string][]byte{"plain": body, "confluent": confluent(4, body), "glue": glue(0, body), "glue zlib": glue(5, body)} {
		t.Run(name, func(t *testing.T) {
			var o order
			if err := kafkacodec.JSON().DecodeKafka(context.Background(), data, nil, &o); err != nil || o != (order{"o-1", 5}) {
				t.Fatalf("%+v %v", o, err)
			}
		})
	}
	var o order
	err := kafkacodec.JSON().DecodeKafka(context.Background(), confluent(4, []byte(`{"id":`)), nil, &o)
	var de *kafkacodec.DecodeError
	if !errors.As(err, &de) || de.SchemaID != "4" || de.Wire != kafkacodec.WireConfluent || !strings.Contains(err.Error(), "json (confluent schema id 4)") {
		t.Fatalf("err %v", err)
	}
}

func TestStringCodec(t *testing.T) {
	var s string
	var b []byte
	if err := kafkacodec.String().DecodeKafka(context.Background(), []byte("k-1"), nil, &s); err != nil || s != "k-1" {
		t.Fatal(s, err)
	}
	if err := kafkacodec.String().DecodeKafka(context.Background(), []byte("k-1"), nil, &b); err != nil || string(b) != "k-1" {
		t.Fatal(b, err)
	}
	var n int
	if err := kafkacodec.String().DecodeKafka(context.Background(), []byte("1"), nil, &n); err == nil {
		t.Fatal("decoded a string into an int")
	}
}
