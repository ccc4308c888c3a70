package eventscan

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/jsonread"
)

// DynamoDBEvent is a decoded DynamoDB Streams event. Unless the images were
// asked for as maps, the records' Keys, NewImage and OldImage maps are left
// nil: Images holds each record's images as the JSON Lambda sent (checked),
// for decoding into a T (DecodeImage) and into maps only when asked
// (ImageMap). A map of attribute values costs a dozen allocations per
// image; the JSON costs none.
type DynamoDBEvent struct {
	Records []events.DynamoDBEventRecord
	Images  []Images // one per record
}

// Images is one record's images as JSON (nil when absent or null) and its
// ordering key, rendered as DynamoDBKey renders the Keys map.
type Images struct {
	Keys, New, Old []byte
	Key            string
}

// ddbRecord is the state of the record being read.
type ddbRecord struct {
	rec  *events.DynamoDBEventRecord
	im   *Images
	maps bool // fill the record's maps too
	keys []keyAttr
}

// The DynamoDB Streams record, spelled once: every member Lambda writes, by
// aws-lambda-go's names; any other is skipped.
var (
	ddbRecordTable    *jsonread.Table[ddbRecord]
	ddbChangeTable    *jsonread.Table[ddbRecord]
	userIdentityTable *jsonread.Table[events.DynamoDBUserIdentity]
	dynamoDBOnce      sync.Once
)

// dynamoDBTables builds the tables on first use: a function links the
// tables of the sources it reads, no others.
func dynamoDBTables() {
	dynamoDBOnce.Do(func() {
		ddbRecordTable = jsonread.NewTable("a DynamoDB Streams record",
			dStr("awsRegion", func(r *events.DynamoDBEventRecord) *string { return &r.AWSRegion }),
			dStr("eventID", func(r *events.DynamoDBEventRecord) *string { return &r.EventID }),
			dStr("eventName", func(r *events.DynamoDBEventRecord) *string { return &r.EventName }),
			dStr("eventSource", func(r *events.DynamoDBEventRecord) *string { return &r.EventSource }),
			dStr("eventVersion", func(r *events.DynamoDBEventRecord) *string { return &r.EventVersion }),
			dStr("eventSourceARN", func(r *events.DynamoDBEventRecord) *string { return &r.EventSourceArn }),
			jsonread.Field[ddbRecord]{Name: "dynamodb", Read: func(r *jsonread.Reader, d *ddbRecord) error {
				if null, err := r.Null(); null || err != nil {
					return err
				}
				return ddbChangeTable.Read(r, d)
			}},
			jsonread.Field[ddbRecord]{Name: "userIdentity", Read: func(r *jsonread.Reader, d *ddbRecord) error {
				return readUserIdentity(r, &d.rec.UserIdentity)
			}},
		)
		ddbChangeTable = jsonread.NewTable("a DynamoDB Streams record's dynamodb object",
			jsonread.Field[ddbRecord]{Name: "ApproximateCreationDateTime", Read: func(r *jsonread.Reader, d *ddbRecord) error {
				return readSecondsEpoch(r, &d.rec.Change.ApproximateCreationDateTime)
			}},
			jsonread.Field[ddbRecord]{Name: "Keys", Read: func(r *jsonread.Reader, d *ddbRecord) error {
				d.keys = d.keys[:0]
				return d.image(r, &d.im.Keys, &d.rec.Change.Keys, &d.keys)
			}},
			jsonread.Field[ddbRecord]{Name: "NewImage", Read: func(r *jsonread.Reader, d *ddbRecord) error {
				return d.image(r, &d.im.New, &d.rec.Change.NewImage, nil)
			}},
			jsonread.Field[ddbRecord]{Name: "OldImage", Read: func(r *jsonread.Reader, d *ddbRecord) error {
				return d.image(r, &d.im.Old, &d.rec.Change.OldImage, nil)
			}},
			jsonread.Field[ddbRecord]{Name: "SequenceNumber", Read: func(r *jsonread.Reader, d *ddbRecord) error {
				return r.StringInto(&d.rec.Change.SequenceNumber)
			}},
			jsonread.Field[ddbRecord]{Name: "SizeBytes", Read: func(r *jsonread.Reader, d *ddbRecord) error {
				return r.Int64Into(&d.rec.Change.SizeBytes)
			}},
			jsonread.Field[ddbRecord]{Name: "StreamViewType", Read: func(r *jsonread.Reader, d *ddbRecord) error {
				return r.StringInto(&d.rec.Change.StreamViewType)
			}},
		)
		userIdentityTable = jsonread.NewTable("a userIdentity object",
			jsonread.Str("type", func(u *events.DynamoDBUserIdentity) *string { return &u.Type }),
			jsonread.Str("principalId", func(u *events.DynamoDBUserIdentity) *string { return &u.PrincipalID }),
		)
	})
}

