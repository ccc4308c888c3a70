package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/batchresponse"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/internal/window"
	"github.com/sluicehq/sluice/localtest/onfailure"
)

// A lane is a sequence of records processed in order with its own
// checkpoint: a shard (or, with ParallelizationFactor > 1, the partition
// keys of a shard that hash to one of its concurrent batches), or a Kafka
// topic-partition.
type lane struct {
	name  string // shard id or topic-partition
	recs  []laneRec
	pos   int      // first record not yet resolved: the checkpoint is just before it
	split [][2]int // bisected ranges still to run, first first
	// retries are the retries consumed by the record at pos; attempts the
	// invocations that included it.
	retries, attempts int
	lastReq           string
	lastResp          invocation.Response
	more              func(ctx context.Context) (bool, error) // fetch more records into this lane (and its siblings)
	exhausted         bool

	// Tumbling windows: the open window's start and the state carried
	// from invoke to invoke within it.
	window     time.Time
	windowOpen bool
	windowFrom int // the window's first record (an index into recs)
	state      json.RawMessage
	early      bool // the state outgrew maxWindowState: close the window early

	waited int // pos+1 of the record a batching window was last waited for
}

// maxWindowState is Lambda's limit on a tumbling window's state per shard.
const maxWindowState = 1 << 20

type laneRec struct {
	id      string // item identifier
	key     string // ordering key
	arrival time.Time
	event   json.RawMessage
	offset  int64 // Kafka
}

// laneKind is what differs between streams and Kafka.
type laneKind struct {
	source sevents.Source
	// envelope builds the event for a batch.
	envelope func(l *lane, batch []laneRec) []byte
	// read reads the response against the batch.
	read func(body []byte, l *lane, batch []laneRec) batchresponse.Reading
	// merge, when set (Kafka), builds one event from several lanes'
	// batches: runLanes then runs kafkaStep instead of step.
	merge func(parts []part) []byte
	// info fills an on-failure record's batch info.
	info func(rec *sevents.OnFailureRecord, l *lane, batch []laneRec)
	// partialResponses is false where Lambda ignores them (no
	// ReportBatchItemFailures, Kafka on-demand).
	partialResponses bool
}

// streamLanes makes the lanes of a Kinesis or DynamoDB stream.
func (r *runner) streamLanes(ctx context.Context) ([]*lane, laneKind, error) {
	shards, err := r.stream.Shards(ctx)
	if err != nil {
		return nil, laneKind{}, fmt.Errorf("localtest: list shards: %w", err)
	}
	pf := r.s.parallelization
	var lanes []*lane
	for _, shard := range shards {
		sub := make([]*lane, pf)
		after := ""
		for k := range sub {
			sub[k] = &lane{name: shard}
		}
		more := func(ctx context.Context) (bool, error) {
			recs, err := r.stream.Read(ctx, shard, after, max(1000, r.s.batchSize))
			if err != nil {
				return false, fmt.Errorf("localtest: read shard %s: %w", shard, err)
			}
			if len(recs) == 0 {
				return false, nil
			}
			r.fetched = true
			for _, rec := range recs {
				if r.skipFiltered(shard, rec.SequenceNumber, rec.PartitionKey, rec.Event) {
					continue
				}
				k := 0
				if pf > 1 {
					k = subLane(rec.PartitionKey, pf)
				}
				sub[k].recs = append(sub[k].recs, laneRec{id: rec.SequenceNumber, key: rec.PartitionKey, arrival: rec.Arrival, event: rec.Event})
				r.shardOrder[shard] = append(r.shardOrder[shard], rec.SequenceNumber)
				if r.refs == nil {
					r.see(realLaneRef(r.s.source, rec.SequenceNumber, rec.PartitionKey, laneName(shard, rec.PartitionKey, pf), rec.Event))
				}
			}
			after = recs[len(recs)-1].SequenceNumber
			return true, nil
		}
		for _, l := range sub {
			l.more = more
		}
		lanes = append(lanes, sub...)
	}
	kind := laneKind{
		source:           r.s.source,
		partialResponses: r.s.reportFailures,
		envelope: func(_ *lane, batch []laneRec) []byte {
			var b bytes.Buffer
			b.WriteString(`{"Records":[`)
			for i, rec := range batch {
				if i > 0 {
					b.WriteByte(',')
				}
				b.Write(rec.event)
			}
			b.WriteString("]}")
			return b.Bytes()
		},
		read: func(body []byte, _ *lane, batch []laneRec) batchresponse.Reading {
			ids := make([]string, len(batch))
			for i, rec := range batch {
				ids[i] = rec.id
			}
			return batchresponse.Stream(body, ids)
		},
		info: func(rec *sevents.OnFailureRecord, l *lane, batch []laneRec) {
			var src struct {
				ARN string `json:"eventSourceARN"`
			}
			json.Unmarshal(batch[0].event, &src)
			arrival := isoTime
			if r.s.source == sevents.SourceDynamoDB {
				arrival = isoSeconds // recorded: DynamoDB writes whole seconds, Kinesis milliseconds
			}
			info := &sevents.StreamBatchInfo{
				ShardID:                         l.name,
				StartSequenceNumber:             batch[0].id,
				EndSequenceNumber:               batch[len(batch)-1].id,
				ApproximateArrivalOfFirstRecord: arrival(batch[0].arrival),
				ApproximateArrivalOfLastRecord:  arrival(batch[len(batch)-1].arrival),
				BatchSize:                       len(batch),
				StreamARN:                       src.ARN,
			}
			if r.s.source == sevents.SourceDynamoDB {
				rec.DDBStreamInfo = info
			} else {
				rec.KinesisBatchInfo = info
			}
		},
	}
	return lanes, kind, nil
}

