package eventscan

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestMissingImage(t *testing.T) {
	for _, tc := range []struct {
		view, name     string
		hasNew, hasOld bool
		want           string
	}{
		{"NEW_AND_OLD_IMAGES", "MODIFY", true, true, ""},
		{"NEW_AND_OLD_IMAGES", "MODIFY", false, true, "no NewImage"},
		{"NEW_AND_OLD_IMAGES", "MODIFY", true, false, "no OldImage"},
		{"NEW_IMAGE", "REMOVE", false, false, ""},
		{"OLD_IMAGE", "INSERT", false, false, ""},
		{"OLD_IMAGE", "REMOVE", false, false, "no OldImage"},
		{"KEYS_ONLY", "MODIFY", false, false, ""},
	} {
		var r events.DynamoDBEventRecord
		r.Change.StreamViewType, r.EventName = tc.view, tc.name
		err := MissingImage(&r, tc.hasNew, tc.hasOld)
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrMissingImage) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %s new=%v old=%v: %v, want %q", tc.view, tc.name, tc.hasNew, tc.hasOld, err, tc.want)
		}
	}
}

func TestDynamoDBTable(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:dynamodb:us-east-1:123456789012:table/Orders/stream/2024-01-01T00:00:00.000": "Orders",
		"arn:aws:dynamodb:us-east-1:123456789012:table/Orders":                                "Orders",
		"not an arn": "",
	} {
		if got := DynamoDBTable([]events.DynamoDBEventRecord{{EventSourceArn: arn}}); got != want {
			t.Errorf("DynamoDBTable(%s) = %q, want %q", arn, got, want)
		}
	}
	if DynamoDBTable(nil) != "" {
		t.Error("no records, no table")
	}
}