func dStr(name string, at func(*events.DynamoDBEventRecord) *string) jsonread.Field[ddbRecord] {
	return jsonread.Field[ddbRecord]{Name: name, Read: func(r *jsonread.Reader, d *ddbRecord) error { return r.StringInto(at(d.rec)) }}
}

// readUserIdentity reads a *DynamoDBUserIdentity as encoding/json does.
func readUserIdentity(r *jsonread.Reader, u **events.DynamoDBUserIdentity) error {
	if null, err := r.Null(); null || err != nil {
		*u = nil
		return err
	}
	if r.Peek() != '{' {
		return userIdentityTable.Read(r, new(events.DynamoDBUserIdentity)) // records the mismatch
	}
	if *u == nil {
		*u = new(events.DynamoDBUserIdentity)
	}
	return userIdentityTable.Read(r, *u)
}

// readSecondsEpoch reads aws-lambda-go's SecondsEpochTime: a float64 of
// seconds, split; null is 0 (its UnmarshalJSON gets null and keeps 0).
func readSecondsEpoch(r *jsonread.Reader, t *events.SecondsEpochTime) error {
	var f float64
	if err := r.Float64Into(&f); err != nil {
		return err
	}
	sec := int64(f)
	t.Time = time.Unix(sec, int64((f-float64(sec))*1e9))
	return nil
}

// image reads an image: its JSON into *raw (nil for null), checked as
// aws-lambda-go's decoder takes it; into *m as well when the record's maps
// are asked for; keys, when not nil, collects the key attributes.
func (d *ddbRecord) image(r *jsonread.Reader, raw *[]byte, m *map[string]events.DynamoDBAttributeValue, keys *[]keyAttr) error {
	if null, err := r.Null(); null || err != nil {
		*raw, *m = nil, nil
		return err
	}
	start := r.Offset()
	ok, err := readImage(r, keys)
	if err != nil || !ok {
		return err
	}
	*raw = r.Bytes()[start:r.Offset():r.Offset()]
	if d.maps {
		mm, err := ImageMap(*raw)
		if err != nil {
			r.Fail("%v", err)
			return nil
		}
		*m = mm
	}
	return nil
}

