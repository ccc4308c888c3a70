package glueregistry

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"

	"github.com/sluicehq/sluice/kafkacodec"
)

// GetSchemaVersionAPI is the one Glue call the registry makes; *glue.Client
// implements it.
type GetSchemaVersionAPI interface {
	GetSchemaVersion(ctx context.Context, in *glue.GetSchemaVersionInput, optFns ...func(*glue.Options)) (*glue.GetSchemaVersionOutput, error)
}

// Registry reads schemas from AWS Glue Schema Registry.
type Registry struct {
	cache  *kafkacodec.Cache
	client GetSchemaVersionAPI
}

var _ kafkacodec.Registry = (*Registry)(nil)

// New returns a Registry that calls client, e.g.
// glue.NewFromConfig(cfg).
func New(client GetSchemaVersionAPI) (*Registry, error) {
	if client == nil {
		return nil, errors.New("glueregistry: client is nil")
	}
	r := &Registry{client: client}
	r.cache = kafkacodec.NewCache(kafkacodec.RegistryFunc(r.fetch))
	return r, nil
}

// Schema returns the schema version with the UUID id.
func (r *Registry) Schema(ctx context.Context, id string) (kafkacodec.Schema, error) {
	return r.cache.Schema(ctx, id)
}

func (r *Registry) fetch(ctx context.Context, id string) (kafkacodec.Schema, error) {
	out, err := r.client.GetSchemaVersion(ctx, &glue.GetSchemaVersionInput{SchemaVersionId: aws.String(id)})
	if err != nil {
		var nf *types.EntityNotFoundException
		var bad *types.InvalidInputException
		notFound := errors.As(err, &nf) || errors.As(err, &bad)
		// Keep the SDK's error text, not its type, in the chain.
		return kafkacodec.Schema{}, &kafkacodec.RegistryError{Registry: "glue", ID: id, NotFound: notFound, Err: errors.New(err.Error())}
	}
	if out.SchemaDefinition == nil {
		return kafkacodec.Schema{}, &kafkacodec.RegistryError{Registry: "glue", ID: id, Err: fmt.Errorf("GetSchemaVersion returned no definition (status %s)", out.Status)}
	}
	return kafkacodec.Schema{ID: id, Format: string(out.DataFormat), Text: *out.SchemaDefinition}, nil
}
