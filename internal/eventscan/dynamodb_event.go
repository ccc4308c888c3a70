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
