package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/eventscan"
)

// Envelopes are value types that unwrap the payload another AWS service
// put around the user's own: SNSMessage (an SNS notification delivered to
// SQS, or to Kinesis or Kafka, with raw message delivery off),
// EventBridgeEvent (an EventBridge event sent to an SQS queue, a Kinesis
// stream or another target; S3EventBridgeDetail types the detail of S3's),
// S3Notification (S3 event notifications), DynamoDBChange (a change
// Kinesis Data Streams for DynamoDB writes) and CloudWatchLogs (CloudWatch
// Logs subscription data in a Kinesis or Firehose record). They are chosen
// by the handler's value type, e.g.
// handlers.SQSRecord[handlers.SNSMessage[Order]], and decode themselves;
// the payload inside goes through the handler's codec, so it can be a
// struct, a string, []byte, or another envelope (an S3 notification sent
// through SNS is an SNSMessage[S3Notification]).
//
// Each envelope gives the record a default idempotency key that names the
// thing it carries rather than its delivery (WithIdempotency): the SNS
// MessageId, the EventBridge id (and a replay's name), the S3 records'
// bucket, key and sequencer, the DynamoDB change's eventID, the CloudWatch
// Logs message's log stream and event ids. A record whose envelope key is
// empty falls back to the source's own id.

// payloadEnvelope is implemented by the envelopes' pointers: decodeValue
// hands them the payload, and the codec for what they carry.
type payloadEnvelope interface {
	decodeEnvelope(c Codec, data []byte) error
}

// envelopeKeyer gives an envelope's default idempotency key.
type envelopeKeyer interface {
	envelopeKey() string
}

// payloadSkipper tells of a payload that is acknowledged without running
// the function (the s3:TestEvent message, a CloudWatch Logs
// CONTROL_MESSAGE), and why: skipReason is a Skip reason
// (SkipS3TestEvent, SkipControlMessage), or "" for a payload the function
// runs.
type payloadSkipper interface {
	skipReason() string
}

// skipValue is why the decoded value v is one the handler acknowledges
// without running the function, or "".
func skipValue[T any](v *T) string {
	if s, ok := any(v).(payloadSkipper); ok {
		return s.skipReason()
	}
	return ""
}

// skippable reports whether values of type T can be skipped.
func skippable[T any]() bool {
	_, ok := any((*T)(nil)).(payloadSkipper)
	return ok
}

// envelopeKeyFor returns the default idempotency key of a handler whose
// record type R carries an envelope: the envelope's key, else fallback's.
// ok is false when R's value is not an envelope.
func envelopeKeyFor[R any](fallback func(R) string) (key func(R) string, ok bool) {
	var r R
	e, ok := any(r).(interface{ envelopeKeyFunc() func(R) string })
	if !ok {
		return nil, false
	}
	f := e.envelopeKeyFunc()
	if f == nil {
		return nil, false
	}
	return func(r R) string {
		if k := f(r); k != "" {
			return k
		}
		return fallback(r)
	}, true
}

func valueKeyFunc[T, R any](value func(*R) *T) func(R) string {
	if _, ok := any((*T)(nil)).(envelopeKeyer); !ok {
		return nil
	}
	return func(r R) string { return any(value(&r)).(envelopeKeyer).envelopeKey() }
}

func (SQSRecord[T]) envelopeKeyFunc() func(SQSRecord[T]) string {
	return valueKeyFunc(func(r *SQSRecord[T]) *T { return &r.Value })
}

func (KinesisRecord[T]) envelopeKeyFunc() func(KinesisRecord[T]) string {
	return valueKeyFunc(func(r *KinesisRecord[T]) *T { return &r.Value })
}

func (KafkaRecord[T]) envelopeKeyFunc() func(KafkaRecord[T]) string {
	return valueKeyFunc(func(r *KafkaRecord[T]) *T { return &r.Value })
}

// SNSMessage is an Amazon SNS notification as SNS delivers it to an SQS
// queue (or another target) with raw message delivery off: a JSON document
// whose Message holds the published payload, decoded into Message with the
// handler's codec. (With raw message delivery on, the body is the payload
// itself: use the payload's type directly.)
type SNSMessage[T any] struct {
	// Message is the published message, decoded.
	Message T
	// Text is the message as published, before decoding.
	Text string
	// Type is "Notification".
	Type string
	// MessageID is SNS's id of the published message, the default
	// idempotency key: a message SNS delivers twice, or to two queues that
	// one function reads, has one id.
	MessageID string
	TopicArn  string
	// Subject is the publisher's subject line ("" when none was given).
	Subject string
	// Timestamp is when SNS received the message.
	Timestamp        time.Time
	SignatureVersion string
	Signature        string
	SigningCertURL   string
	UnsubscribeURL   string
	attrs            []byte // MessageAttributes as JSON
}

