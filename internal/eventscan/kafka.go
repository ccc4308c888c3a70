package eventscan

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/jsonread"
)

// A KafkaEntry is one record of a Kafka event.
type KafkaEntry struct {
	Record events.KafkaRecord
	Err    error  // the record is malformed: only its offset is known
	ID     string // the batch item identifier, "<topic-partition>@<offset>"
	// Key and Value are the record's key and value base64-decoded (nil
	// when empty), or the error saying why they are not base64.
	Key, Value       []byte
	KeyErr, ValueErr error
	// Meta is the record's schema metadata (nil fields when it has none).
	Meta KafkaMeta
}

// KafkaMeta is the schema metadata of one record.
type KafkaMeta struct {
	Key   *sevents.KafkaSchemaMetadata `json:"keySchemaMetadata"`
	Value *sevents.KafkaSchemaMetadata `json:"valueSchemaMetadata"`
}

// KafkaEvent is a decoded Kafka event.
type KafkaEvent struct {
	Entries []KafkaEntry
	Parts   []string // the topic-partition of each entry
	Source  string   // the event's eventSource
	ARN     string   // the event's eventSourceArn (MSK)
	Records bool     // the event has a records object
}

// kafkaRecord is the state of the record being read.
type kafkaRecord struct {
	e         *KafkaEntry
	data      *Bytes
	hasOffset bool // the record's offset was read
}

// The Kafka event, spelled once: every member Lambda writes, by
// aws-lambda-go's names (and the schema metadata it adds when the mapping
// validates records against a registry); any other is skipped.
var (
	kafkaRecordTable    *jsonread.Table[kafkaRecord]
	schemaMetadataTable *jsonread.Table[sevents.KafkaSchemaMetadata]
	kafkaOnce           sync.Once
)

// kafkaTables builds the tables on first use: a function links the
// tables of the sources it reads, no others.
func kafkaTables() {
	kafkaOnce.Do(func() {
		kafkaRecordTable = jsonread.NewTable("a Kafka record",
			jsonread.Field[kafkaRecord]{Name: "topic", Read: func(r *jsonread.Reader, k *kafkaRecord) error { return r.StringInto(&k.e.Record.Topic) }},
			jsonread.Field[kafkaRecord]{Name: "partition", Read: func(r *jsonread.Reader, k *kafkaRecord) error { return r.Int64Into(&k.e.Record.Partition) }},
			jsonread.Field[kafkaRecord]{Name: "offset", Read: func(r *jsonread.Reader, k *kafkaRecord) error {
				if null, err := r.Null(); null || err != nil {
					return err
				}
				num, ok, err := r.Number()
				if !ok || err != nil {
					return err
				}
				v, perr := strconv.ParseInt(string(num), 10, 64)
				if perr != nil {
					r.Fail("offset %s is not a 64-bit integer", num)
					return nil
				}
				k.e.Record.Offset, k.hasOffset = v, true
				return nil
			}},
			jsonread.Field[kafkaRecord]{Name: "timestamp", Read: func(r *jsonread.Reader, k *kafkaRecord) error {
				// aws-lambda-go's MilliSecondsEpochTime: an int64 of
				// milliseconds; null is 0 (its UnmarshalJSON gets null).
				var ms int64
				if err := r.Int64Into(&ms); err != nil {
					return err
				}
				k.e.Record.Timestamp.Time = time.Unix(ms/1000, (ms%1000)*1000000)
				return nil
			}},
			jsonread.Field[kafkaRecord]{Name: "timestampType", Read: func(r *jsonread.Reader, k *kafkaRecord) error {
				return r.StringInto(&k.e.Record.TimestampType)
			}},
			jsonread.Field[kafkaRecord]{Name: "key", Read: func(r *jsonread.Reader, k *kafkaRecord) error {
				return k.base64(r, &k.e.Record.Key, &k.e.Key, &k.e.KeyErr)
			}},
			jsonread.Field[kafkaRecord]{Name: "value", Read: func(r *jsonread.Reader, k *kafkaRecord) error {
				return k.base64(r, &k.e.Record.Value, &k.e.Value, &k.e.ValueErr)
			}},
			jsonread.Field[kafkaRecord]{Name: "headers", Read: func(r *jsonread.Reader, k *kafkaRecord) error {
				return readKafkaHeaders(r, &k.e.Record.Headers)
			}},
			jsonread.Field[kafkaRecord]{Name: "keySchemaMetadata", Read: func(r *jsonread.Reader, k *kafkaRecord) error {
				return readSchemaMetadata(r, &k.e.Meta.Key)
			}},
			jsonread.Field[kafkaRecord]{Name: "valueSchemaMetadata", Read: func(r *jsonread.Reader, k *kafkaRecord) error {
				return readSchemaMetadata(r, &k.e.Meta.Value)
			}},
		)
		schemaMetadataTable = jsonread.NewTable("a schema metadata object",
			jsonread.Str("dataFormat", func(m *sevents.KafkaSchemaMetadata) *string { return &m.DataFormat }),
			jsonread.Str("schemaId", func(m *sevents.KafkaSchemaMetadata) *string { return &m.SchemaID }),
		)
	})
}

