package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/batchresponse"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/eventscan"
)

// DynamoDBRecord is one DynamoDB Streams record: the item images decoded into
// T (with `dynamodbav` struct tags, as aws-sdk-go-v2's attributevalue package
// decodes a table item) and the record exactly as Lambda delivered it.
//
// New is the item after the change (INSERT, MODIFY) and Old the item before it
// (MODIFY, REMOVE), each nil when the stream view type does not carry it.
//
// Raw is the record as delivered except for its images: Raw.Change.Keys,
// NewImage and OldImage are usually nil, because decoding them into maps
// costs a dozen allocations per image that most functions never use. Read
// them with Keys, NewImage and OldImage, which decode them on demand from
// the record's JSON, or build the handler with WithRawImages to have Raw's
// maps filled (at about ten times the decoding cost).
type DynamoDBRecord[T any] struct {
	New *T
	Old *T
	Raw events.DynamoDBEventRecord
	// the images as JSON, when Raw's maps are not filled
	keys, newImg, oldImg []byte
}

// EventName is INSERT, MODIFY or REMOVE.
func (r DynamoDBRecord[T]) EventName() string { return r.Raw.EventName }

// SequenceNumber is the stream record's sequence number, its batch item
// identifier.
func (r DynamoDBRecord[T]) SequenceNumber() string { return r.Raw.Change.SequenceNumber }

// RecordID is the record's id, as dead-letter envelopes, RecordOutcome
// and the local runner name it: the sequence number.
func (r DynamoDBRecord[T]) RecordID() string { return r.Raw.Change.SequenceNumber }

// Keys is the item's primary key attributes, decoded on each call.
func (r DynamoDBRecord[T]) Keys() map[string]events.DynamoDBAttributeValue {
	return imageOr(r.Raw.Change.Keys, r.keys)
}

// NewImage is the item after the change as attribute values (nil when the
// record has none), decoded on each call.
func (r DynamoDBRecord[T]) NewImage() map[string]events.DynamoDBAttributeValue {
	return imageOr(r.Raw.Change.NewImage, r.newImg)
}

// OldImage is the item before the change as attribute values (nil when the
// record has none), decoded on each call.
func (r DynamoDBRecord[T]) OldImage() map[string]events.DynamoDBAttributeValue {
	return imageOr(r.Raw.Change.OldImage, r.oldImg)
}

// imageOr returns m, or else the map the JSON img decodes to, which the
// decoder has validated.
func imageOr(m map[string]events.DynamoDBAttributeValue, img []byte) map[string]events.DynamoDBAttributeValue {
	if m == nil && img != nil {
		m, _ = eventscan.ImageMap(img)
	}
	return m
}

// UnmarshalKeys decodes the item's primary key into out.
func (r DynamoDBRecord[T]) UnmarshalKeys(out any) error {
	return sevents.UnmarshalImage(r.Keys(), out)
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
	handler[DynamoDBRecord[T]]
}

// NewDynamoDB returns a DynamoDB Streams handler that calls fn for each record.
func NewDynamoDB[T any](fn func(context.Context, DynamoDBRecord[T]) error, opts ...Option) (*DynamoDBHandler[T], error) {
	h, err := newHandler(source[DynamoDBRecord[T]]{kindStream, sevents.SourceDynamoDB, "handlers.NewDynamoDB", "Records",
		[]string{sourceDynamoDB}, DynamoDBRecord[T].idempotencyKey}, fn, opts)
	if err != nil {
		return nil, err
	}
	return &DynamoDBHandler[T]{h}, nil
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
	ev, err := decodeDynamoDBEvent(payload, h.cfg.rawImages)
	if err != nil || ev.recs == nil {
		if err := h.x.check(payload, err); err != nil {
			return nil, err
		}
	}
	recs, imgs := ev.recs, ev.imgs
	items := engineItems.Make(len(recs))
	var nNew, nOld int
	if len(recs) > 0 && recs[0].EventSource == "" {
		if err := h.x.foreign(payload); err != nil {
			return nil, err // a Firehose event decodes as records without ids
		}
	}
	for i := range recs {
		if src := recs[i].EventSource; src != sourceDynamoDB && src != "" {
			return nil, h.x.mismatch(src)
		}
		items[i] = engine.Item{ID: recs[i].Change.SequenceNumber, Arrival: recs[i].Change.ApproximateCreationDateTime.Time}
		if imgs != nil {
			items[i].Key = imgs[i].Key
			if imgs[i].New != nil {
				nNew++
			}
			if imgs[i].Old != nil {
				nOld++
			}
		} else {
			items[i].Key = eventscan.DynamoDBKey(recs[i].Change.Keys)
		}
	}
	// The images of a batch decode into two arrays of T rather than one
	// allocation per image.
	var news, olds []T
	if nNew > 0 {
		news = make([]T, len(recs))
	}
	if nOld > 0 {
		olds = make([]T, len(recs))
	}
	policy, workers := engine.Stream, 1
	if h.cfg.keyConcurrency > 0 {
		policy, workers = engine.StreamPerKey, h.cfg.keyConcurrency
	}
	b := &ddbBatch[T]{ev: ev, items: items, news: news, olds: olds}
	report, err := runBatch(ctx, &h.handler, b, payload, items,
		batchRun{source: sevents.SourceDynamoDB, policy: policy, workers: workers, resource: eventscan.DynamoDBTable(recs)})
	if err != nil {
		return nil, err
	}
	out := batchresponse.AppendStringFailures(make([]byte, 0, 32+len(report)*64), report, func(i int) string { return items[i].ID })
	engineItems.Put(items)
	return out, nil
}

