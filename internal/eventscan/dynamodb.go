package eventscan

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/jsonplan"
)

// DynamoDBEvent is a DynamoDB Streams event as ScanDynamoDB reads it. The
// records' Keys, NewImage and OldImage maps are left nil: Images holds each
// record's images as the JSON Lambda sent (validated), for decoding into a
// T straight from those bytes (DecodeImage) and into maps only when asked
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

// DynamoDBIdentifiers fills in the sequence number of each malformed record
// (errs[i] != nil) that the general decoder left without one, read from the
// record's JSON with its attribute values skipped, so the record fails
// alone. A malformed record without a sequence number fails the whole
// invocation: there is nothing to report it by.
func DynamoDBIdentifiers(payload []byte, recs []events.DynamoDBEventRecord, errs []error) error {
	var loose struct {
		Records []json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(payload, &loose); err != nil || len(loose.Records) != len(recs) {
		return fmt.Errorf("sluice: dynamodb: the event is not a dynamodb event: %v", err)
	}
	for i := range recs {
		if errs[i] == nil || recs[i].Change.SequenceNumber != "" {
			continue
		}
		var ids struct {
			EventID  string `json:"eventID"`
			DynamoDB struct {
				SequenceNumber string `json:"SequenceNumber"`
			} `json:"dynamodb"`
		}
		_ = json.Unmarshal(loose.Records[i], &ids) // the bad value is skipped, not decoded
		if ids.DynamoDB.SequenceNumber == "" {
			return fmt.Errorf("sluice: dynamodb: record %d is malformed and has no identifier to report it by: %w", i, errs[i])
		}
		recs[i].Change.SequenceNumber = ids.DynamoDB.SequenceNumber
		if recs[i].EventID == "" {
			recs[i].EventID = ids.EventID
		}
	}
	return nil
}

// ScanDynamoDB is the fast path of the DynamoDB Streams decoder
// (handlers): a hand-written scanner for the shape Lambda sends; ok is false
// when the input needs the general decoder (the plan decoder, then
// encoding/json). FuzzDynamoDBDecode keeps the two equal. The result shares
// no memory with payload. It scans its own copy of the
// event, so strings without escapes share that copy instead of being copied
// one by one.
func ScanDynamoDB(payload []byte) (ev DynamoDBEvent, ok bool) {
	s := &scanner{b: append([]byte(nil), payload...), own: true}
	if !s.tok('{') {
		return ev, false
	}
	a := &Arena{chunk: 4096}
	seen := false
	if !s.tok('}') {
		for {
			key, ok := s.plainString()
			if !ok || string(key) != "Records" || seen || !s.tok(':') || !s.tok('[') {
				return ev, false
			}
			seen = true
			ev.Records = make([]events.DynamoDBEventRecord, 0, 1)
			ev.Images = make([]Images, 0, 1)
			if !s.tok(']') {
				for {
					start := s.i
					ev.Records = append(ev.Records, events.DynamoDBEventRecord{})
					ev.Images = append(ev.Images, Images{})
					n := len(ev.Records)
					if !s.ddbRecord(a, &ev.Records[n-1], &ev.Images[n-1]) {
						return ev, false
					}
					if n == 1 && s.i > start {
						// Size the batch from its first record, as
						// scanKinesisEvent does.
						est := (len(s.b)-start)/(s.i-start) + 1
						est += est / 16
						ev.Records = append(make([]events.DynamoDBEventRecord, 0, est), ev.Records[0])
						ev.Images = append(make([]Images, 0, est), ev.Images[0])
					}
					if s.tok(']') {
						break
					}
					if !s.tok(',') {
						return ev, false
					}
				}
			}
			if s.tok('}') {
				break
			}
			if !s.tok(',') {
				return ev, false
			}
		}
	}
	s.ws()
	if s.i != len(s.b) || !seen {
		return ev, false
	}
	return ev, true
}

// ddbRecord scans one record. A key seen twice, an unknown or differently
// cased key, or an unexpected value makes it fail.
func (s *scanner) ddbRecord(a *Arena, r *events.DynamoDBEventRecord, im *Images) bool {
	if !s.tok('{') {
		return false
	}
	if s.tok('}') {
		return true
	}
	var seen uint16
	for {
		key, ok := s.plainString()
		if !ok || !s.tok(':') {
			return false
		}
		var bit uint16
		var dst *string
		switch string(key) {
		case "awsRegion":
			bit, dst = 1<<0, &r.AWSRegion
		case "eventID":
			bit, dst = 1<<1, &r.EventID
		case "eventName":
			bit, dst = 1<<2, &r.EventName
		case "eventSource":
			bit, dst = 1<<3, &r.EventSource
		case "eventVersion":
			bit, dst = 1<<4, &r.EventVersion
		case "eventSourceARN":
			bit, dst = 1<<5, &r.EventSourceArn
		case "dynamodb":
			bit = 1 << 6
		case "userIdentity":
			bit = 1 << 7
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch {
		case dst != nil:
			v, null, ok := s.text(a, "")
			if !ok {
				return false
			}
			if !null {
				*dst = v
			}
		case bit == 1<<6:
			if !s.ddbChange(a, &r.Change, im) {
				return false
			}
		default:
			if !s.ddbUserIdentity(a, r) {
				return false
			}
		}
		if s.tok('}') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}

func (s *scanner) ddbUserIdentity(a *Arena, r *events.DynamoDBEventRecord) bool {
	if s.null() {
		return true
	}
	if !s.tok('{') {
		return false
	}
	u := &events.DynamoDBUserIdentity{}
	r.UserIdentity = u
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
		var dst *string
		switch string(key) {
		case "type":
			bit, dst = 1, &u.Type
		case "principalId":
			bit, dst = 2, &u.PrincipalID
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		v, null, ok := s.text(a, "")
		if !ok {
			return false
		}
		if !null {
			*dst = v
		}
		if s.tok('}') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}

func (s *scanner) ddbChange(a *Arena, c *events.DynamoDBStreamRecord, im *Images) bool {
	if !s.tok('{') {
		return false
	}
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
		var dst *string
		var img *[]byte
		switch string(key) {
		case "ApproximateCreationDateTime":
			bit = 1 << 0
		case "Keys":
			bit, img = 1<<1, &im.Keys
		case "NewImage":
			bit, img = 1<<2, &im.New
		case "OldImage":
			bit, img = 1<<3, &im.Old
		case "SequenceNumber":
			bit, dst = 1<<4, &c.SequenceNumber
		case "SizeBytes":
			bit = 1 << 5
		case "StreamViewType":
			bit, dst = 1<<6, &c.StreamViewType
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch {
		case dst != nil:
			v, null, ok := s.text(a, "")
			if !ok {
				return false
			}
			if !null {
				*dst = v
			}
		case img != nil:
			if s.null() {
				break
			}
			s.ws()
			start := s.i
			if bit == 1<<1 {
				k, ok := s.ddbKeys(a)
				if !ok {
					return false
				}
				im.Key = k
			} else if !s.avMap(a, 0) {
				return false
			}
			*img = s.b[start:s.i:s.i]
		case bit == 1<<0:
			// aws-lambda-go's SecondsEpochTime: a float64, split.
			num, ok := s.number()
			if !ok {
				return false
			}
			f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(num), len(num)), 64)
			if err != nil {
				return false
			}
			c.ApproximateCreationDateTime = events.SecondsEpochTime{Time: secondsFloat(f)}
		default:
			num, ok := s.number()
			if !ok {
				return false
			}
			n, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(num), len(num)), 10, 64)
			if err != nil {
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

// avMap consumes an object of attribute values, accepting what
// aws-lambda-go's DynamoDBAttributeValue decodes without error (and a little
// less: NULL must be true, strings valid UTF-8).
func (s *scanner) avMap(a *Arena, depth int) bool {
	if depth > 64 || !s.tok('{') {
		return false
	}
	if s.tok('}') {
		return true
	}
	for {
		if _, null, ok := s.text(a, ""); null || !ok || !s.tok(':') {
			return false
		}
		if _, _, ok := s.av(a, depth); !ok {
			return false
		}
		if s.tok('}') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}

// Attribute value types, as av reports them.
const (
	avS byte = iota + 1
	avN
	avB
	avBOOL
	avNULL
	avOther // M, L, SS, NS, BS
)

// av consumes one attribute value, {"<type>": value}, and returns its type
// and, for S, N, B (still base64) and BOOL, its value.
func (s *scanner) av(a *Arena, depth int) (typ byte, val string, ok bool) {
	if !s.tok('{') {
		return 0, "", false
	}
	t, ok := s.plainString()
	if !ok || !s.tok(':') {
		return 0, "", false
	}
	switch string(t) {
	case "S", "N":
		typ = avS
		if t[0] == 'N' {
			typ = avN
		}
		v, null, ok := s.text(a, "")
		if null || !ok {
			return 0, "", false
		}
		val = v
	case "B":
		v, null, ok := s.text(a, "")
		if null || !ok || !validBase64(v) {
			return 0, "", false
		}
		typ, val = avB, v
	case "BOOL":
		typ = avBOOL
		switch {
		case s.lit("true"):
			val = "true"
		case s.lit("false"):
			val = "false"
		default:
			return 0, "", false
		}
	case "NULL":
		if !s.lit("true") {
			return 0, "", false
		}
		typ = avNULL
	case "M":
		if !s.avMap(a, depth+1) {
			return 0, "", false
		}
		typ = avOther
	case "L", "SS", "NS", "BS":
		if depth > 64 || !s.tok('[') {
			return 0, "", false
		}
		if !s.tok(']') {
			for {
				switch t[0] {
				case 'L':
					if _, _, ok := s.av(a, depth+1); !ok {
						return 0, "", false
					}
				default:
					v, null, ok := s.text(a, "")
					if null || !ok || t[0] == 'B' && !validBase64(v) {
						return 0, "", false
					}
				}
				if s.tok(']') {
					break
				}
				if !s.tok(',') {
					return 0, "", false
				}
			}
		}
		typ = avOther
	default:
		return 0, "", false
	}
	if !s.tok('}') {
		return 0, "", false // a second type: aws-lambda-go rejects it
	}
	return typ, val, true
}

// validBase64 reports whether v is clean padded standard base64, as the
// general decoder (base64.StdEncoding) accepts it; anything doubtful goes
// to the general decoder.
func validBase64(v string) bool {
	if v == "" {
		return true
	}
	var buf [96]byte
	for len(v) > 0 {
		n := min(len(v), 128) // a multiple of 4: padding only at the very end
		if n < len(v) && strings.IndexByte(v[:n], '=') >= 0 {
			return false
		}
		if _, ok := decodeStdBase64(buf[:], unsafe.Slice(unsafe.StringData(v), n)); !ok {
			return false
		}
		v = v[n:]
	}
	return true
}

// ddbKeys consumes the Keys object (string, number and binary attributes
// only) and returns the record's ordering key as DynamoDBKey renders it.
func (s *scanner) ddbKeys(a *Arena) (string, bool) {
	if !s.tok('{') {
		return "", false
	}
	type kv struct {
		name, val string
		typ       byte
	}
	var keys [4]kv
	n := 0
	if !s.tok('}') {
		for {
			name, null, ok := s.text(a, "")
			if null || !ok || !s.tok(':') || n == len(keys) {
				return "", false
			}
			typ, val, ok := s.av(a, 0)
			if !ok || typ != avS && typ != avN && typ != avB {
				return "", false
			}
			for _, k := range keys[:n] {
				if k.name == name {
					return "", false // the last one wins in a map: let the general decoder say
				}
			}
			keys[n] = kv{name, val, typ}
			n++
			if s.tok('}') {
				break
			}
			if !s.tok(',') {
				return "", false
			}
		}
	}
	ks := keys[:n]
	if n == 1 && ks[0].typ != avB {
		out := a.room(len(ks[0].name) + 1 + len(ks[0].val))
		out = append(append(append(out, ks[0].name...), '='), ks[0].val...)
		return a.commit(out), true
	}
	slices.SortFunc(ks, func(x, y kv) int { return strings.Compare(x.name, y.name) })
	out := a.room(64)
	for i, k := range ks {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(out, k.name...), '=')
		if k.typ == avB {
			b, err := base64.StdEncoding.DecodeString(k.val)
			if err != nil {
				return "", false
			}
			out = hex.AppendEncode(out, b)
		} else {
			out = append(out, k.val...)
		}
	}
	return a.commit(out), true
}

// secondsFloat splits epoch seconds as aws-lambda-go's SecondsEpochTime
// does.
func secondsFloat(f float64) time.Time {
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9))
}

// An ImagePlan decodes a DynamoDB image's JSON straight into a struct type T,
// by attributevalue's rules (events.UnmarshalImage), for the structs it
// handles: exported fields of string, bool, integer and float kinds, named
// by `dynamodbav` tags or their Go names, no embedded structs, no
// "string" or "unixtime" options, no DynamoDB (un)marshal methods. A value
// it does not expect (a map into a struct field, a number that overflows,
// an attribute that sets a field twice) sends that image to the general
// decoder; so does every image of a T it does not handle (plan nil).
type ImagePlan struct {
	fields []planField // sorted by name, as attributevalue orders them
}

type planField struct {
	name string
	off  uintptr
	kind reflect.Kind
}

// PlanImage makes the plan for t; nil when it does not handle t.
func PlanImage(t reflect.Type) *ImagePlan {
	if t.Kind() != reflect.Struct || t.NumField() > 64 || hasMethod(t, "UnmarshalDynamoDBAttributeValue") {
		return nil
	}
	p := &ImagePlan{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil
		}
		if sf.PkgPath != "" {
			continue
		}
		tag := strings.Split(sf.Tag.Get("dynamodbav"), ",")
		if tag[0] == "-" {
			continue
		}
		for _, o := range tag[1:] {
			if o == "string" || o == "unixtime" {
				return nil
			}
		}
		name := sf.Name
		if tag[0] != "" {
			name = tag[0]
		}
		switch k := sf.Type.Kind(); {
		case hasMethod(sf.Type, "UnmarshalDynamoDBAttributeValue"):
			return nil
		case k == reflect.String || k == reflect.Bool || k >= reflect.Int && k <= reflect.Int64 ||
			k >= reflect.Uint && k <= reflect.Uint64 || k == reflect.Float32 || k == reflect.Float64:
			p.fields = append(p.fields, planField{name, sf.Offset, k})
		default:
			return nil
		}
	}
	slices.SortFunc(p.fields, func(x, y planField) int { return strings.Compare(x.name, y.name) })
	for i := 1; i < len(p.fields); i++ {
		if p.fields[i].name == p.fields[i-1].name {
			return nil // attributevalue's dominance rules: the general decoder
		}
	}
	return p
}

func hasMethod(t reflect.Type, name string) bool {
	if _, ok := t.MethodByName(name); ok {
		return true
	}
	_, ok := reflect.PointerTo(t).MethodByName(name)
	return ok
}

// field returns the index of the field an attribute name decodes into, -1
// for none: the exact name, else the first case-insensitive match.
func (p *ImagePlan) field(name string) int {
	for i := range p.fields {
		if p.fields[i].name == name {
			return i
		}
	}
	for i := range p.fields {
		if strings.EqualFold(p.fields[i].name, name) {
			return i
		}
	}
	return -1
}

// decode decodes img, an image the scanner validated, into the struct at
// base, which must be zero. ok is false when the general decoder must do
// it; base is then left partly written.
func (p *ImagePlan) decode(img []byte, base unsafe.Pointer) bool {
	return p.decodeAt(&scanner{b: img, own: true}, base)
}

// decodeAt is decode of the image at s's position, which it consumes.
func (p *ImagePlan) decodeAt(s *scanner, base unsafe.Pointer) bool {
	var set uint64
	if !s.tok('{') {
		return false
	}
	if s.tok('}') {
		return true
	}
	for {
		name, null, ok := s.text(nil, "")
		if null || !ok || !s.tok(':') {
			return false
		}
		f := p.field(name)
		typ, val, ok := s.av(nil, 0)
		if !ok {
			return false
		}
		if f >= 0 {
			if set&(1<<f) != 0 {
				return false
			}
			set |= 1 << f
			if !p.fields[f].set(unsafe.Add(base, p.fields[f].off), typ, val) {
				return false
			}
		}
		if s.tok('}') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}

// set stores one attribute value in a field as decodeAV would; false for
// anything else, including errors, which the general decoder words.
func (f *planField) set(p unsafe.Pointer, typ byte, val string) bool {
	switch typ {
	case avNULL:
		switch f.kind {
		case reflect.String:
			*(*string)(p) = ""
		case reflect.Bool, reflect.Int8, reflect.Uint8:
			*(*uint8)(p) = 0
		case reflect.Int16, reflect.Uint16:
			*(*uint16)(p) = 0
		case reflect.Int32, reflect.Uint32, reflect.Float32:
			*(*uint32)(p) = 0
		default:
			*(*uint64)(p) = 0
		}
		return true
	case avS:
		if f.kind != reflect.String {
			return false
		}
		*(*string)(p) = val
		return true
	case avBOOL:
		if f.kind != reflect.Bool {
			return false
		}
		*(*bool)(p) = val == "true"
		return true
	case avN:
	default:
		return false
	}
	switch f.kind {
	case reflect.String:
		*(*string)(p) = val
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(val, 10, 64)
		if err != nil || !jsonplan.SetInt(p, f.kind, i) {
			return false
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, err := strconv.ParseUint(val, 10, 64)
		if err != nil || !jsonplan.SetUint(p, f.kind, u) {
			return false
		}
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return false
		}
		if f.kind == reflect.Float64 {
			*(*float64)(p) = x
			return true
		}
		if ax := math.Abs(x); ax > math.MaxFloat32 && ax <= math.MaxFloat64 {
			return false // reflect's OverflowFloat
		}
		*(*float32)(p) = float32(x)
	default:
		return false
	}
	return true
}

// DecodeImage decodes an image's JSON into out: by the plan when it can,
// else as events.UnmarshalImage decodes the map.
func DecodeImage[T any](p *ImagePlan, img []byte, out *T) error {
	if p != nil && p.decode(img, unsafe.Pointer(out)) {
		return nil
	}
	var zero T
	*out = zero
	m, err := ImageMap(img)
	if err != nil {
		return err
	}
	return sevents.UnmarshalImage(m, out)
}

// ImageMap decodes an image's JSON into the map aws-lambda-go gives; nil
// for nil.
func ImageMap(img []byte) (map[string]events.DynamoDBAttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	var m map[string]events.DynamoDBAttributeValue
	err := json.Unmarshal(img, &m)
	return m, err
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
