package eventscan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// ErrMissingImage is the cause of a decode error for a record that lacks an
// image its stream view type and event name promise.
var ErrMissingImage = errors.New("missing image")

// DecodeDynamoDB decodes a DynamoDB Streams event: ScanDynamoDB for the
// shape Lambda sends (unless rawImages: the images are then decoded into
// the records' maps), falling back to RecordArray (the plan decoder, then
// encoding/json) for anything else, whose malformed records have an entry
// in errs. On the fast path ev.Images holds the images' JSON and the
// records' image maps are nil. The result shares no memory with payload.
func DecodeDynamoDB(payload []byte, rawImages bool) (ev DynamoDBEvent, errs []error, err error) {
	if !rawImages {
		if ev, ok := ScanDynamoDB(payload); ok {
			return ev, nil, nil
		}
	}
	// encoding/json stops a record at its first bad attribute value, often
	// before the SequenceNumber that follows the images: every record
	// passes RecordArray's check, and DynamoDBIdentifiers reads the
	// identifiers of the malformed ones leniently.
	recs, errs, err := RecordArray("dynamodb", payload, func(*events.DynamoDBEventRecord) string { return "-" })
	if err == nil && errs != nil {
		err = DynamoDBIdentifiers(payload, recs, errs)
	}
	return DynamoDBEvent{Records: recs}, errs, err
}

// MissingImage returns the error for a record that lacks an image its
// stream view type and event name promise.
func MissingImage(raw *events.DynamoDBEventRecord, hasNew, hasOld bool) error {
	view, name := raw.Change.StreamViewType, raw.EventName
	wantNew := (view == "NEW_IMAGE" || view == "NEW_AND_OLD_IMAGES") && (name == "INSERT" || name == "MODIFY")
	wantOld := (view == "OLD_IMAGE" || view == "NEW_AND_OLD_IMAGES") && (name == "MODIFY" || name == "REMOVE")
	if wantNew && !hasNew {
		return fmt.Errorf("%w: a %s record of a %s stream has no NewImage", ErrMissingImage, name, view)
	}
	if wantOld && !hasOld {
		return fmt.Errorf("%w: a %s record of a %s stream has no OldImage", ErrMissingImage, name, view)
	}
	return nil
}

// DynamoDBTable returns the table of the stream of a batch's first record
// (arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL), or "".
func DynamoDBTable(recs []events.DynamoDBEventRecord) string {
	if len(recs) == 0 {
		return ""
	}
	_, rest, ok := strings.Cut(recs[0].EventSourceArn, ":table/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}