// subLane is the lane of a shard, of pf (ParallelizationFactor), that
// holds a partition key's records. It hashes the key with FNV-1a, not
// with the MD5 that places the key in its shard: within one shard the MD5
// hashes of its keys share their leading bits, so sub-lanes taken from
// them would leave some lanes empty (two shards and pf 2 would use two of
// four lanes). How Lambda spreads keys is not documented; any stable
// spread keeps each key in one lane, and so in order.
func subLane(partitionKey string, pf int) int {
	h := fnv.New32a()
	h.Write([]byte(partitionKey))
	return int(h.Sum32() % uint32(pf))
}

// entry starts the trace entry of a batch of lane l, naming the lane as
// its source calls it.
func (k laneKind) entry(l *lane) TraceEntry { return kindEntry(k.source, l) }

func kindEntry(source sevents.Source, l *lane) TraceEntry {
	if source == sevents.SourceKafka {
		return TraceEntry{Partition: l.name}
	}
	return TraceEntry{Shard: l.name}
}

// kafkaLanes makes one lane per topic-partition.
func (r *runner) kafkaLanes(ctx context.Context) ([]*lane, laneKind, error) {
	parts, err := r.kafka.Partitions(ctx)
	if err != nil {
		return nil, laneKind{}, fmt.Errorf("localtest: list partitions: %w", err)
	}
	env := r.kafka.Envelope()
	var lanes []*lane
	for _, p := range parts {
		l := &lane{name: p}
		next := int64(0)
		l.more = func(ctx context.Context) (bool, error) {
			recs, err := r.kafka.Fetch(ctx, p, next, max(1000, r.s.batchSize))
			if err != nil {
				return false, fmt.Errorf("localtest: fetch %s: %w", p, err)
			}
			if len(recs) == 0 {
				return false, nil
			}
			r.fetched = true
			for _, rec := range recs {
				id := kafkaID(p, rec.Offset)
				if r.skipFiltered(p, id, p, rec.Event) {
					continue
				}
				l.recs = append(l.recs, laneRec{id: id, key: p, arrival: rec.Timestamp, event: rec.Event, offset: rec.Offset})
				r.shardOrder[p] = append(r.shardOrder[p], id)
				if r.refs == nil {
					r.see(realRef(sevents.SourceKafka, id, p, rec.Event))
				}
			}
			next = recs[len(recs)-1].Offset + 1
			return true, nil
		}
		lanes = append(lanes, l)
	}
	head, _ := json.Marshal(struct {
		EventSource      string `json:"eventSource"`
		EventSourceARN   string `json:"eventSourceArn,omitempty"`
		BootstrapServers string `json:"bootstrapServers"`
	}{env.EventSource, env.EventSourceARN, env.BootstrapServers})
	kind := laneKind{
		source: sevents.SourceKafka,
		merge: func(parts []part) []byte {
			batches := make([][]laneRec, len(parts))
			for i, p := range parts {
				batches[i] = p.recs()
			}
			return kafkaEvent(head, parts, batches)
		},
		partialResponses: r.s.reportFailures && r.s.kafkaMode == KafkaProvisioned,
		envelope: func(l *lane, batch []laneRec) []byte {
			return kafkaEvent(head, []part{{l: l, b: len(batch)}}, [][]laneRec{batch})
		},
		read: func(body []byte, l *lane, batch []laneRec) batchresponse.Reading {
			refs := make([]batchresponse.KafkaRef, len(batch))
			for i, rec := range batch {
				refs[i] = batchresponse.KafkaRef{Partition: l.name, Offset: rec.offset}
			}
			return batchresponse.Kafka(body, refs)
		},
		info: func(rec *sevents.OnFailureRecord, l *lane, batch []laneRec) {
			size := 0
			for _, b := range batch {
				size += len(b.event)
			}
			rec.KafkaBatchInfo = &sevents.KafkaBatchInfo{
				BatchSize:        len(batch),
				EventSourceARN:   env.EventSourceARN,
				BootstrapServers: env.BootstrapServers,
				PayloadSize:      size,
				RecordsInfo: map[string]sevents.KafkaPartitionRecords{l.name: {
					FirstRecordOffset:    strconv.FormatInt(batch[0].offset, 10),
					LastRecordOffset:     strconv.FormatInt(batch[len(batch)-1].offset, 10),
					FirstRecordTimestamp: isoTime(batch[0].arrival),
					LastRecordTimestamp:  isoTime(batch[len(batch)-1].arrival),
				}},
			}
		},
	}
	if r.opts.KafkaOnePartitionPerBatch {
		kind.merge = nil
	}
	return lanes, kind, nil
}

