package eventscan

import (
	"github.com/aws/aws-lambda-go/events"
	"sync"

	"github.com/sluicehq/sluice/internal/jsonread"
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

// The change, spelled once; its images are checked as JSON here, and
// decoded (DecodeImage) by the caller.
var (
	ddbChangeEnvelopeTable *jsonread.Table[DynamoDBChange]
	ddbChangeImagesTable   *jsonread.Table[DynamoDBChange]
	ddbChangeOnce          sync.Once
)

// ddbChangeTables builds the tables on first use: a function links the
// tables of the sources it reads, no others.
func ddbChangeTables() {
	ddbChangeOnce.Do(func() {
		ddbChangeEnvelopeTable = jsonread.NewTable("a DynamoDB change",
			jsonread.Str("awsRegion", func(c *DynamoDBChange) *string { return &c.AWSRegion }),
			jsonread.Str("eventID", func(c *DynamoDBChange) *string { return &c.EventID }),
			jsonread.Str("eventName", func(c *DynamoDBChange) *string { return &c.EventName }),
			jsonread.Field[DynamoDBChange]{Name: "userIdentity", Read: func(r *jsonread.Reader, c *DynamoDBChange) error {
				return readUserIdentity(r, &c.UserIdentity)
			}},
			jsonread.Str("recordFormat", func(c *DynamoDBChange) *string { return &c.RecordFormat }),
			jsonread.Str("tableName", func(c *DynamoDBChange) *string { return &c.TableName }),
			jsonread.Str("eventSource", func(c *DynamoDBChange) *string { return &c.EventSource }),
			jsonread.Field[DynamoDBChange]{Name: "dynamodb", Read: func(r *jsonread.Reader, c *DynamoDBChange) error {
				// A pointer in the wire struct: null means no change.
				if null, err := r.Null(); null || err != nil {
					if null {
						*c = DynamoDBChange{AWSRegion: c.AWSRegion, EventID: c.EventID, EventName: c.EventName, UserIdentity: c.UserIdentity,
							RecordFormat: c.RecordFormat, TableName: c.TableName, EventSource: c.EventSource}
					}
					return err
				}
				if r.Peek() == '{' {
					c.Change = true
				}
				return ddbChangeImagesTable.Read(r, c)
			}},
		)
		ddbChangeImagesTable = jsonread.NewTable("a DynamoDB change's dynamodb object",
			jsonread.Field[DynamoDBChange]{Name: "ApproximateCreationDateTime", Read: func(r *jsonread.Reader, c *DynamoDBChange) error {
				return r.Float64Into(&c.CreationTime)
			}},
			jsonread.Str("ApproximateCreationDateTimePrecision", func(c *DynamoDBChange) *string { return &c.Precision }),
			rawImageField("Keys", func(c *DynamoDBChange) *[]byte { return &c.Keys }),
			rawImageField("NewImage", func(c *DynamoDBChange) *[]byte { return &c.NewImage }),
			rawImageField("OldImage", func(c *DynamoDBChange) *[]byte { return &c.OldImage }),
			jsonread.Int64("SizeBytes", func(c *DynamoDBChange) *int64 { return &c.SizeBytes }),
		)
	})
}

func rawImageField(name string, at func(*DynamoDBChange) *[]byte) jsonread.Field[DynamoDBChange] {
	return rawField(name, func(c *DynamoDBChange) *SharedJSON { return (*SharedJSON)(at(c)) })
}

// DecodeDynamoDBChange decodes a change. Its strings share one copy of
// data; the images share data itself.
func DecodeDynamoDBChange(data []byte) (DynamoDBChange, error) {
	ddbChangeTables()
	dynamoDBTables() // the userIdentity table
	var c DynamoDBChange
	if err := envelope(ddbChangeEnvelopeTable, data, &c); err != nil {
		return DynamoDBChange{}, err
	}
	return c, nil
}