// base64 reads a key or value: its text into *s, and its bytes decoded
// into *b, or why they do not decode into *berr.
func (k *kafkaRecord) base64(r *jsonread.Reader, s *string, b *[]byte, berr *error) error {
	text, null, err := r.TextInto(s)
	if err != nil || null {
		return err
	}
	*b, *berr = nil, nil
	if len(text) == 0 {
		return nil
	}
	dst := k.data.Alloc(base64.StdEncoding.DecodedLen(len(text)))
	n, derr := base64.StdEncoding.Decode(dst, text)
	if derr != nil {
		*berr = derr
		return nil
	}
	if n > 0 {
		*b = dst[:n:n]
	}
	return nil
}

// readSchemaMetadata reads a *KafkaSchemaMetadata as encoding/json does.
func readSchemaMetadata(r *jsonread.Reader, m **sevents.KafkaSchemaMetadata) error {
	if null, err := r.Null(); null || err != nil {
		*m = nil
		return err
	}
	if r.Peek() != '{' {
		return schemaMetadataTable.Read(r, new(sevents.KafkaSchemaMetadata)) // records the mismatch
	}
	if *m == nil {
		*m = new(sevents.KafkaSchemaMetadata)
	}
	return schemaMetadataTable.Read(r, *m)
}

// readKafkaHeaders reads the headers as encoding/json fills
// []map[string]events.JSONNumberBytes, whose UnmarshalJSON takes an array
// of int8 (null: an empty value).
func readKafkaHeaders(r *jsonread.Reader, hs *[]map[string]events.JSONNumberBytes) error {
	if null, err := r.Null(); null || err != nil {
		*hs = nil
		return err
	}
	out := (*hs)[:0]
	if out == nil && r.Peek() == '[' {
		out = []map[string]events.JSONNumberBytes{}
	}
	err := r.Array("an array of header objects", func(i int) error {
		var h map[string]events.JSONNumberBytes
		if i < len(*hs) {
			h = (*hs)[i]
		}
		if null, err := r.Null(); err != nil {
			return err
		} else if null {
			out = append(out, nil)
			return nil
		}
		if r.Peek() == '{' && h == nil {
			h = map[string]events.JSONNumberBytes{}
		}
		err := r.Object("an object of header values", func(key []byte) error {
			v := events.JSONNumberBytes{}
			if null, err := r.Null(); err != nil || null {
				h[string(key)] = v
				return err
			}
			err := r.Array("an array of signed bytes", func(int) error {
				num, ok, err := r.Number()
				if !ok || err != nil {
					return err
				}
				b, perr := strconv.ParseInt(string(num), 10, 8)
				if perr != nil {
					r.Fail("header byte %s is not an int8", num)
				}
				v = append(v, byte(b))
				return nil
			})
			h[string(key)] = v
			return err
		})
		out = append(out, h)
		return err
	})
	if out != nil {
		*hs = out
	}
	return err
}