// DecodeDynamoDB decodes a DynamoDB Streams event; with maps, the records'
// Keys, NewImage and OldImage maps are filled too. A record with a value of
// the wrong type (an attribute value aws-lambda-go would refuse included)
// fails alone (errs has an entry for it, nil when none did) if it carries
// its SequenceNumber to be reported by; without one the whole event fails.
// The result shares no memory with payload.
func DecodeDynamoDB(payload []byte, maps bool) (ev DynamoDBEvent, errs []error, err error) {
	dynamoDBTables()
	r := jsonread.Shared(payload)
	d := ddbRecord{maps: maps}
	var bad error
	var imgs []Images
	ev.Records, err = readRecords(r, "Records", nil, func(rec *events.DynamoDBEventRecord, i int) error {
		imgs = growTo(imgs, i)
		d.rec, d.im = rec, &imgs[i]
		if err := ddbRecordTable.Read(r, &d); err != nil {
			return err
		}
		if d.im.Keys != nil {
			d.im.Key = renderKey(d.keys)
		} else {
			d.im.Key = ""
		}
		if rerr := r.Saved(); rerr != nil {
			if rec.Change.SequenceNumber == "" && bad == nil {
				bad = fmt.Errorf("sluice: dynamodb: record %d is malformed and has no identifier to report it by: %w", i, rerr)
			}
			errs = growTo(errs, i)
			errs[i] = fmt.Errorf("malformed dynamodb record: %w", rerr)
		} else if i < len(errs) {
			errs[i] = nil
		}
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return DynamoDBEvent{}, nil, fmt.Errorf("sluice: dynamodb: the event is not a dynamodb event: %w", jsonread.SyntaxErr(payload, err))
	}
	if err := r.Saved(); err != nil {
		return DynamoDBEvent{}, nil, fmt.Errorf("sluice: dynamodb: the event is not a dynamodb event: %w", err)
	}
	if bad != nil {
		return DynamoDBEvent{}, nil, bad
	}
	if ev.Records != nil {
		ev.Images = fit(imgs, len(ev.Records))
	}
	if errs != nil {
		errs = fit(errs, len(ev.Records))
	}
	return ev, errs, nil
}

// A keyAttr is a key attribute: its name, type (S, N, B) and text (B still
// base64).
type keyAttr struct {
	name, typ string
	val       []byte
}

// renderKey renders key attributes as DynamoDBKey renders the Keys map:
// sorted by name, the last of a repeated name kept, binary as hex.
func renderKey(keys []keyAttr) string {
	if len(keys) == 1 && keys[0].typ != "B" {
		return keys[0].name + "=" + string(keys[0].val)
	}
	slices.SortStableFunc(keys, func(a, b keyAttr) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	for i, k := range keys {
		if i+1 < len(keys) && keys[i+1].name == k.name {
			continue // a map keeps the last
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k.name)
		b.WriteByte('=')
		switch k.typ {
		case "B":
			v, _ := base64.StdEncoding.DecodeString(string(k.val))
			b.WriteString(hex.EncodeToString(v))
		case "S", "N":
			b.Write(k.val)
		}
	}
	return b.String()
}

// readImage checks an image (an object of attribute values) as
// aws-lambda-go's decoder takes it; a value it would refuse is recorded on
// r (ok false). keys, when not nil, collects the attributes' names, types
// and values.
func readImage(r *jsonread.Reader, keys *[]keyAttr) (ok bool, err error) {
	ok = true
	err = r.Object("an image (an object of attribute values)", func(name []byte) error {
		at := r.Offset()
		av, err := r.Raw()
		if err != nil {
			return err
		}
		typ, val, good := checkAV(av, 0)
		if !good {
			ok = false
			r.Fail("attribute %q at byte %d is not a DynamoDB attribute value aws-lambda-go takes", name, at)
			return nil
		}
		if keys != nil {
			*keys = append(*keys, keyAttr{string(name), typ, val})
		}
		return nil
	})
	return ok, err
}

// checkAV checks one attribute value's JSON (already known to be JSON) as
// aws-lambda-go's DynamoDBAttributeValue.UnmarshalJSON takes it: an object
// of one type label (a repeated label counts once, its last value kept).
// It returns the label and, for S, N and B, the value's text.
func checkAV(av []byte, depth int) (typ string, val []byte, ok bool) {
	if depth > 10000 {
		return "", nil, false
	}
	label, value, ok := avLabel(av)
	if !ok {
		return "", nil, false
	}
	r := jsonread.New(value)
	switch label {
	case "NULL":
		return label, nil, true
	case "S", "N", "B":
		text, null, isStr, err := r.StringView()
		if err != nil || null || !isStr {
			return "", nil, false
		}
		if label == "B" {
			if _, err := base64.StdEncoding.DecodeString(string(text)); err != nil {
				return "", nil, false
			}
		}
		return label, slices.Clone(text), true
	case "BOOL":
		return label, nil, r.Peek() == 't' || r.Peek() == 'f'
	case "M":
		good := true
		err := r.Object("", func([]byte) error {
			child, err := r.Raw()
			if err != nil {
				return err
			}
			if _, _, ok := checkAV(child, depth+1); !ok {
				good = false
			}
			return nil
		})
		return label, nil, err == nil && good && r.Saved() == nil
	case "L", "SS", "NS", "BS":
		good := true
		err := r.Array("", func(int) error {
			elem, err := r.Raw()
			if err != nil {
				return err
			}
			switch label {
			case "L":
				if _, _, ok := checkAV(elem, depth+1); !ok {
					good = false
				}
			default:
				er := jsonread.New(elem)
				text, null, isStr, err := er.StringView()
				if err != nil || null || !isStr {
					good = false // aws-lambda-go errs (or, for BS, panics)
				} else if label == "BS" {
					if _, err := base64.StdEncoding.DecodeString(string(text)); err != nil {
						good = false
					}
				}
			}
			return nil
		})
		return label, nil, err == nil && good && r.Saved() == nil
	}
	return "", nil, false
}

// avLabel returns an attribute value's one type label and the JSON of its
// value: the object must hold one distinct key (a repeated key counts once,
// its last value kept, as a map keeps it).
func avLabel(av []byte) (label string, value []byte, ok bool) {
	r := jsonread.New(av)
	if r.Peek() != '{' {
		return "", nil, false
	}
	n := 0
	err := r.Object("", func(key []byte) error {
		v, err := r.Raw()
		if err != nil {
			return err
		}
		if n == 0 || string(key) != label {
			n++
			label = avLabelName(key)
		}
		value = v
		return nil
	})
	return label, value, err == nil && n == 1
}

// avLabelName spells an attribute value's type label without allocating
// for the labels DynamoDB writes.
func avLabelName(key []byte) string {
	for _, l := range [...]string{"S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS"} {
		if string(key) == l {
			return l
		}
	}
	return string(key)
}

// ImageMap decodes an image's JSON into the map aws-lambda-go gives (nil
// for nil or null), by aws-lambda-go's rules for attribute values.
func ImageMap(img []byte) (map[string]events.DynamoDBAttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	r := jsonread.New(img)
	if null, err := r.Null(); err != nil || null {
		if err == nil {
			err = r.End()
		}
		return nil, err
	}
	m := map[string]events.DynamoDBAttributeValue{}
	err := r.Object("an image (an object of attribute values)", func(name []byte) error {
		raw, err := r.Raw()
		if err != nil {
			return err
		}
		av, ok := buildAV(raw)
		if !ok {
			r.Fail("attribute %q is not a DynamoDB attribute value aws-lambda-go takes", name)
			return nil
		}
		m[string(name)] = av
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if err == nil {
		err = r.Saved()
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// buildAV builds the attribute value of raw, which checkAV takes.
func buildAV(raw []byte) (events.DynamoDBAttributeValue, bool) {
	label, value, ok := avLabel(raw)
	if !ok {
		return events.DynamoDBAttributeValue{}, false
	}
	r := jsonread.New(value)
	str := func(r *jsonread.Reader) (string, bool) {
		s, ok, err := r.String()
		return s, ok && err == nil
	}
	switch label {
	case "NULL":
		return events.NewNullAttribute(), true
	case "S", "N", "B":
		s, ok := str(r)
		if !ok {
			return events.DynamoDBAttributeValue{}, false
		}
		switch label {
		case "S":
			return events.NewStringAttribute(s), true
		case "N":
			return events.NewNumberAttribute(s), true
		}
		b, err := base64.StdEncoding.DecodeString(s)
		return events.NewBinaryAttribute(b), err == nil
	case "BOOL":
		var b bool
		if c := r.Peek(); c != 't' && c != 'f' {
			return events.DynamoDBAttributeValue{}, false
		}
		_ = r.BoolInto(&b)
		return events.NewBooleanAttribute(b), true
	case "M":
		m := map[string]events.DynamoDBAttributeValue{}
		good := true
		err := r.Object("", func(key []byte) error {
			child, err := r.Raw()
			if err != nil {
				return err
			}
			av, ok := buildAV(child)
			good = good && ok
			m[string(key)] = av
			return nil
		})
		return events.NewMapAttribute(m), err == nil && good && r.Saved() == nil
	case "L", "SS", "NS", "BS":
		var list []events.DynamoDBAttributeValue
		var strs []string
		var bins [][]byte
		good := true
		err := r.Array("", func(int) error {
			elem, err := r.Raw()
			if err != nil {
				return err
			}
			if label == "L" {
				av, ok := buildAV(elem)
				good = good && ok
				list = append(list, av)
				return nil
			}
			s, ok := str(jsonread.New(elem))
			good = good && ok
			if label == "BS" {
				b, err := base64.StdEncoding.DecodeString(s)
				good = good && err == nil
				bins = append(bins, b)
			} else {
				strs = append(strs, s)
			}
			return nil
		})
		if err != nil || !good || r.Saved() != nil {
			return events.DynamoDBAttributeValue{}, false
		}
		switch label {
		case "L":
			return events.NewListAttribute(orEmpty(list)), true
		case "SS":
			return events.NewStringSetAttribute(orEmpty(strs)), true
		case "NS":
			return events.NewNumberSetAttribute(orEmpty(strs)), true
		}
		return events.NewBinarySetAttribute(orEmpty(bins)), true
	}
	return events.DynamoDBAttributeValue{}, false
}

func orEmpty[E any](s []E) []E {
	if s == nil {
		return []E{}
	}
	return s
}

// DecodeImage decodes an image's JSON into out by attributevalue's rules
// (events.UnmarshalImage, the one attribute-value codec).
func DecodeImage[T any](img []byte, out *T) error {
	m, err := ImageMap(img)
	if err != nil {
		return err
	}
	return sevents.UnmarshalImage(m, out)
}

// DynamoDBKey renders an item's key attributes as a stable string, the
// ordering key of the record.
func DynamoDBKey(keys map[string]events.DynamoDBAttributeValue) string {
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
