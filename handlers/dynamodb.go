package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/engine"
)

// DynamoDBRecord is one DynamoDB Streams record: the item images decoded into
// T (with `dynamodbav` struct tags, as aws-sdk-go-v2's attributevalue package
// decodes a table item) and the record exactly as Lambda delivered it.
//
// New is the item after the change (INSERT, MODIFY) and Old the item before it
// (MODIFY, REMOVE), each nil when the stream view type does not carry it.
type DynamoDBRecord[T any] struct {
	New *T
	Old *T
	Raw events.DynamoDBEventRecord
}

// EventName is INSERT, MODIFY or REMOVE.
func (r DynamoDBRecord[T]) EventName() string { return r.Raw.EventName }

// SequenceNumber is the stream record's sequence number, its batch item
// identifier.
func (r DynamoDBRecord[T]) SequenceNumber() string { return r.Raw.Change.SequenceNumber }

// Keys is the item's primary key attributes.
func (r DynamoDBRecord[T]) Keys() map[string]events.DynamoDBAttributeValue { return r.Raw.Change.Keys }

// UnmarshalKeys decodes the item's primary key into out.
func (r DynamoDBRecord[T]) UnmarshalKeys(out any) error {
	return sevents.UnmarshalImage(r.Raw.Change.Keys, out)
}

// Expired reports whether the record is a deletion made by DynamoDB's time to
// live process.
func (r DynamoDBRecord[T]) Expired() bool {
	u := r.Raw.UserIdentity
	return u != nil && u.Type == "Service" && u.PrincipalID == "dynamodb.amazonaws.com"
}

// CreationTime is ApproximateCreationDateTime.
func (r DynamoDBRecord[T]) CreationTime() time.Time {
	return r.Raw.Change.ApproximateCreationDateTime.Time
}

// DynamoDBHandler is the Lambda handler for a DynamoDB Streams event source
// mapping. It implements lambda.Handler.
type DynamoDBHandler[T any] struct {
	cfg   *config
	chain pipeline[DynamoDBRecord[T]]
	x     expect
}

// NewDynamoDB returns a DynamoDB Streams handler that calls fn for each record.
func NewDynamoDB[T any](fn func(context.Context, DynamoDBRecord[T]) error, opts ...Option) (*DynamoDBHandler[T], error) {
	c, err := newConfig(kindStream, "dynamodb", opts)
	if err != nil {
		return nil, err
	}
	h, err := chain(c, fn, DynamoDBRecord[T].idempotencyKey)
	if err != nil {
		return nil, fmt.Errorf("sluice: %s handler: %w", "dynamodb", err)
	}
	return &DynamoDBHandler[T]{cfg: c, chain: h, x: expect{"handlers.NewDynamoDB", "Records", []string{sourceDynamoDB}}}, nil
}

// MustDynamoDB is NewDynamoDB that panics on an error, for use in main.
func MustDynamoDB[T any](fn func(context.Context, DynamoDBRecord[T]) error, opts ...Option) *DynamoDBHandler[T] {
	h := must(NewDynamoDB(fn, opts...))
	h.x.handler = "handlers.MustDynamoDB"
	return h
}

