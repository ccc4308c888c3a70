package handlers

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// CloudWatchLogs is one message of Amazon CloudWatch Logs subscription data,
// as a subscription filter (of a log group, or an account-level
// subscription policy) writes it into a Kinesis data stream record or an
// Amazon Data Firehose record: gzip-compressed JSON holding log events of
// one log stream
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/SubscriptionFilters.html).
// Read it with a Kinesis or Firehose handler:
// handlers.KinesisRecord[handlers.CloudWatchLogs],
// handlers.FirehoseRecord[handlers.CloudWatchLogs]. Data a Firehose stream
// already decompressed (its CloudWatch Logs decompression option) is read
// too.
//
// The CONTROL_MESSAGE CloudWatch Logs sends to check that a destination is
// reachable is acknowledged without running the function, as S3's
// s3:TestEvent is (Control holds it): a Kinesis handler counts its record
// as done, a Firehose transformation answers it Dropped.
//
// The record is the unit its source knows: the function gets every log
// event of the message at once, and an error fails them all; a retry
// brings them all back, including those the function had already handled.
// Each log event is an item of its record, named ItemID(record, index)
// with the record's own identity (the Kinesis sequence number, the
// Firehose record id) and the event's index in LogEvents. The default
// idempotency key names the message's events rather than their delivery
// (see envelopeKey), so CloudWatch Logs delivering a message twice runs it
// once; make per-event work idempotent of its own (each event has an id)
// when a partial failure must not repeat the events before it.
type CloudWatchLogs struct {
	// MessageType is "DATA_MESSAGE", or "CONTROL_MESSAGE" (Control).
	MessageType string `json:"messageType"`
	// Owner is the account of the log group ("CloudwatchLogs" in a
	// control message).
	Owner     string `json:"owner"`
	LogGroup  string `json:"logGroup"`
	LogStream string `json:"logStream"`
	// SubscriptionFilters names the filters that matched the events.
	SubscriptionFilters []string `json:"subscriptionFilters"`
	// PolicyLevel is "ACCOUNT_LEVEL_POLICY" when an account-level
	// subscription policy sent the data, "" otherwise.
	PolicyLevel string `json:"policyLevel"`
	// LogEvents are the log events, in the log stream's order.
	LogEvents []events.CloudwatchLogsLogEvent `json:"logEvents"`
}

// Control reports whether the message is the CONTROL_MESSAGE CloudWatch
// Logs sends to check the destination, which the handlers acknowledge
// without running the function.
func (l *CloudWatchLogs) Control() bool { return l.MessageType == "CONTROL_MESSAGE" }

// MaxCloudWatchLogsBytes bounds CloudWatch Logs data once decompressed: a
// message CloudWatch Logs writes is a few MB at most (one log stream's
// events, compressed into a record of at most 1 MiB), so a record that
// inflates past this is not one, and fails permanently rather than fill
// the function's memory.
const MaxCloudWatchLogsBytes = 64 << 20

// gzipReaders keeps the readers of decompressed records for the next: a
// new reader allocates its window and tables.
var gzipReaders sync.Pool

func (l *CloudWatchLogs) decodeEnvelope(_ Codec, data []byte) error {
	const what = "not CloudWatch Logs subscription data (gzip-compressed JSON with messageType and logEvents)"
	body := data
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		b, err := gunzip(data, MaxCloudWatchLogsBytes)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		body = b
	}
	if err := json.Unmarshal(body, l); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch l.MessageType {
	case "CONTROL_MESSAGE":
	case "DATA_MESSAGE":
		if len(l.LogEvents) == 0 {
			return fmt.Errorf("CloudWatch Logs data of %s/%s has no logEvents", l.LogGroup, l.LogStream)
		}
	default:
		return fmt.Errorf("%s: messageType %q, want DATA_MESSAGE or CONTROL_MESSAGE", what, l.MessageType)
	}
	return nil
}

// gunzip decompresses gzip data of at most limit bytes decompressed.
func gunzip(data []byte, limit int64) ([]byte, error) {
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(data))
	} else {
		err = zr.Reset(bytes.NewReader(data))
	}
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	defer gzipReaders.Put(zr)
	var out bytes.Buffer
	out.Grow(min(len(data)*4, int(limit)))
	n, err := io.Copy(&out, io.LimitReader(zr, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("gzip: %w", err)
	case n > limit:
		return nil, errors.New("gzip: the data inflates past " + strconv.FormatInt(limit, 10) + " bytes")
	}
	return out.Bytes(), nil
}

// envelopeKey names the message's events: the owner, log group, log
// stream and subscription filters, the first and last events' ids and how
// many there are (CloudWatch Logs gives every event an id of its own);
// "" for a control message.
func (l *CloudWatchLogs) envelopeKey() string {
	n := len(l.LogEvents)
	if n == 0 || l.Control() {
		return ""
	}
	// A log stream's name may hold any character but ':' and '*'; a log
	// group's, an owner's and an event id's hold no ':'.
	return l.Owner + ":" + l.LogGroup + ":" + l.LogStream + ":" + strings.Join(l.SubscriptionFilters, ",") + ":" +
		l.LogEvents[0].ID + ":" + l.LogEvents[n-1].ID + ":" + strconv.Itoa(n)
}

func (l *CloudWatchLogs) skipReason() string {
	if l.Control() {
		return SkipControlMessage
	}
	return ""
}

// ItemID names item index of a record that carries several (the log
// events of a CloudWatchLogs message, the S3 records of an S3Notification):
// the record's identity (its batch item identifier, or
// "<sequenceNumber>:<subSequenceNumber>" for a KPL user record), "#" and
// the item's index from 0. It is the name a function gives the effects it
// writes per item, so they can be told apart and traced to their record.
func ItemID(record string, index int) string { return record + "#" + strconv.Itoa(index) }