// ddbBatch is a DynamoDB Streams invocation's batch (batchOf).
type ddbBatch[T any] struct {
	ev    ddbEvent
	items []engine.Item
	// the images of a batch decode into these, one T per record, rather
	// than one allocation per image (nil: no such image)
	news, olds []T
}

func (b *ddbBatch[T]) record(i int) (DynamoDBRecord[T], error) {
	ev := &b.ev
	if ev.errs != nil && ev.errs[i] != nil {
		return DynamoDBRecord[T]{}, &batch.DecodeError{ID: b.items[i].ID, Err: ev.errs[i]}
	}
	var r DynamoDBRecord[T]
	var err error
	if ev.imgs != nil {
		r, err = decodeDynamoDBImages(&ev.recs[i], &ev.imgs[i], b.news, b.olds, i)
	} else {
		r, err = decodeDynamoDBRecord[T](&ev.recs[i])
	}
	if err != nil {
		return r, &batch.DecodeError{ID: b.items[i].ID, Err: err}
	}
	return r, nil
}

func (b *ddbBatch[T]) shell(i int) DynamoDBRecord[T] { return DynamoDBRecord[T]{Raw: b.ev.recs[i]} }

func (b *ddbBatch[T]) handle(ctx context.Context, _, i int, next batch.Handler[DynamoDBRecord[T]]) error {
	r, err := b.record(i)
	if err != nil {
		return err
	}
	return next.Handle(ctx, r)
}

func (b *ddbBatch[T]) describe(i int, e *dlq.Envelope) {
	r := &b.ev.recs[i]
	e.Source, e.SourceARN, e.EventID = sevents.SourceDynamoDB, r.EventSourceArn, r.EventID
	e.SequenceNumber = r.Change.SequenceNumber
	if len(r.Change.Keys) > 0 {
		if k, err := json.Marshal(r.Change.Keys); err == nil {
			e.PartitionKey = string(k)
		}
	} else if imgs := b.ev.imgs; imgs != nil && imgs[i].Keys != nil {
		var k bytes.Buffer
		if json.Compact(&k, imgs[i].Keys) == nil {
			e.PartitionKey = k.String()
		}
	}
	if t := r.Change.ApproximateCreationDateTime.Time; !t.IsZero() {
		e.ArrivalTime = t.UTC()
	}
}

// ddbEvent is a decoded DynamoDB Streams event. Unless the handler wants
// Raw's maps (WithRawImages), the records' image maps are left nil and
// imgs holds their JSON (eventscan.DynamoDBEvent).
type ddbEvent struct {
	recs []events.DynamoDBEventRecord
	errs []error            // the malformed records
	imgs []eventscan.Images // the images as JSON, one per record; nil with Raw's maps filled
}

// decodeDynamoDBEvent decodes a DynamoDB Streams event
// (eventscan.DecodeDynamoDB).
func decodeDynamoDBEvent(payload []byte, rawImages bool) (ddbEvent, error) {
	ev, errs, err := eventscan.DecodeDynamoDB(payload, rawImages)
	d := ddbEvent{recs: ev.Records, errs: errs, imgs: ev.Images}
	if rawImages {
		d.imgs = nil // the maps are there: decode from them
	}
	return d, err
}

// decodeImage decodes an image's JSON into out (eventscan.DecodeImage:
// aws-lambda-go's attribute values, then events.UnmarshalImage).
func decodeImage[T any](img []byte, out *T) error {
	return eventscan.DecodeImage(img, out)
}

func imageMap(img []byte) (map[string]events.DynamoDBAttributeValue, error) {
	return eventscan.ImageMap(img)
}

// decodeDynamoDBImages builds a record whose images are JSON, decoded into
// news[i] and olds[i].
func decodeDynamoDBImages[T any](raw *events.DynamoDBEventRecord, im *eventscan.Images, news, olds []T, i int) (DynamoDBRecord[T], error) {
	r := DynamoDBRecord[T]{Raw: *raw, keys: im.Keys, newImg: im.New, oldImg: im.Old}
	if err := eventscan.MissingImage(raw, im.New != nil, im.Old != nil); err != nil {
		return r, err
	}
	if im.New != nil {
		r.New = &news[i]
		if err := decodeImage(im.New, r.New); err != nil {
			return r, fmt.Errorf("NewImage: %w", err)
		}
	}
	if im.Old != nil {
		r.Old = &olds[i]
		if err := decodeImage(im.Old, r.Old); err != nil {
			return r, fmt.Errorf("OldImage: %w", err)
		}
	}
	return r, nil
}

func decodeDynamoDBRecord[T any](raw *events.DynamoDBEventRecord) (DynamoDBRecord[T], error) {
	r := DynamoDBRecord[T]{Raw: *raw}
	if err := eventscan.MissingImage(raw, raw.Change.NewImage != nil, raw.Change.OldImage != nil); err != nil {
		return r, err
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