// MessageAttributes is the message's attributes, decoded on each call
// (nil when it has none, or when they are not {"name":{"Type","Value"}}):
// most functions never read them, and a map costs allocations per
// message.
func (m SNSMessage[T]) MessageAttributes() map[string]SNSMessageAttribute {
	if m.attrs == nil {
		return nil
	}
	var a map[string]SNSMessageAttribute
	_ = json.Unmarshal(m.attrs, &a) // validated when the message was decoded
	return a
}

// SNSMessageAttribute is a message attribute as SNS writes it into the
// notification: Type is String, String.Array, Number or Binary (Value is
// then base64).
type SNSMessageAttribute struct {
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

func (m *SNSMessage[T]) decodeEnvelope(c Codec, data []byte) error {
	w, err := eventscan.DecodeSNS(data)
	if err != nil {
		return fmt.Errorf("not an SNS notification (SNSMessage: raw message delivery must be off; with it on, decode the payload's own type): %w", err)
	}
	if w.Type != "Notification" {
		return fmt.Errorf("not an SNS notification: Type %q, not \"Notification\" (SNSMessage: raw message delivery must be off; with it on, decode the payload's own type)", w.Type)
	}
	m.Type, m.MessageID, m.TopicArn, m.Subject, m.Text = w.Type, w.MessageID, w.TopicArn, w.Subject, w.Message
	m.SignatureVersion, m.Signature, m.SigningCertURL, m.UnsubscribeURL = w.SignatureVersion, w.Signature, w.SigningCertURL, w.UnsubscribeURL
	m.attrs = w.MessageAttributes // decoded when asked (MessageAttributes)
	if w.Timestamp != "" {
		t, ok := eventscan.ParseTime(w.Timestamp)
		if !ok {
			if t, err = time.Parse(time.RFC3339Nano, w.Timestamp); err != nil {
				return fmt.Errorf("SNS message %s: Timestamp: %w", w.MessageID, err)
			}
		}
		m.Timestamp = t
	}
	if err := decodeStringValue(c, m.Text, &m.Message); err != nil {
		return fmt.Errorf("SNS message %s: Message: %w", w.MessageID, err)
	}
	return nil
}

func (m *SNSMessage[T]) envelopeKey() string { return m.MessageID }

// skipReason passes on the skip of what the notification carries (an
// s3:TestEvent published through SNS).
func (m *SNSMessage[T]) skipReason() string { return skipValue(&m.Message) }

// EventBridgeEvent is an Amazon EventBridge event as EventBridge delivers
// it to a target (an SQS queue, a Kinesis stream): detail decoded into
// Detail with the handler's codec, beside the event's metadata.
type EventBridgeEvent[T any] struct {
	// Detail is the event's detail, decoded.
	Detail T `json:"detail"`
	// Version is "0".
	Version string `json:"version"`
	// ID is the event's id, the default idempotency key (with ReplayName
	// for a replayed event): EventBridge delivers an event at least once,
	// always with its id.
	ID string `json:"id"`
	// DetailType is detail-type: with Source, what kind of event this is.
	DetailType string    `json:"detail-type"`
	Source     string    `json:"source"`
	Account    string    `json:"account"`
	Time       time.Time `json:"time"`
	Region     string    `json:"region"`
	Resources  []string  `json:"resources"`
	// ReplayName is the name of the EventBridge replay that sent the
	// event again from an archive ("" for an event sent live). A replay is
	// a deliberate second run, so it changes the default idempotency key.
	ReplayName string `json:"replay-name"`
}

func (e *EventBridgeEvent[T]) decodeEnvelope(c Codec, data []byte) error {
	w, err := eventscan.DecodeEventBridge(data)
	if err != nil {
		return fmt.Errorf("not an EventBridge event: %w", err)
	}
	if w.DetailType == "" || w.Source == "" {
		return fmt.Errorf("not an EventBridge event: it lacks detail-type or source (EventBridgeEvent wants the event as EventBridge delivers it, not an input transformer's output)")
	}
	if err := e.setMeta(&w); err != nil {
		return err
	}
	if err := decodeValue(c, []byte(w.Detail), &e.Detail); err != nil {
		return e.detailError(err)
	}
	return nil
}

// eventBridgeDetail is implemented by the detail types of one AWS
// service's events (S3EventBridgeDetail): source is the service's event
// source, which the event must name.
type eventBridgeDetail interface {
	eventBridgeSource() string
}

// setMeta takes the event's metadata, and refuses an event that has no
// detail (or a null one) or whose source is not the one its detail type
// belongs to.
func (e *EventBridgeEvent[T]) setMeta(w *eventscan.EventBridge) error {
	e.Version, e.ID, e.DetailType, e.Source, e.Account, e.Time, e.Region, e.Resources = w.Version, w.ID, w.DetailType, w.Source, w.Account, w.Time, w.Region, w.Resources
	e.ReplayName = w.ReplayName
	if d := bytes.TrimSpace(w.Detail); d == nil || string(d) == "null" {
		what := `"detail" is null`
		if d == nil {
			what = `it has no "detail"`
		}
		return fmt.Errorf("EventBridge event %s (%s from %s): %s: EventBridge always sends an event's detail (an object, {} when empty), "+
			"so this event was written by hand or reshaped on the way (an input transformer): send the event whole", e.ID, e.DetailType, e.Source, what)
	}
	if d, ok := any(&e.Detail).(eventBridgeDetail); ok && e.Source != d.eventBridgeSource() {
		return fmt.Errorf("EventBridge event %s (%s): source is %q, not %q: %T reads only that service's events", e.ID, e.DetailType, e.Source, d.eventBridgeSource(), e.Detail)
	}
	return nil
}

func (e *EventBridgeEvent[T]) detailError(err error) error {
	return fmt.Errorf("EventBridge event %s (%s from %s): detail: %w", e.ID, e.DetailType, e.Source, err)
}

// envelopeKey is the event's id, and for a replayed event the id and the
// replay's name: a replay is sent to run the events again (after a fix, or
// for a new function), and EventBridge does not document whether a
// replayed event keeps its id, so a replay is kept apart from the live
// event and from other replays, and its own redeliveries still run once.
func (e *EventBridgeEvent[T]) envelopeKey() string {
	if e.ReplayName != "" {
		return e.ID + "/replay/" + e.ReplayName
	}
	return e.ID
}

// S3Notification is an Amazon S3 event notification message as S3 sends it
// to an SQS queue (or an SNS topic): one or more S3 records. The records
// are aws-lambda-go's, whose S3.Object.URLDecodedKey is the object key
// URL-decoded (+ as a space), as S3 writes it encoded.
//
// The SQS message is the unit Lambda knows: the function gets all its S3
// records at once, and an error fails the message, which then comes back
// whole with every record, including those the function had already
// handled. The default idempotency key covers all the message's records
// (bucket, key and sequencer of each), so a retry of a message is
// recognised whole; make per-object work idempotent of its own (it is
// keyed by the object's sequencer) when a message carries several.
//
// The s3:TestEvent message S3 sends when notifications are set up is
// acknowledged without running the function (Test holds it).
type S3Notification struct {
	Records []events.S3EventRecord
	// Test is the s3:TestEvent message; nil for a notification of
	// objects.
	Test *events.S3TestEvent
}

func (n *S3Notification) decodeEnvelope(_ Codec, data []byte) error {
	w, err := eventscan.DecodeS3(data)
	if err != nil {
		return fmt.Errorf("not an S3 event notification: %w", err)
	}
	if w.Event == "s3:TestEvent" {
		n.Test = &events.S3TestEvent{Service: w.Service, Event: w.Event, Time: w.Time, Bucket: w.Bucket, RequestID: w.RequestID, HostID: w.HostID}
		return nil
	}
	if len(w.Records) == 0 {
		return errors.New(`not an S3 event notification: no Records (and not the s3:TestEvent message)`)
	}
	for i := range w.Records {
		if w.Records[i].S3.Bucket.Name == "" {
			return fmt.Errorf("S3 notification record %d has no bucket name", i)
		}
	}
	n.Records = w.Records
	return nil
}

// envelopeKey is bucket/key@sequencer of each record, space-separated.
func (n *S3Notification) envelopeKey() string {
	var b strings.Builder
	for i := range n.Records {
		o := &n.Records[i].S3
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(o.Bucket.Name)
		b.WriteByte('/')
		b.WriteString(o.Object.Key)
		b.WriteByte('@')
		b.WriteString(o.Object.Sequencer)
	}
	return b.String()
}

func (n *S3Notification) skipReason() string {
	if n.Test != nil {
		return SkipS3TestEvent
	}
	return ""
}

// DynamoDBChange is one item change as Kinesis Data Streams for DynamoDB
// writes it into a Kinesis record's data: the item images in DynamoDB JSON
// decoded into T as the DynamoDB Streams handler decodes them (New after
// the change, Old before it, each nil when absent), with the change's
// metadata. Read it with a Kinesis handler:
// handlers.KinesisRecord[handlers.DynamoDBChange[Item]].
//
// Kinesis Data Streams for DynamoDB may write a change more than once and
// out of order across items; the default idempotency key is the change's
// eventID, and CreationTime orders the changes of one item.
type DynamoDBChange[T any] struct {
	New *T
	Old *T
	// EventID identifies the change, the default idempotency key.
	EventID string
	// EventName is INSERT, MODIFY or REMOVE.
	EventName   string
	EventSource string
	AWSRegion   string
	TableName   string
	// RecordFormat is "application/json".
	RecordFormat string
	// UserIdentity is set on deletions by DynamoDB's time to live (Expired).
	UserIdentity *events.DynamoDBUserIdentity
	// CreationTime is ApproximateCreationDateTime, in the precision the
	// table's Kinesis destination has (milliseconds or microseconds).
	CreationTime time.Time
	SizeBytes    int64
	// the images as JSON
	keys, newImg, oldImg []byte
}

// Keys is the item's primary key attributes, decoded on each call.
func (d DynamoDBChange[T]) Keys() map[string]events.DynamoDBAttributeValue {
	m, _ := imageMap(d.keys)
	return m
}

// NewImage is the item after the change as attribute values (nil when the
// change has none), decoded on each call.
func (d DynamoDBChange[T]) NewImage() map[string]events.DynamoDBAttributeValue {
	m, _ := imageMap(d.newImg)
	return m
}

// OldImage is the item before the change as attribute values (nil when the
// change has none), decoded on each call.
func (d DynamoDBChange[T]) OldImage() map[string]events.DynamoDBAttributeValue {
	m, _ := imageMap(d.oldImg)
	return m
}

// Expired reports whether the change is a deletion made by DynamoDB's time
// to live process.
func (d DynamoDBChange[T]) Expired() bool {
	u := d.UserIdentity
	return u != nil && u.Type == "Service" && u.PrincipalID == "dynamodb.amazonaws.com"
}

func (d *DynamoDBChange[T]) decodeEnvelope(_ Codec, data []byte) error {
	w, err := eventscan.DecodeDynamoDBChange(data)
	if err != nil {
		return fmt.Errorf("not a DynamoDB change (Kinesis Data Streams for DynamoDB): %w", err)
	}
	if !w.Change || w.EventSource != sourceDynamoDB {
		return fmt.Errorf(`not a DynamoDB change (Kinesis Data Streams for DynamoDB): want "eventSource":"aws:dynamodb" and a "dynamodb" object`)
	}
	d.EventID, d.EventName, d.EventSource, d.AWSRegion, d.TableName, d.RecordFormat, d.UserIdentity =
		w.EventID, w.EventName, w.EventSource, w.AWSRegion, w.TableName, w.RecordFormat, w.UserIdentity
	d.SizeBytes = w.SizeBytes
	if t := w.CreationTime; t != 0 {
		if w.Precision == "MICROSECOND" {
			d.CreationTime = time.UnixMicro(int64(t))
		} else {
			d.CreationTime = time.UnixMilli(int64(t))
		}
	}
	d.keys, d.newImg, d.oldImg = w.Keys, w.NewImage, w.OldImage
	// Both images in one allocation.
	var imgs *[2]T
	if d.newImg != nil || d.oldImg != nil {
		imgs = new([2]T)
	}
	if d.newImg != nil {
		d.New = &imgs[0]
		if err := decodeImage(d.newImg, d.New); err != nil {
			return fmt.Errorf("DynamoDB change %s: NewImage: %w", w.EventID, err)
		}
	}
	if d.oldImg != nil {
		d.Old = &imgs[1]
		if err := decodeImage(d.oldImg, d.Old); err != nil {
			return fmt.Errorf("DynamoDB change %s: OldImage: %w", w.EventID, err)
		}
	}
	return nil
}

func (d *DynamoDBChange[T]) envelopeKey() string { return d.EventID }