// kafkaEvent builds a Kafka event whose records map holds, for each part's
// lane, that part's batch, in order; head is the event's other fields.
func kafkaEvent(head []byte, parts []part, batches [][]laneRec) []byte {
	var b bytes.Buffer
	b.Write(head[:len(head)-1])
	b.WriteString(`,"records":{`)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		pk, _ := json.Marshal(p.l.name)
		b.Write(pk)
		b.WriteString(`:[`)
		for j, rec := range batches[i] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.Write(rec.event)
		}
		b.WriteByte(']')
	}
	b.WriteString("}}")
	return b.Bytes()
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// isoSeconds is isoTime without the fraction, as DynamoDB Streams on-failure
// records write arrival times.
func isoSeconds(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// runLanes runs every lane to the end. A stream runs in rounds
// (streamRound): every lane with work sends its next batch, all at once,
// as Lambda runs a shard's batches (one per shard, or ParallelizationFactor
// per shard) concurrently. Kafka lanes take turns filling one event
// (kafkaStep).
func (r *runner) runLanes(ctx context.Context, build func(context.Context) ([]*lane, laneKind, error)) error {
	r.shardOrder = map[string][]string{}
	lanes, kind, err := build(ctx)
	if err != nil {
		return err
	}
	defer r.checkpoints()
	for {
		// A round with no batch run and nothing read is the end. (A read
		// lands records in every sub-lane of its shard, so count reads as
		// progress too, whichever lane made them.)
		busy := false
		r.fetched = false
		if kind.merge == nil {
			if err := ctx.Err(); err != nil {
				return err
			}
			if busy, err = r.streamRound(ctx, kind, lanes); err != nil {
				return err
			}
		}
		for i := 0; kind.merge != nil && i < len(lanes); {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, worked, err := r.kafkaStep(ctx, kind, lanes[i:])
			if err != nil {
				return err
			}
			busy = busy || worked
			i += n
		}
		if !busy && !r.fetched {
			return nil
		}
	}
}

// checkpoints records, per shard or partition, the last record of the
// longest resolved prefix.
func (r *runner) checkpoints() {
	for shard, ids := range r.shardOrder {
		cp := ""
		for _, id := range ids {
			if f := r.fates[id]; f == "" || f == FateLeft {
				break
			}
			cp = id
		}
		if r.kafka != nil && cp != "" {
			cp = cp[len(shard)+1:] // the offset
		}
		r.report.Checkpoints[shard] = cp
	}
}

// part is one lane's share of a batch: records [a,b) of lane l, or the
// lane's pending split range.
type part struct {
	l         *lane
	a, b      int
	fromSplit bool
}

func (p part) recs() []laneRec { return p.l.recs[p.a:p.b] }

// laneCall is one invocation of a round: lane l's next batch (part p), or
// the final invoke of its tumbling window.
type laneCall struct {
	l       *lane
	final   bool
	p       part
	batch   []laneRec
	payload []byte
	c       *pendingInvoke
}

// streamRound runs one round of a stream's lanes: each lane, in order,
// readies its next batch (planStep) and has its invocation counted and
// its faults drawn; the invocations then run at once, each in an
// execution environment of its own (the i-th of the round in environment
// i: a bootstrap runs one process per environment, as Lambda runs one
// execution environment per concurrent batch); their answers are applied
// in lane order, so a run repeats whatever order they end in. A partition
// key lives in one lane and a lane has one batch in flight, so each key
// keeps its order. Lambda waits RetryDelay once before it retries what
// failed. It reports whether any lane had work.
func (r *runner) streamRound(ctx context.Context, kind laneKind, lanes []*lane) (bool, error) {
	var calls []*laneCall
	worked := false
	var stop error
	for _, l := range lanes {
		lc, w, err := r.planStep(ctx, kind, l)
		worked = worked || w
		if err != nil {
			return worked, err
		}
		if lc == nil {
			continue
		}
		c, err := r.beginInvoke(lc.payload)
		if err != nil {
			stop = err
			break
		}
		c.inv.Environment = len(calls) + 1
		lc.c = c
		calls = append(calls, lc)
	}
	if len(calls) == 1 {
		r.doInvoke(ctx, calls[0].c)
	} else {
		var wg sync.WaitGroup
		for _, lc := range calls {
			wg.Go(func() { r.doInvoke(ctx, lc.c) })
		}
		wg.Wait()
	}
	wait := false
	for _, lc := range calls {
		resp, reqID, err := r.endInvoke(lc.c)
		if err != nil {
			return true, err
		}
		w, err := r.settleStep(ctx, kind, lc, resp, reqID)
		if err != nil {
			return true, err
		}
		wait = wait || w
	}
	if stop != nil {
		return true, stop
	}
	if wait {
		return true, r.clock.Sleep(ctx, r.opts.RetryDelay)
	}
	return worked, nil
}

// planStep readies lane l's next invocation: its next batch, or the final
// invoke of its window. It returns nil when the lane has nothing to send
// now; worked says it did something (a give-up counts).
func (r *runner) planStep(ctx context.Context, kind laneKind, l *lane) (*laneCall, bool, error) {
	s := r.s
	ready, worked, err := r.prepare(ctx, kind, l, s.batchSize)
	if err != nil || !ready {
		return nil, worked, err
	}
	win := time.Duration(s.tumbling) * time.Second
	if win > 0 && len(l.split) == 0 && l.windowOpen && (l.early || l.pos >= len(l.recs) || window.Start(l.recs[l.pos].arrival, win) != l.window) {
		if l.pos > l.windowFrom && window.Expired(r.windowLimits(), l.recs[l.pos-1].arrival, r.clock.Now()) {
			return nil, true, r.giveUpWindow(ctx, kind, l, sevents.ConditionRecordAgeExceeded)
		}
		return &laneCall{l: l, final: true, payload: windowEvent(kind.envelope(l, nil), l, nil, win, true, l.early)}, true, nil
	}
	p, _, _ := r.bounds(l, s.batchSize, maxPayload-1024, true)
	batch := p.recs()
	payload := kind.envelope(l, batch)
	if win > 0 {
		if !l.windowOpen {
			l.window, l.windowOpen, l.windowFrom, l.state = window.Start(batch[0].arrival, win), true, p.a, nil
		}
		payload = windowEvent(payload, l, batch, win, false, false)
	}
	return &laneCall{l: l, p: p, batch: batch, payload: payload}, true, nil
}

// settleStep applies Lambda's rules to the answer of lc. wait says the
// lane retries, after RetryDelay.
func (r *runner) settleStep(ctx context.Context, kind laneKind, lc *laneCall, resp invocation.Response, reqID string) (bool, error) {
	if lc.final {
		return r.settleFinal(ctx, kind, lc, resp, reqID)
	}
	l, p, batch := lc.l, lc.p, lc.batch
	win := time.Duration(r.s.tumbling) * time.Second
	entry := kind.entry(l)
	entry.N, entry.RequestID = lc.c.n, reqID
	entry.IDs, entry.Result, entry.Bisect, entry.Retry, entry.Ms = ids(batch), resultOf(resp), p.fromSplit, l.retries, resp.Duration.Milliseconds()
	l.attempts++
	l.lastReq, l.lastResp = reqID, resp

	var v batchresponse.Reading
	var state json.RawMessage
	stateOK := true
	if win > 0 && !resp.Failed() {
		state, stateOK = window.State(resp.Payload)
	}
	if !stateOK {
		v = batchresponse.Reading{Kind: batchresponse.Whole, Reason: "the response carries no state (a tumbling window response must)"}
		entry.Result, entry.Error = ResultFunctionError, v.Reason
	} else {
		v = r.answer(kind, resp, batch, func(body []byte) batchresponse.Reading { return kind.read(body, l, batch) }, &entry)
	}
	if win > 0 && v.Kind != batchresponse.Whole {
		l.state = state
		l.early = len(state) > maxWindowState
	}
	r.trace(entry, resp)
	if v.Kind == batchresponse.Success {
		if err := r.maybeDuplicate(ctx, kind.entry(l), lc.payload, batch, lc.c.inv.Environment); err != nil {
			return false, err
		}
	}
	return r.settle(ctx, kind, p, v)
}

// kafkaStep runs one Kafka invocation whose event holds several
// partitions, as Lambda delivers them: lanes, from the first, each
// contribute their next batch while BatchSize (counted across partitions)
// and the payload limit allow. A lane whose batch does not fit starts the
// next invocation. The answer is read once, against every record of the
// event, and each lane settles its own part. kafkaStep returns how many
// lanes it took (at least one) and whether any had work.
func (r *runner) kafkaStep(ctx context.Context, kind laneKind, lanes []*lane) (int, bool, error) {
	s := r.s
	var parts []part
	count, size := s.batchSize, maxPayload-1024
	worked, n := false, 0
	for n < len(lanes) && count > 0 {
		l := lanes[n]
		ready, w, err := r.prepare(ctx, kind, l, count)
		if err != nil {
			return n + 1, worked, err
		}
		worked = worked || w
		if !ready {
			n++
			continue
		}
		keyCost := len(l.name) + 8 // "name":[ ... ],
		p, used, ok := r.bounds(l, count, size-keyCost, len(parts) == 0)
		if !ok {
			break // this lane starts the next invocation
		}
		parts = append(parts, p)
		count -= p.b - p.a
		size -= used + keyCost
		n++
	}
	if len(parts) == 0 {
		return max(n, 1), worked, nil
	}
	var batch []laneRec
	names := make([]string, len(parts))
	entry := TraceEntry{}
	for i, p := range parts {
		batch = append(batch, p.recs()...)
		names[i] = p.l.name
		entry.Bisect = entry.Bisect || p.fromSplit
		entry.Retry = max(entry.Retry, p.l.retries)
	}
	payload := kind.merge(parts)
	resp, reqID, err := r.invoke(ctx, payload, 1)
	if err != nil {
		return n, true, err
	}
	entry.Partition = strings.Join(names, ",")
	entry.IDs, entry.Result, entry.Ms = ids(batch), resultOf(resp), resp.Duration.Milliseconds()
	for _, p := range parts {
		p.l.attempts++
		p.l.lastReq, p.l.lastResp = reqID, resp
	}
	v := r.answer(kind, resp, batch, func(body []byte) batchresponse.Reading { return batchresponse.Kafka(body, kafkaRefs(parts)) }, &entry)
	r.trace(entry, resp)
	if v.Kind == batchresponse.Success {
		if err := r.maybeDuplicate(ctx, TraceEntry{Partition: entry.Partition}, payload, batch, 1); err != nil {
			return n, true, err
		}
	}
	wait, from := false, 0
	for _, p := range parts {
		w, err := r.settle(ctx, kind, p, partReading(v, from, from+p.b-p.a))
		if err != nil {
			return n, true, err
		}
		wait = wait || w
		from += p.b - p.a
	}
	if wait { // Lambda waits once before it retries, whatever the batch held
		return n, true, r.clock.Sleep(ctx, r.opts.RetryDelay)
	}
	return n, true, nil
}

// kafkaRefs lists the records of a Kafka batch, part after part.
func kafkaRefs(parts []part) []batchresponse.KafkaRef {
	var refs []batchresponse.KafkaRef
	for _, p := range parts {
		for _, rec := range p.recs() {
			refs = append(refs, batchresponse.KafkaRef{Partition: p.l.name, Offset: rec.offset})
		}
	}
	return refs
}

// partReading is the share of reading v (of a whole batch's answer) of
// the part holding the batch's records [from,to): a partial reading keeps
// the reported records of the part (renumbered from the part's start) and
// is a success for a part with none; a success or a whole failure holds
// for every part.
func partReading(v batchresponse.Reading, from, to int) batchresponse.Reading {
	if v.Kind != batchresponse.Partial {
		return v
	}
	var reported []int
	for _, i := range v.Reported {
		if i >= from && i < to {
			reported = append(reported, i-from)
		}
	}
	return batchresponse.PartialOrSuccess(reported)
}

// prepare readies lane l for its next batch: it fetches records, waits
// out the batching window for want records, and gives up on records past
// MaximumRecordAge. ready says the lane has a batch to send now; worked
// that it did something (a give-up counts).
func (r *runner) prepare(ctx context.Context, kind laneKind, l *lane, want int) (ready, worked bool, err error) {
	s := r.s
	if len(l.split) == 0 && len(l.recs)-l.pos < s.batchSize && !l.exhausted {
		more, err := l.more(ctx)
		if err != nil {
			return false, false, err
		}
		if !more {
			l.exhausted = true
		}
	}
	if len(l.split) == 0 && l.pos >= len(l.recs) && !l.windowOpen {
		return false, false, nil
	}
	if err := r.batchingWindow(ctx, l, want); err != nil {
		return false, false, err
	}
	// Records past MaximumRecordAge are given up on before they are sent.
	if s.maxAge >= 0 && kind.source != sevents.SourceKafka || s.maxAge >= 0 && s.kafkaMode == KafkaProvisioned {
		cutoff := r.clock.Now().Add(-time.Duration(s.maxAge) * time.Second)
		end := l.pos
		for end < len(l.recs) && l.recs[end].arrival.Before(cutoff) {
			end++
		}
		if end > l.pos {
			if err := r.giveUp(ctx, kind, l, l.pos, end, sevents.ConditionRecordAgeExceeded); err != nil {
				return false, false, err
			}
			return false, true, nil
		}
	}
	return true, true, nil
}

// bounds is lane l's next batch: its pending split range, or the records
// from its checkpoint, at most count of them and size bytes, one tumbling
// window's. With first, the batch is the first of its event and takes its
// first record whatever its size; otherwise a batch that does not fit is
// refused (ok false). used is the batch's size in bytes.
func (r *runner) bounds(l *lane, count, size int, first bool) (p part, used int, ok bool) {
	if len(l.split) > 0 {
		p = part{l: l, a: l.split[0][0], b: l.split[0][1], fromSplit: true}
		for _, rec := range p.recs() {
			used += len(rec.event) + 1
		}
		return p, used, first || p.b-p.a <= count && used <= size
	}
	win := time.Duration(r.s.tumbling) * time.Second
	a, b := l.pos, l.pos
	for b < len(l.recs) && b-a < count {
		if win > 0 && window.Start(l.recs[b].arrival, win) != window.Start(l.recs[a].arrival, win) {
			break // a batch holds one window's records
		}
		n := len(l.recs[b].event) + 1
		if (b > a || !first) && used+n > size {
			break
		}
		used += n
		b++
	}
	return part{l: l, a: a, b: b}, used, b > a
}

// answer reads a response as Lambda reads it for batch, filling the
// trace entry's result, error and reported records.
func (r *runner) answer(kind laneKind, resp invocation.Response, batch []laneRec, read func([]byte) batchresponse.Reading, entry *TraceEntry) batchresponse.Reading {
	v := batchresponse.Reading{Kind: batchresponse.Success}
	switch {
	case resp.Failed():
		v = batchresponse.Reading{Kind: batchresponse.Whole, Reason: "function error: " + or(resp.ErrorType, resp.FunctionError)}
	case kind.partialResponses:
		v = read(resp.Payload)
		if v.Kind == batchresponse.Whole {
			entry.Result = ResultFunctionError
			entry.Error = "invalid partial batch response: " + v.Reason
		}
	default:
		if pv := read(resp.Payload); pv.Kind == batchresponse.Partial {
			entry.Ignored = true // Lambda ignores a partial response without ReportBatchItemFailures
			entry.Reported = batchIDsAt(batch, pv.Reported)
			r.report.Totals.IgnoredResponses++
			r.report.Totals.IgnoredRecords += len(pv.Reported)
		}
	}
	switch v.Kind {
	case batchresponse.Partial:
		entry.Result = ResultPartial
		entry.Reported = batchIDsAt(batch, v.Reported)
	case batchresponse.Whole:
		if entry.Error == "" {
			entry.Error = v.Reason
		}
	}
	return v
}

// settle applies reading v, of part p, to p's lane. wait says the
// lane retries and Lambda waits RetryDelay first.
func (r *runner) settle(ctx context.Context, kind laneKind, p part, v batchresponse.Reading) (wait bool, err error) {
	s, l, a, b := r.s, p.l, p.a, p.b
	switch v.Kind {
	case batchresponse.Success:
		r.succeed(l, a, b, p.fromSplit)
	case batchresponse.Partial:
		k := a + v.Reported[0] // Lambda restarts at the lowest reported record
		progress := k > l.pos
		r.succeed(l, a, k, false)
		if p.fromSplit {
			l.split[0][0] = k
		}
		// Recorded against AWS: a partial response that moves the
		// checkpoint starts a fresh count (the next batch, from k, is its
		// first attempt); one at the batch's first record counts as a
		// retry, like a function error.
		if progress {
			return false, nil
		}
		return r.useRetry(ctx, kind, l, b)
	case batchresponse.Whole:
		if s.bisect && b-a > 1 && (kind.source != sevents.SourceKafka || s.kafkaMode == KafkaProvisioned) {
			m := a + (b-a)/2
			rest := l.split
			if p.fromSplit {
				rest = rest[1:]
			}
			l.split = append([][2]int{{a, m}, {m, b}}, rest...)
			r.report.Totals.Bisections++
			return false, nil
		}
		return r.useRetry(ctx, kind, l, b)
	}
	return false, nil
}

// batchingWindow waits, on a real source, up to
// MaximumBatchingWindowInSeconds for a short batch to fill to want records,
// as Lambda does before it invokes. An emulated source holds every record
// already.
func (r *runner) batchingWindow(ctx context.Context, l *lane, want int) error {
	s := r.s
	if r.refs != nil || s.window == 0 || len(l.split) > 0 || len(l.recs)-l.pos >= want || l.waited == l.pos+1 {
		return nil
	}
	l.waited = l.pos + 1
	until := r.clock.Now().Add(time.Duration(s.window) * time.Second)
	for len(l.recs)-l.pos < want {
		left := until.Sub(r.clock.Now())
		if left <= 0 {
			return nil
		}
		if err := r.clock.Sleep(ctx, min(left, 200*time.Millisecond)); err != nil {
			return err
		}
		more, err := l.more(ctx)
		if err != nil {
			return err
		}
		if more {
			l.exhausted = false
		}
	}
	return nil
}

// windowEvent adds the tumbling window fields to a stream event.
func windowEvent(payload []byte, l *lane, batch []laneRec, win time.Duration, final, early bool) []byte {
	var src struct {
		ARN string `json:"eventSourceARN"`
	}
	if len(batch) > 0 {
		json.Unmarshal(batch[0].event, &src)
	} else if len(l.recs) > 0 {
		json.Unmarshal(l.recs[0].event, &src)
	}
	return window.Event(payload, window.Fields{Start: l.window, Length: win, State: l.state, Shard: l.name, ARN: src.ARN,
		Final: final, TermEarly: early})
}

// settleFinal applies the answer of lc, the final invoke that closes its lane's
// open window: an invoke without records, flagged final, carrying the
// window's state. A failing one is retried within the mapping's limits, as
// AWS says tumbling windows do ("Tumbling windows fully support the
// existing retry policies maxRetryAttempts and maxRecordAge",
// services-kinesis-windows): past MaximumRetryAttempts, or once even the
// window's newest record is older than MaximumRecordAgeInSeconds
// (planStep), the window is given up (giveUpWindow).
// Options.WindowFinalUntilSuccess retries it until it succeeds instead.
// A window whose state outgrew 1 MB is closed early (flagged
// isWindowTerminatedEarly) and goes on with a fresh state, the reading of
// aws-lambda-go's documentation of the flag.
func (r *runner) settleFinal(ctx context.Context, kind laneKind, lc *laneCall, resp invocation.Response, reqID string) (bool, error) {
	l := lc.l
	entry := kind.entry(l)
	entry.N, entry.RequestID = lc.c.n, reqID
	entry.IDs, entry.Result, entry.Final, entry.Retry, entry.Ms = []string{}, resultOf(resp), true, l.retries, resp.Duration.Milliseconds()
	if _, ok := window.State(resp.Payload); !resp.Failed() && !ok {
		entry.Result, entry.Error = ResultFunctionError, "the response carries no state (a tumbling window response must)"
	}
	l.attempts++
	l.lastReq, l.lastResp = reqID, resp
	r.trace(entry, resp)
	if entry.Result != ResultSuccess {
		l.retries++
		r.report.Totals.Retries++
		if window.Exhausted(r.windowLimits(), l.retries) {
			r.report.Totals.Retries--
			return false, r.giveUpWindow(ctx, kind, l, sevents.ConditionRetryAttemptsExhausted)
		}
		return true, nil
	}
	l.retries, l.attempts = 0, 0
	closeWindow(l)
	return false, nil
}

// windowLimits is the mapping's retry policy as it applies to a window's
// final invoke.
func (r *runner) windowLimits() window.Limits {
	lim := window.Limits{MaxRetries: r.s.maxRetries, MaxAge: time.Duration(r.s.maxAge) * time.Second, UntilSuccess: r.opts.WindowFinalUntilSuccess}
	if r.s.maxAge < 0 {
		lim.MaxAge = -1
	}
	return lim
}

// giveUpWindow ends a window whose final invocation was given up: the
// window's records go to the on-failure destination, in one record that
// names them all, and end on-failure even where their own invocations
// succeeded, because the result they went into was never written. (AWS
// does not say what Lambda sends then; this is the runner's reading, the
// one that never counts a record processed whose result was lost.)
func (r *runner) giveUpWindow(ctx context.Context, kind laneKind, l *lane, condition string) error {
	if l.pos > l.windowFrom {
		if err := r.giveUp(ctx, kind, l, l.windowFrom, l.pos, condition); err != nil {
			return err
		}
	}
	l.retries, l.attempts = 0, 0
	closeWindow(l)
	return nil
}

// closeWindow ends lane l's open window; an early close (the state outgrew
// 1 MB) keeps it open with a fresh state.
func closeWindow(l *lane) {
	l.windowOpen, l.state = l.early, nil
	l.early = false
	l.windowFrom = l.pos
}

// succeed resolves records [a,k) as processed and moves the lane on.
func (r *runner) succeed(l *lane, a, k int, fromSplit bool) {
	for i := a; i < k; i++ {
		r.resolve(l.recs[i].id, FateProcessed)
	}
	if k > l.pos {
		l.pos = k
		l.retries, l.attempts = 0, 0
	}
	if fromSplit && len(l.split) > 0 {
		l.split = l.split[1:]
	}
}

// useRetry consumes a retry of the record at l.pos; when the retries are
// used up, the records up to end are given up on. wait says the lane
// retries, after RetryDelay.
func (r *runner) useRetry(ctx context.Context, kind laneKind, l *lane, end int) (wait bool, err error) {
	l.retries++
	r.report.Totals.Retries++
	if r.s.maxRetries >= 0 && l.retries > r.s.maxRetries {
		r.report.Totals.Retries--
		return false, r.giveUp(ctx, kind, l, l.pos, end, sevents.ConditionRetryAttemptsExhausted)
	}
	return true, nil
}

// giveUp sends the on-failure record for [a,b), resolves those records, and
// moves the checkpoint past them.
func (r *runner) giveUp(ctx context.Context, kind laneKind, l *lane, a, b int, condition string) error {
	batch := l.recs[a:b]
	rec := sevents.OnFailureRecord{
		RequestContext: sevents.OnFailureRequestContext{
			RequestID:              l.lastReq,
			FunctionARN:            r.functionARN,
			Condition:              condition,
			ApproximateInvokeCount: l.attempts,
		},
		Version:   "1.0",
		Timestamp: isoTime(r.clock.Now()),
	}
	if condition == sevents.ConditionRecordAgeExceeded {
		// Recorded against AWS: no responseContext, an invoke count of 1
		// and a request id of its own, whatever invocations came before.
		r.ageOuts++
		rec.RequestContext.RequestID = fmt.Sprintf("%08x-0000-4000-a000-%012x", r.opts.Seed&0xffffffff, r.ageOuts)
		rec.RequestContext.ApproximateInvokeCount = 1
	} else {
		rec.ResponseContext = &sevents.OnFailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST"}
		if l.lastResp.Failed() {
			unhandled := sevents.FunctionErrorUnhandled
			rec.ResponseContext.FunctionError = &unhandled
		} // else the batch failed through its response: functionError is null
	}
	kind.info(&rec, l, batch)
	if err := r.sendOnFailure(ctx, rec, onfailure.FailedBatch{Shard: l.name, Event: kind.envelope(l, batch)}); err != nil {
		return fmt.Errorf("localtest: on-failure destination: %w", err)
	}
	for _, x := range batch {
		r.resolve(x.id, FateOnFailure)
	}
	// Drop split ranges that the given-up records cover.
	var split [][2]int
	for _, sp := range l.split {
		if sp[1] > b {
			split = append(split, [2]int{max(sp[0], b), sp[1]})
		}
	}
	l.split = split
	l.pos = max(l.pos, b)
	l.retries, l.attempts = 0, 0
	return nil
}

// maybeDuplicate delivers a batch that succeeded once more, as Lambda may,
// at the injected DuplicateRate, in execution environment env. entry names
// the batch's lanes.
func (r *runner) maybeDuplicate(ctx context.Context, entry TraceEntry, payload []byte, batch []laneRec, env int) error {
	if f := r.opts.Faults.DuplicateRate; f <= 0 || r.rnd.Float64() >= f {
		return nil
	}
	resp, _, err := r.invoke(ctx, payload, env)
	if err != nil {
		return err
	}
	r.report.Totals.Duplicates++
	entry.IDs, entry.Result, entry.Duplicate, entry.Ms = ids(batch), resultOf(resp), true, resp.Duration.Milliseconds()
	r.trace(entry, resp)
	return nil
}

func ids(batch []laneRec) []string {
	out := make([]string, len(batch))
	for i, rec := range batch {
		out[i] = rec.id
	}
	return out
}

func batchIDsAt(batch []laneRec, idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = batch[j].id
	}
	return out
}