// DecodeKafka decodes the records of a Kafka event in a stable order:
// topic-partitions sorted by key, records as delivered (offset order). A
// record with a value of the wrong type fails alone if it carries its offset
// to be reported by; without one the whole event fails. The result shares
// no memory with payload (its strings are cut from one copy of it, its keys
// and values decoded into chunks of its own).
func DecodeKafka(payload []byte) (KafkaEvent, error) {
	kafkaTables()
	r := jsonread.Shared(payload)
	var ev KafkaEvent
	type group struct {
		key      string
		from, to int
	}
	var groups []group
	var entries []KafkaEntry
	var data Bytes
	var bad error
	k := kafkaRecord{data: &data}
	top := jsonread.NewTable("a Kafka event",
		jsonread.Str("eventSource", func(ev *KafkaEvent) *string { return &ev.Source }),
		jsonread.Str("eventSourceArn", func(ev *KafkaEvent) *string { return &ev.ARN }),
		jsonread.Field[KafkaEvent]{Name: "records", Read: func(r *jsonread.Reader, ev *KafkaEvent) error {
			if null, err := r.Null(); null || err != nil {
				ev.Records, groups, entries = false, nil, nil
				return err
			}
			if r.Peek() == '{' {
				ev.Records = true
			}
			return r.Object("an object of topic-partitions", func(key []byte) error {
				part := string(key)
				groups = slices.DeleteFunc(groups, func(g group) bool { return g.key == part }) // a map keeps the last
				g := group{key: part, from: len(entries)}
				if null, err := r.Null(); null || err != nil {
					g.to = len(entries)
					groups = append(groups, g)
					return err
				}
				err := r.Array("an array of Kafka records", func(j int) error {
					start := r.Offset()
					entries = append(entries, KafkaEntry{})
					e := &entries[len(entries)-1]
					if null, err := r.Null(); null || err != nil {
						return err
					}
					k.e, k.hasOffset = e, false
					if err := kafkaRecordTable.Read(r, &k); err != nil {
						return err
					}
					if rerr := r.Saved(); rerr != nil {
						e.Err = fmt.Errorf("malformed kafka record: %w", rerr)
						if !k.hasOffset && bad == nil {
							bad = fmt.Errorf("sluice: kafka: record %d of %s is malformed and has no offset to report it by: %w", j, part, rerr)
						}
					}
					if len(entries) == 1 && r.Offset() > start {
						// Size the batch from its first record.
						entries = slices.Grow(entries, len(r.Bytes())/(r.Offset()-start))
					}
					return nil
				})
				g.to = len(entries)
				groups = append(groups, g)
				if serr := r.Saved(); serr != nil && bad == nil {
					bad = fmt.Errorf("sluice: kafka: the event is not a Kafka event: %w", serr) // the partition's value is not an array
				}
				return err
			})
		}},
	)
	err := func() error {
		if null, err := r.Null(); null || err != nil {
			return err
		}
		return top.Read(r, &ev)
	}()
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return KafkaEvent{}, fmt.Errorf("sluice: kafka: the event is not a Kafka event: %w", jsonread.SyntaxErr(payload, err))
	}
	if err := r.Saved(); err != nil {
		return KafkaEvent{}, fmt.Errorf("sluice: kafka: the event is not a Kafka event: %w", err)
	}
	if bad != nil {
		return KafkaEvent{}, bad
	}
	// Partitions sorted by key, records as delivered.
	slices.SortFunc(groups, func(x, y group) int {
		switch {
		case x.key < y.key:
			return -1
		case x.key > y.key:
			return 1
		}
		return 0
	})
	n := 0
	for _, g := range groups {
		n += g.to - g.from
	}
	ev.Entries = make([]KafkaEntry, 0, n)
	ev.Parts = make([]string, 0, n)
	for _, g := range groups {
		for _, e := range entries[g.from:g.to] {
			e.ID = g.key + "@" + strconv.FormatInt(e.Record.Offset, 10)
			ev.Entries = append(ev.Entries, e)
			ev.Parts = append(ev.Parts, g.key)
		}
	}
	return ev, nil
}

// Partitions returns the topic-partition keys of a Kafka event's records
// map, sorted, and how many records it holds.
func Partitions[R any](records map[string][]R) ([]string, int) {
	keys := make([]string, 0, len(records))
	n := 0
	for k, rs := range records {
		keys = append(keys, k)
		n += len(rs)
	}
	slices.Sort(keys)
	return keys, n
}