// Invoke handles one DynamoDB Streams event and returns the partial batch
// response.
func (h *DynamoDBHandler[T]) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	recs, decErrs, err := decodeRecordArray("dynamodb", payload, func(r *events.DynamoDBEventRecord) string { return r.Change.SequenceNumber })
	if err != nil || recs == nil {
		if err := h.x.check(payload, err); err != nil {
			return nil, err
		}
	}
	items := make([]engine.Item, len(recs))
	for i := range recs {
		if src := recs[i].EventSource; src != sourceDynamoDB && src != "" {
			return nil, h.x.mismatch(src)
		}
		items[i] = engine.Item{ID: recs[i].Change.SequenceNumber, Key: keyString(recs[i].Change.Keys), Arrival: recs[i].Change.ApproximateCreationDateTime.Time}
	}
	policy, workers := engine.Stream, 1
	if h.cfg.keyConcurrency > 0 {
		policy, workers = engine.StreamPerKey, h.cfg.keyConcurrency
	}
	decode := func(i int) (DynamoDBRecord[T], error) {
		if decErrs != nil && decErrs[i] != nil {
			return DynamoDBRecord[T]{}, &batch.DecodeError{ID: items[i].ID, Err: decErrs[i]}
		}
		r, err := decodeDynamoDBRecord[T](&recs[i])
		if err != nil {
			return r, &batch.DecodeError{ID: items[i].ID, Err: err}
		}
		return r, nil
	}
	ctx, ecfg := h.chain.begin(ctx, h.cfg.engine("dynamodb", policy, workers), &hookBatch[DynamoDBRecord[T]]{
		items: items, payload: payload, record: decode,
		describe: func(i int, e *dlq.Envelope) {
			r := &recs[i]
			e.Source, e.SourceARN, e.EventID = dlq.SourceDynamoDB, r.EventSourceArn, r.EventID
			e.SequenceNumber = r.Change.SequenceNumber
			if len(r.Change.Keys) > 0 {
				if k, err := json.Marshal(r.Change.Keys); err == nil {
					e.PartitionKey = string(k)
				}
			}
			if t := r.Change.ApproximateCreationDateTime.Time; !t.IsZero() {
				e.ArrivalTime = t.UTC()
			}
		},
	})
	res := engine.Run(ctx, items, ecfg, func(ctx context.Context, w, i int) error {
		return h.chain.run(ctx, i, func(ctx context.Context) error {
			r, err := decode(i)
			if err != nil {
				return err
			}
			return h.chain.Handle(ctx, r)
		})
	})
	report, err := h.cfg.outcome(ctx, "dynamodb", dynamoDBTableOf(recs), items, res)
	if err != nil {
		return nil, err
	}
	return appendStringFailures(make([]byte, 0, 32+len(report)*64), report, func(i int) string { return items[i].ID }), nil
}

// errMissingImage is the cause of a decode error for a record that lacks an
// image its stream view type and event name promise.
var errMissingImage = errors.New("missing image")

func decodeDynamoDBRecord[T any](raw *events.DynamoDBEventRecord) (DynamoDBRecord[T], error) {
	r := DynamoDBRecord[T]{Raw: *raw}
	view, name := raw.Change.StreamViewType, raw.EventName
	wantNew := (view == "NEW_IMAGE" || view == "NEW_AND_OLD_IMAGES") && (name == "INSERT" || name == "MODIFY")
	wantOld := (view == "OLD_IMAGE" || view == "NEW_AND_OLD_IMAGES") && (name == "MODIFY" || name == "REMOVE")
	if wantNew && raw.Change.NewImage == nil {
		return r, fmt.Errorf("%w: a %s record of a %s stream has no NewImage", errMissingImage, name, view)
	}
	if wantOld && raw.Change.OldImage == nil {
		return r, fmt.Errorf("%w: a %s record of a %s stream has no OldImage", errMissingImage, name, view)
	}
	if raw.Change.NewImage != nil {
		r.New = new(T)
		if err := sevents.UnmarshalImage(raw.Change.NewImage, r.New); err != nil {
			return r, fmt.Errorf("NewImage: %w", err)
		}
	}
	if raw.Change.OldImage != nil {
		r.Old = new(T)
		if err := sevents.UnmarshalImage(raw.Change.OldImage, r.Old); err != nil {
			return r, fmt.Errorf("OldImage: %w", err)
		}
	}
	return r, nil
}

// keyString renders an item's key attributes as a stable string, the
// ordering key of the record.
func keyString(keys map[string]events.DynamoDBAttributeValue) string {
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		v := keys[k]
		b.WriteString(k)
		b.WriteByte('=')
		switch v.DataType() {
		case events.DataTypeString:
			b.WriteString(v.String())
		case events.DataTypeNumber:
			b.WriteString(v.Number())
		case events.DataTypeBinary:
			fmt.Fprintf(&b, "%x", v.Binary())
		}
	}
	return b.String()
}
