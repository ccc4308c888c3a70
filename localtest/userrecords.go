package localtest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"

	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/localtest/internal/checks"
)

// The records of a run are what the function handles one by one, named
// as the handlers and dead letters name them: a Kinesis record the Kinesis
// Producer Library aggregated is not one record but its user records,
// each "<sequenceNumber>:<subSequenceNumber>" (kpl.SubSequenceKey, as
// dlq.Envelope.RecordKey names them). The engine batches, checkpoints and
// reports Kinesis records, as Lambda does; fates, effects, expectations
// and the checks are per record of the run: a user record takes its
// Kinesis record's fate (on-failure, left, filtered, processed), unless
// the function quarantined or skipped that user record alone.

// userRefs are the records of the run that the KPL aggregate parent
// stands for, one per user record; expects are the user records' own
// expectations ("" takes the aggregate's).
func userRefs(parent inputRef, users []kpl.Record, expects []string) []inputRef {
	out := make([]inputRef, len(users))
	for j, u := range users {
		e := parent.expect
		if j < len(expects) && expects[j] != "" {
			e = expects[j]
		}
		out[j] = inputRef{id: kpl.SubSequenceKey(parent.id, j), key: userKey(u.PartitionKey, parent.lane), line: parent.line,
			input: parent.input, payload: u.Data, expect: e, user: true, sub: j, items: payloadItems(u.Data)}
	}
	return out
}

// userKey is the ordering key of a KPL user record with partition key pk
// in an aggregate read from lane. Lambda keeps a shard's records in order
// (with ParallelizationFactor > 1, those of one lane of the shard, chosen
// by the Kinesis record's partition key), and a producer's aggregates of
// one user key may sit in different shards or lanes (the KPL places an
// aggregate by an explicit hash key, and names it by its first user
// record's key): a user key's records are in order within the lane they
// share, and the check compares them there.
func userKey(pk, lane string) string {
	if lane == "" {
		return pk
	}
	return pk + " in " + lane
}

// laneName names the lane of a shard that holds a Kinesis record with
// partition key pk, as the engine's lanes split a shard (subLane).
func laneName(shard, pk string, pf int) string {
	if pf <= 1 {
		return shard
	}
	return fmt.Sprintf("%s lane %d", shard, subLane(pk, pf))
}

// deaggregated gives ref, a Kinesis record read from a real stream, its
// user records when its data is a KPL aggregate, as the handlers
// deaggregate it: data that is not an aggregate (no magic, a checksum that
// does not match) and an aggregate that cannot be read stay one record
// (the handlers fail the latter whole, under its sequence number); a user
// record that cannot be read (a key index outside its table) is still
// one, which the handlers fail alone.
func deaggregated(ref inputRef) inputRef {
	if !kpl.IsAggregated(ref.payload) {
		return ref
	}
	a, ok, err := kpl.Parse(ref.payload)
	if !ok || err != nil {
		return ref
	}
	users := make([]kpl.Record, a.Len())
	for i := range users {
		pk, _, data, _ := a.Keys(i)
		users[i] = kpl.Record{PartitionKey: pk, Data: data}
	}
	ref.users = userRefs(ref, users, nil)
	return ref
}

// runRecords lists the records of the run in source order: refs, each
// KPL aggregate replaced by its user records. It is refs itself when
// none is an aggregate.
func runRecords(refs []inputRef) []inputRef {
	n, aggs := 0, 0
	for _, ref := range refs {
		if ref.users != nil {
			n += len(ref.users)
			aggs++
		} else {
			n++
		}
	}
	if aggs == 0 {
		return refs
	}
	out := make([]inputRef, 0, n)
	for _, ref := range refs {
		if ref.users != nil {
			out = append(out, ref.users...)
		} else {
			out = append(out, ref)
		}
	}
	return out
}

// runFates is the fate of each record of the run from the engine's fates
// (by Kinesis record): a user record takes its aggregate's. It is fates
// itself when no record is an aggregate.
func runFates(refs []inputRef, fates map[string]string) (map[string]string, map[string]int) {
	var aggregates map[string]int
	for _, ref := range refs {
		if ref.users != nil {
			if aggregates == nil {
				aggregates = map[string]int{}
			}
			aggregates[ref.id] = len(ref.users)
		}
	}
	if aggregates == nil {
		return fates, nil
	}
	out := make(map[string]string, len(fates)+len(refs))
	for id, f := range fates {
		if _, ok := aggregates[id]; !ok {
			out[id] = f
		}
	}
	for _, ref := range refs {
		if f, ok := fates[ref.id]; ok && ref.users != nil {
			for _, u := range ref.users {
				out[u.id] = f
			}
		}
	}
	return out, aggregates
}

// payloadItems is how many items a payload carries that effects may name
// one by one (events.ItemID): the S3 records of an S3 event notification,
// as S3 sends it to an SQS queue or SNS topic (inside an SNS
// notification's Message too); 0 for any other payload.
func payloadItems(payload []byte) int {
	if !bytes.Contains(payload, []byte("aws:s3")) {
		return 0
	}
	var n struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
		Type    string `json:"Type"`
		Message string `json:"Message"`
	}
	if json.Unmarshal(payload, &n) != nil {
		return 0
	}
	if n.Type == "Notification" && n.Message != "" && len(n.Records) == 0 {
		return payloadItems([]byte(n.Message))
	}
	for _, r := range n.Records {
		if r.EventSource != "aws:s3" {
			return 0
		}
	}
	return len(n.Records)
}

// payloadShows reports whether a payload is what a skip reason says: the
// s3:TestEvent message (as S3 sends it, or inside an SNS notification), a
// CloudWatch Logs subscription's CONTROL_MESSAGE (gzip'd JSON, as
// CloudWatch Logs writes to Kinesis).
func payloadShows(payload []byte, reason string) bool {
	switch reason {
	case checks.ReasonS3TestEvent:
		var t struct {
			Event   string `json:"Event"`
			Type    string `json:"Type"`
			Message string `json:"Message"`
		}
		if json.Unmarshal(payload, &t) != nil {
			return false
		}
		if t.Event == "s3:TestEvent" {
			return true
		}
		return t.Type == "Notification" && payloadShows([]byte(t.Message), reason)
	case checks.ReasonControlMessage:
		z, err := gzip.NewReader(bytes.NewReader(payload))
		if err != nil {
			return false
		}
		raw, err := io.ReadAll(io.LimitReader(z, 1<<20))
		if err != nil {
			return false
		}
		var m struct {
			MessageType string `json:"messageType"`
		}
		return json.Unmarshal(raw, &m) == nil && m.MessageType == "CONTROL_MESSAGE"
	}
	return false
}
