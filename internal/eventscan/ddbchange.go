package eventscan

import (
	"strconv"
	"sync"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// DynamoDBChange is one item change as Kinesis Data Streams for DynamoDB
// writes it into a Kinesis record's data. Keys, NewImage and OldImage are
// the images' JSON (nil when absent or null); Change reports the
// "dynamodb" object.
type DynamoDBChange struct {
	AWSRegion    string
	EventID      string
	EventName    string
	UserIdentity *events.DynamoDBUserIdentity
	RecordFormat string
	TableName    string
	EventSource  string
	Change       bool
	// ApproximateCreationDateTime as written, in Precision's unit.
	CreationTime             float64
	Precision                string
	SizeBytes                int64
	Keys, NewImage, OldImage []byte
}

type ddbChangeWire struct {
	AWSRegion    string                       `json:"awsRegion"`
	EventID      string                       `json:"eventID"`
	EventName    string                       `json:"eventName"`
	UserIdentity *events.DynamoDBUserIdentity `json:"userIdentity"`
	RecordFormat string                       `json:"recordFormat"`
	TableName    string                       `json:"tableName"`
	EventSource  string                       `json:"eventSource"`
	DynamoDB     *struct {
		ApproximateCreationDateTime          float64    `json:"ApproximateCreationDateTime"`
		ApproximateCreationDateTimePrecision string     `json:"ApproximateCreationDateTimePrecision"`
		Keys                                 SharedJSON `json:"Keys"`
		NewImage                             SharedJSON `json:"NewImage"`
		OldImage                             SharedJSON `json:"OldImage"`
		SizeBytes                            int64      `json:"SizeBytes"`
	} `json:"dynamodb"`
}

var ddbChangePlan = sync.OnceValue(jsonplan.New[ddbChangeWire])

// rawImage is an image's JSON, nil when absent or null.
func rawImage(m SharedJSON) []byte {
	if m == nil || string(m) == "null" {
		return nil
	}
	return m
}

// DecodeDynamoDBChange decodes a change by the plan decoder (then
// encoding/json, whose error it returns): the general decoder, for what
// ReadDynamoDBChange does not take. The images are checked as JSON only.
func DecodeDynamoDBChange(data []byte) (DynamoDBChange, error) {
	var w ddbChangeWire
	if err := ddbChangePlan().Unmarshal(data, &w, true); err != nil {
		return DynamoDBChange{}, err
	}
	c := DynamoDBChange{AWSRegion: w.AWSRegion, EventID: w.EventID, EventName: w.EventName, UserIdentity: w.UserIdentity,
		RecordFormat: w.RecordFormat, TableName: w.TableName, EventSource: w.EventSource}
	if x := w.DynamoDB; x != nil {
		c.Change = true
		c.CreationTime, c.Precision, c.SizeBytes = x.ApproximateCreationDateTime, x.ApproximateCreationDateTimePrecision, x.SizeBytes
		c.Keys, c.NewImage, c.OldImage = rawImage(x.Keys), rawImage(x.NewImage), rawImage(x.OldImage)
	}
	return c, nil
}

// ReadDynamoDBChange reads a change in one pass: the keys Kinesis Data
// Streams for DynamoDB writes, each once, strings without escapes shared
// with data. With a plan, each image is decoded by it into *newImg or
// *oldImg (which must be zero) as it is read, so an image is read once;
// without one, images are checked as JSON (the caller decodes them). ok is
// false for anything else, an image the plan does not decode included
// (*newImg and *oldImg are then left partly written), which the caller
// leaves to DecodeDynamoDBChange.
func ReadDynamoDBChange[T any](data []byte, p *ImagePlan, newImg, oldImg *T) (c DynamoDBChange, ok bool) {
	s := &scanner{b: data, own: true}
	if !s.tok('{') {
		return DynamoDBChange{}, false
	}
	if !s.tok('}') {
		var seen uint8
		for {
			key, ok := s.plainString()
			if !ok || !s.tok(':') {
				return DynamoDBChange{}, false
			}
			var bit uint8
			var dst *string
			switch string(key) {
			case "awsRegion":
				bit, dst = 1<<0, &c.AWSRegion
			case "eventID":
				bit, dst = 1<<1, &c.EventID
			case "eventName":
				bit, dst = 1<<2, &c.EventName
			case "recordFormat":
				bit, dst = 1<<3, &c.RecordFormat
			case "tableName":
				bit, dst = 1<<4, &c.TableName
			case "eventSource":
				bit, dst = 1<<5, &c.EventSource
			case "userIdentity":
				bit = 1 << 6
			case "dynamodb":
				bit = 1 << 7
			default:
				return DynamoDBChange{}, false
			}
			if seen&bit != 0 {
				return DynamoDBChange{}, false
			}
			seen |= bit
			switch bit {
			case 1 << 6:
				var r events.DynamoDBEventRecord
				if !s.ddbUserIdentity(nil, &r) {
					return DynamoDBChange{}, false
				}
				c.UserIdentity = r.UserIdentity
			case 1 << 7:
				if !s.ddbChangeImages(&c, p, unsafe.Pointer(newImg), unsafe.Pointer(oldImg)) {
					return DynamoDBChange{}, false
				}
			default:
				v, _, ok := s.sharedText()
				if !ok {
					return DynamoDBChange{}, false
				}
				*dst = v
			}
			if s.tok('}') {
				break
			}
			if !s.tok(',') {
				return DynamoDBChange{}, false
			}
		}
	}
	s.ws()
	return c, s.i == len(s.b)
}

// ddbChangeImages reads the "dynamodb" object (null is left to the general
// decoder).
func (s *scanner) ddbChangeImages(c *DynamoDBChange, p *ImagePlan, newImg, oldImg unsafe.Pointer) bool {
	if !s.tok('{') {
		return false
	}
	c.Change = true
	if s.tok('}') {
		return true
	}
	var seen uint8
	for {
		key, ok := s.plainString()
		if !ok || !s.tok(':') {
			return false
		}
		var bit uint8
		var img *[]byte
		var out unsafe.Pointer
		switch string(key) {
		case "ApproximateCreationDateTime":
			bit = 1 << 0
		case "ApproximateCreationDateTimePrecision":
			bit = 1 << 1
		case "Keys":
			bit, img = 1<<2, &c.Keys
		case "NewImage":
			bit, img, out = 1<<3, &c.NewImage, newImg
		case "OldImage":
			bit, img, out = 1<<4, &c.OldImage, oldImg
		case "SizeBytes":
			bit = 1 << 5
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch {
		case img != nil:
			if s.null() {
				*img = nil
				break
			}
			s.ws()
			start := s.i
			if out != nil && p != nil {
				if !p.decodeAt(s, out) {
					return false
				}
			} else if !s.skipJSON(0) {
				return false
			}
			*img = s.b[start:s.i:s.i]
		case bit == 1<<1:
			v, _, ok := s.sharedText()
			if !ok {
				return false
			}
			c.Precision = v
		case bit == 1<<0:
			if s.null() {
				break
			}
			num, ok := s.number()
			if !ok {
				return false
			}
			f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(num), len(num)), 64)
			if err != nil {
				return false
			}
			c.CreationTime = f
		default:
			if s.null() {
				break
			}
			n, ok := s.int64()
			if !ok {
				return false
			}
			c.SizeBytes = n
		}
		if s.tok('}') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}
