package glueregistry_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/glueregistry"
)

// fakeGlue answers GetSchemaVersion from a map; Glue has no local emulator
// in this project, and the call is one request.
type fakeGlue struct {
	calls atomic.Int32
	fail  error
}

func (f *fakeGlue) GetSchemaVersion(_ context.Context, in *glue.GetSchemaVersionInput, _ ...func(*glue.Options)) (*glue.GetSchemaVersionOutput, error) {
	f.calls.Add(1)
	if f.fail != nil {
		return nil, f.fail
	}
	if aws.ToString(in.SchemaVersionId) != "a1b2c3d4-5678-90ab-cdef-0123456789ab" {
		return nil, &types.EntityNotFoundException{Message: aws.String("Schema version is not found.")}
	}
	return &glue.GetSchemaVersionOutput{SchemaVersionId: in.SchemaVersionId, DataFormat: types.DataFormatAvro,
		SchemaDefinition: aws.String(`{"type":"string"}`), Status: types.SchemaVersionStatusAvailable}, nil
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	f := &fakeGlue{}
	r, err := glueregistry.New(f)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			s, err := r.Schema(ctx, "a1b2c3d4-5678-90ab-cdef-0123456789ab")
			if err != nil || s.Format != "AVRO" || s.Text != `{"type":"string"}` {
				t.Errorf("%+v %v", s, err)
			}
		})
	}
	wg.Wait()
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("GetSchemaVersion called %d times, want once", n)
	}
	_, err = r.Schema(ctx, "00000000-0000-0000-0000-000000000000")
	var re *kafkacodec.RegistryError
	if !errors.As(err, &re) || !re.NotFound || batch.Classify(err) != batch.ClassPermanent || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown version: %v", err)
	}
	var nf *types.EntityNotFoundException
	if errors.As(err, &nf) {
		t.Fatal("the SDK's error type leaks through")
	}

	down, _ := glueregistry.New(&fakeGlue{fail: errors.New("operation error Glue: GetSchemaVersion, throttled")})
	if _, err := down.Schema(ctx, "a1b2c3d4-5678-90ab-cdef-0123456789ab"); batch.Classify(err) != batch.ClassTransient {
		t.Fatalf("throttled: %v", err)
	}
	if _, err := glueregistry.New(nil); err == nil {
		t.Fatal("nil client: no error")
	}
}
