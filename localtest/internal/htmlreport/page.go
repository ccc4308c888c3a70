package htmlreport

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/localtest/internal/checks"
)

// Input is a run, as the page is made of it.
type Input struct {
	// Title heads the page ("kinesis mapping").
	Title string
	// Generated is when the run ended.
	Generated time.Time
	// Source is the mapping's event source (events.Source), which names
	// its lanes: shards, partitions, message groups or the queue.
	Source string
	// Results and Fates are the words for how an invocation and a record
	// end, in the order the page counts them (localtest's Result
	// constants and Fates()); a word the run uses that they lack is
	// counted after them.
	Results []string
	Fates   []string
	// Held is the run's verdict (Report.Held).
	Held bool
	// Report is the run's report, as report.json holds it.
	Report json.RawMessage
	// Trace is the run's invocations, each as a trace.jsonl line.
	Trace []json.RawMessage
	// Records are every record of the run, in source order.
	Records []Record
	// LaneOrder is, for streams and Kafka, each shard's or partition's
	// record ids in order, filtered records included: its checkpoint
	// moves along it.
	LaneOrder map[string][]string
}

// Record is one record of the run.
type Record struct {
	ID        string // its id in the source, as fates and the trace name it
	Key       string // its ordering key
	PayloadID string // the id its payload carries, if any
	Line      int    // its records-file line, or 0
	Input     int    // its 1-based position among the records given in Go, or 0
	// Lane is its shard, partition or message group; "" for a queue.
	Lane string
	// Of is, for a KPL user record, its Kinesis record's sequence number:
	// the id the trace, the checkpoints and on-failure records name it by
	// (with its siblings); Sub is its sub-sequence number.
	Of  string
	Sub int
}

// queueLane names the one lane of a standard queue.
const queueLane = "queue"

// report is what the page reads of report.json.
type report struct {
	Mapping          json.RawMessage   `json:"mapping"`
	Totals           json.RawMessage   `json:"totals"`
	Failure          json.RawMessage   `json:"failure"`
	LastFailed       json.RawMessage   `json:"lastFailedInvocation"`
	Kills            []json.RawMessage `json:"kills"`
	OnFailureRecords []json.RawMessage `json:"onFailureRecords"`
	Checkpoints      map[string]string `json:"checkpoints"`
	Fates            map[string]string `json:"fates"`
	Unexpected       []struct {
		ID       string `json:"id"`
		Expected string `json:"expected"`
	} `json:"unexpected"`
	Invariants []struct {
		Name       string   `json:"name"`
		Status     string   `json:"status"`
		Reason     string   `json:"reason"`
		Violations []string `json:"violations"`
	} `json:"invariants"`
	Stopped string `json:"stopped"`
}

// entry is what the page reads of a trace entry; the fields it does not
// know are kept to be shown as they are.
type entry struct {
	N            int      `json:"n"`
	RequestID    string   `json:"requestId"`
	Shard        string   `json:"shard"`
	Partition    string   `json:"partition"`
	Groups       []string `json:"groups"`
	IDs          []string `json:"ids"`
	Result       string   `json:"result"`
	Reported     []string `json:"reported"`
	Bisect       bool     `json:"bisect"`
	Retry        int      `json:"retry"`
	Duplicate    bool     `json:"duplicate"`
	Final        bool     `json:"final"`
	Ignored      bool     `json:"ignored"`
	Error        string   `json:"error"`
	ErrorType    string   `json:"errorType"`
	ErrorMessage string   `json:"errorMessage"`
	Killed       string   `json:"killed"`
	Ms           int64    `json:"ms"`
	extra        map[string]json.RawMessage
}

var knownFields = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range []string{"n", "requestId", "shard", "partition", "groups", "ids", "result", "reported", "bisect", "retry",
		"duplicate", "final", "ignored", "error", "errorType", "errorMessage", "killed", "ms"} {
		m[f] = true
	}
	return m
}()

func readEntry(raw json.RawMessage) (entry, error) {
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return e, err
	}
	for k, v := range all {
		if !knownFields[k] {
			if e.extra == nil {
				e.extra = map[string]json.RawMessage{}
			}
			e.extra[k] = v
		}
	}
	return e, nil
}

// lanesOf names the lanes an entry names itself (for an invocation
// without records: a tumbling window's final invoke).
func (e entry) lanesOf() []string {
	switch {
	case e.Shard != "":
		return []string{e.Shard}
	case e.Partition != "":
		return strings.Split(e.Partition, ",")
	case len(e.Groups) > 0:
		return e.Groups
	}
	return []string{queueLane}
}

// Invocation flags in the page's data.
const (
	flagBisect = 1 << iota
	flagDuplicate
	flagFinal
	flagIgnored
)

// data is the page's JSON document. Records and invocations are columns
// (one array per field) to keep a large run small; record ids and request
// ids are front-coded (the length shared with the previous one, then the
// rest), since a shard's sequence numbers share most of their digits.
type data struct {
	Title       string            `json:"title"`
	Generated   string            `json:"generated"`
	Source      string            `json:"source"`
	LaneKind    string            `json:"laneKind"`
	Held        bool              `json:"held"`
	Stopped     string            `json:"stopped,omitempty"`
	Failure     json.RawMessage   `json:"failure,omitempty"`
	Mapping     json.RawMessage   `json:"mapping,omitempty"`
	Totals      json.RawMessage   `json:"totals,omitempty"`
	LastFailed  json.RawMessage   `json:"lastFailed,omitempty"`
	Results     []string          `json:"results"`
	Fates       []string          `json:"fates"`
	Lanes       []string          `json:"lanes"`
	Ordered     []bool            `json:"ordered"`
	Checkpoints map[string]string `json:"checkpoints"`
	Recs        recCols           `json:"recs"`
	Invs        invCols           `json:"invs"`
	Marks       marks             `json:"marks"`
	Invariants  []invariant       `json:"invariants"`
	OnFailure   []json.RawMessage `json:"onFailure"`
	Kills       []json.RawMessage `json:"kills"`
	Retries     int               `json:"retries"`
	Strs        []string          `json:"strs"`
}

type recCols struct {
	IDPre []int    `json:"idp"`
	IDSuf []string `json:"ids"`
	Line  []int    `json:"line"`  // each the difference from the previous record's
	Input []int    `json:"input"` // likewise
	PID   []string `json:"pid"`
	Key   []int    `json:"key"` // index in Keys, or -1: the key is the record's id
	Keys  []string `json:"keys"`
	Lane  []int    `json:"lane"`
	Fate  []int    `json:"fate"`   // index in Fates, or -1: no fate
	Exp   [][2]int `json:"expect"` // [record, fate]: records whose fate was not the one expected
	User  [][3]int `json:"user"`   // [record, string, sub]: a KPL user record, the Kinesis record it is of, its sub-sequence number
}

type invCols struct {
	N      []int             `json:"n"`
	ReqPre []int             `json:"reqp"`
	ReqSuf []string          `json:"reqs"`
	Res    []int             `json:"res"`
	Flags  []int             `json:"fl"`
	Retry  []int             `json:"retry"`
	Ms     []int64           `json:"ms"`
	Lanes  [][]int           `json:"lanes"`
	Recs   [][]int           `json:"recs"` // ranges of record indexes: start, length, start, length...
	Rep    [][2]int          `json:"rep"`  // [invocation, record] reported as failed
	Text   [][3]int          `json:"text"` // [invocation, field, string]: field 0 error, 1 errorType, 2 errorMessage, 3 killed (the page's TEXT)
	Kill   [][2]int          `json:"kill"` // [invocation, index in kills]
	Extra  []json.RawMessage `json:"extra"`
	ExtraI []int             `json:"extraI"` // the invocation each Extra belongs to
}

type marks struct {
	Split [][2]int `json:"split"` // [invocation, lane]
	CP    [][3]int `json:"cp"`    // [slot, lane, record]: the checkpoint moved to record
	OF    []ofMark `json:"of"`
	Fate  [][3]int `json:"fate"` // [invocation, record, fate]: settled there, other than processed or given up
	Filt  [][3]int `json:"filt"` // [slot, lane, record]
}

type ofMark struct {
	Slot  int   `json:"s"`
	Lane  int   `json:"l"`
	Recs  []int `json:"r"` // ranges
	Index int   `json:"i"` // in onFailure
}

type invariant struct {
	Name       string      `json:"name"`
	Status     string      `json:"status"`
	Reason     string      `json:"reason,omitempty"`
	Violations []violation `json:"violations,omitempty"`
}

type violation struct {
	Text string `json:"text"`
	Recs []int  `json:"recs,omitempty"`
}

// laneKind is what a source calls its lanes.
func laneKind(source string) string {
	switch source {
	case "kinesis", "dynamodb":
		return "shard"
	case "kafka":
		return "partition"
	case "sqs-fifo":
		return "message group"
	}
	return "queue"
}

// builder holds the indexes while the data is made.
type builder struct {
	d      *data
	byID   map[string]int
	engine map[string][]int // the records an id of the trace stands for (a KPL aggregate's user records)
	lane   map[string]int
	recs   []Record
	fate   []string
	strIdx map[string]int
}

func (b *builder) laneOf(name string) int {
	if name == "" {
		name = queueLane
	}
	if l, ok := b.lane[name]; ok {
		return l
	}
	b.lane[name] = len(b.d.Lanes)
	b.d.Lanes = append(b.d.Lanes, name)
	b.d.Ordered = append(b.d.Ordered, false)
	return b.lane[name]
}

func (b *builder) record(r Record) int {
	if i, ok := b.byID[r.ID]; ok {
		return i
	}
	b.byID[r.ID] = len(b.recs)
	b.recs = append(b.recs, r)
	return len(b.recs) - 1
}

func (b *builder) str(s string) int {
	if i, ok := b.strIdx[s]; ok {
		return i
	}
	b.strIdx[s] = len(b.d.Strs)
	b.d.Strs = append(b.d.Strs, s)
	return b.strIdx[s]
}

// words is list, then the words of seen it lacks, in the order first seen.
func words(list []string, seen []string) []string {
	out := slices.Clone(list)
	for _, w := range seen {
		if w != "" && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// build makes the page's data of a run.
func build(in Input) (*data, error) {
	var rep report
	if len(in.Report) > 0 {
		if err := json.Unmarshal(in.Report, &rep); err != nil {
			return nil, fmt.Errorf("htmlreport: read the report: %w", err)
		}
	}
	entries := make([]entry, len(in.Trace))
	for i, raw := range in.Trace {
		e, err := readEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("htmlreport: read trace entry %d: %w", i+1, err)
		}
		entries[i] = e
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return cmp.Compare(a.N, b.N) })

	d := &data{Title: in.Title, Source: in.Source, LaneKind: laneKind(in.Source), Held: in.Held, Stopped: rep.Stopped,
		Failure: nullable(rep.Failure), Mapping: nullable(rep.Mapping), Totals: nullable(rep.Totals), LastFailed: nullable(rep.LastFailed),
		Checkpoints: rep.Checkpoints, OnFailure: rep.OnFailureRecords, Kills: rep.Kills}
	if !in.Generated.IsZero() {
		d.Generated = in.Generated.UTC().Format(time.RFC3339)
	}
	b := &builder{d: d, byID: map[string]int{}, engine: map[string][]int{}, lane: map[string]int{}, strIdx: map[string]int{}}

	// Records: each ordered lane's in its order (so a batch is a range and
	// neighbouring ids share their prefix), lanes by name; then the others
	// in source order; then ids only the trace names. A KPL aggregate's
	// place holds its user records.
	src := map[string]Record{}
	users := map[string][]Record{}
	for _, r := range in.Records {
		if r.Of != "" {
			users[r.Of] = append(users[r.Of], r)
		} else if _, ok := src[r.ID]; !ok {
			src[r.ID] = r
		}
	}
	laneNames := slices.SortedFunc(maps.Keys(in.LaneOrder), naturalCompare)
	for _, name := range laneNames {
		l := b.laneOf(name)
		d.Ordered[l] = true
		for _, id := range in.LaneOrder[name] {
			if us, ok := users[id]; ok {
				for _, u := range us {
					u.Lane = name
					b.record(u)
				}
				continue
			}
			r, ok := src[id]
			if !ok {
				r = Record{ID: id}
			}
			r.Lane = name
			b.record(r)
		}
	}
	for _, r := range in.Records {
		b.laneOf(r.Lane)
		b.record(r)
	}
	for i, r := range b.recs {
		id := r.ID
		if r.Of != "" {
			id = r.Of
		}
		b.engine[id] = append(b.engine[id], i)
	}
	for _, e := range entries {
		lanes := e.lanesOf()
		for _, id := range e.IDs {
			if _, ok := b.engine[id]; !ok {
				b.laneOf(lanes[0])
				b.engine[id] = []int{b.record(Record{ID: id, Lane: lanes[0]})}
			}
		}
	}
	for id := range rep.Fates {
		if _, ok := b.byID[id]; !ok {
			b.record(Record{ID: id})
		}
	}
	recLane := make([]int, len(b.recs))
	b.fate = make([]string, len(b.recs))
	var seenFates []string
	for i, r := range b.recs {
		recLane[i] = b.laneOf(r.Lane)
		b.fate[i] = rep.Fates[r.ID]
		seenFates = append(seenFates, b.fate[i])
	}
	d.Fates = words(in.Fates, seenFates)
	var seenResults []string
	for _, e := range entries {
		seenResults = append(seenResults, e.Result)
	}
	d.Results = words(in.Results, seenResults)
	b.columns(recLane, rep)

	// Invocations.
	invs := make([]inv, len(entries))
	killAt := map[int]int{}
	for k, raw := range rep.Kills {
		var kill struct {
			N int `json:"n"`
		}
		if json.Unmarshal(raw, &kill) == nil {
			killAt[kill.N] = k
		}
	}
	reqAt := map[string]int{}
	prevReq := ""
	c := &d.Invs
	for i, e := range entries {
		v := inv{result: e.Result, bisect: e.Bisect, dup: e.Duplicate}
		for _, id := range e.IDs {
			v.recs = append(v.recs, b.engine[id]...)
		}
		for _, id := range e.Reported {
			for _, r := range b.engine[id] {
				v.reported = append(v.reported, r)
				c.Rep = append(c.Rep, [2]int{i, r})
			}
		}
		invs[i] = v
		if !e.Duplicate && e.RequestID != "" {
			reqAt[e.RequestID] = i
		}
		c.N = append(c.N, e.N)
		p, s := frontCode(prevReq, e.RequestID)
		prevReq = e.RequestID
		c.ReqPre, c.ReqSuf = append(c.ReqPre, p), append(c.ReqSuf, s)
		c.Res = append(c.Res, slices.Index(d.Results, e.Result))
		fl := 0
		for _, f := range []struct {
			on   bool
			flag int
		}{{e.Bisect, flagBisect}, {e.Duplicate, flagDuplicate}, {e.Final, flagFinal}, {e.Ignored, flagIgnored}} {
			if f.on {
				fl |= f.flag
			}
		}
		c.Flags = append(c.Flags, fl)
		c.Retry = append(c.Retry, e.Retry)
		c.Ms = append(c.Ms, e.Ms)
		var lanes []int
		for _, r := range v.recs {
			if !slices.Contains(lanes, recLane[r]) {
				lanes = append(lanes, recLane[r])
			}
		}
		if len(lanes) == 0 {
			for _, name := range e.lanesOf() {
				lanes = append(lanes, b.laneOf(name))
			}
		}
		c.Lanes = append(c.Lanes, lanes)
		c.Recs = append(c.Recs, ranges(v.recs))
		for f, text := range []string{e.Error, e.ErrorType, e.ErrorMessage, e.Killed} {
			if text != "" {
				c.Text = append(c.Text, [3]int{i, f, b.str(text)})
			}
		}
		if k, ok := killAt[e.N]; ok {
			c.Kill = append(c.Kill, [2]int{i, k})
		}
		if len(e.extra) > 0 {
			raw, _ := json.Marshal(e.extra)
			c.Extra = append(c.Extra, raw)
			c.ExtraI = append(c.ExtraI, i)
		}
	}

	// What the trace implies: splits, retries, where records were given
	// up on, checkpoints, fates settled, filtered records.
	byLane := laneInvs(invs, recLane, len(d.Lanes))
	d.Marks.Split = splits(invs, recLane, byLane)
	retries := make([]int, len(entries))
	for i, e := range entries {
		retries[i] = e.Retry
	}
	if !strings.HasPrefix(in.Source, "sqs") {
		d.Retries = retriesConsumed(retries, byLane)
	}
	pos := make([]int, len(b.recs))
	order := make([][]int, len(d.Lanes))
	for i := range b.recs {
		if l := recLane[i]; d.Ordered[l] {
			pos[i] = len(order[l])
			order[l] = append(order[l], i)
		}
	}
	var placed []placement
	for k, raw := range rep.OnFailureRecords {
		at, l, recs, ok := b.onFailureRecords(raw, reqAt, order)
		if !ok {
			continue
		}
		p := placeOnFailure(at, l, recs, invs, recLane, pos, byLane)
		placed = append(placed, p)
		d.Marks.OF = append(d.Marks.OF, ofMark{Slot: p.slot, Lane: l, Recs: ranges(recs), Index: k})
	}
	last := lastDelivery(invs, len(b.recs))
	at := resolvedAt(b.fate, last, placed)
	var ordered [][]int
	for l := range d.Lanes {
		if d.Ordered[l] {
			ordered = append(ordered, order[l])
		} else {
			ordered = append(ordered, nil)
		}
	}
	for _, a := range checkpoints(ordered, at) {
		d.Marks.CP = append(d.Marks.CP, [3]int{a.slot, a.lane, a.rec})
	}
	var filtered []int
	for r, f := range b.fate {
		switch f {
		case checks.Filtered:
			filtered = append(filtered, r)
		case "", checks.Processed, checks.OnFailure, checks.Left:
		default:
			if last[r] >= 0 {
				d.Marks.Fate = append(d.Marks.Fate, [3]int{last[r], r, slices.Index(d.Fates, f)})
			}
		}
	}
	for _, m := range filteredMarks(filtered, recLane, pos, d.Ordered, invs, byLane) {
		d.Marks.Filt = append(d.Marks.Filt, [3]int{m.slot, m.lane, m.rec})
	}

	// Invariants, each violation with the records it names.
	byLine, byInput := map[place]int{}, map[place]int{}
	for i, r := range b.recs {
		at := place{r.Line, -1}
		if r.Of != "" {
			at.sub = r.Sub
		}
		if r.Line > 0 {
			byLine[at] = i
		}
		if r.Input > 0 {
			at.n = r.Input
			byInput[at] = i
		}
	}
	for _, iv := range rep.Invariants {
		out := invariant{Name: iv.Name, Status: iv.Status, Reason: iv.Reason}
		for _, v := range iv.Violations {
			out.Violations = append(out.Violations, violation{Text: v, Recs: linkViolation(v, byLine, byInput, b.byID)})
		}
		d.Invariants = append(d.Invariants, out)
	}
	d.noNulls()
	return d, nil
}

// noNulls makes every list of the data a list, empty or not, so the page
// never meets a null where it reads an array.
func (d *data) noNulls() {
	empty(&d.Invariants)
	empty(&d.OnFailure)
	empty(&d.Kills)
	empty(&d.Strs)
	empty(&d.Lanes)
	empty(&d.Ordered)
	c := &d.Invs
	empty(&c.N)
	empty(&c.ReqPre)
	empty(&c.ReqSuf)
	empty(&c.Res)
	empty(&c.Flags)
	empty(&c.Retry)
	empty(&c.Ms)
	empty(&c.Lanes)
	empty(&c.Recs)
	empty(&c.Rep)
	empty(&c.Text)
	empty(&c.Kill)
	empty(&c.Extra)
	empty(&c.ExtraI)
	r := &d.Recs
	empty(&r.IDPre)
	empty(&r.IDSuf)
	empty(&r.Line)
	empty(&r.Input)
	empty(&r.PID)
	empty(&r.Key)
	empty(&r.Keys)
	empty(&r.Lane)
	empty(&r.Fate)
	empty(&r.Exp)
	empty(&r.User)
	m := &d.Marks
	empty(&m.Split)
	empty(&m.CP)
	empty(&m.OF)
	empty(&m.Fate)
	empty(&m.Filt)
	for i := range d.Invs.Lanes {
		empty(&d.Invs.Lanes[i])
	}
	if d.Checkpoints == nil {
		d.Checkpoints = map[string]string{}
	}
}

func empty[T any](s *[]T) {
	if *s == nil {
		*s = []T{}
	}
}

// columns fills the records' columns.
func (b *builder) columns(recLane []int, rep report) {
	c := &b.d.Recs
	keys := map[string]int{}
	prevID, prevLine, prevInput := "", 0, 0
	for i, r := range b.recs {
		p, s := frontCode(prevID, r.ID)
		prevID = r.ID
		c.IDPre, c.IDSuf = append(c.IDPre, p), append(c.IDSuf, s)
		c.Line = append(c.Line, r.Line-prevLine)
		c.Input = append(c.Input, r.Input-prevInput)
		prevLine, prevInput = r.Line, r.Input
		c.PID = append(c.PID, r.PayloadID)
		k := -1
		if r.Key != r.ID {
			var ok bool
			if k, ok = keys[r.Key]; !ok {
				k = len(c.Keys)
				keys[r.Key] = k
				c.Keys = append(c.Keys, r.Key)
			}
		}
		c.Key = append(c.Key, k)
		c.Lane = append(c.Lane, recLane[i])
		c.Fate = append(c.Fate, slices.Index(b.d.Fates, b.fate[i]))
	}
	for i, r := range b.recs {
		if r.Of != "" {
			c.User = append(c.User, [3]int{i, b.str(r.Of), r.Sub})
		}
	}
	for _, u := range rep.Unexpected {
		if r, ok := b.byID[u.ID]; ok {
			c.Exp = append(c.Exp, [2]int{r, slices.Index(b.d.Fates, u.Expected)})
		}
	}
}

// onFailureRecords reads which lane and records an on-failure record
// names, and the invocation whose request id it carries (-1: none of the
// run's). A record it cannot place (an unknown shape) is listed on the
// page but not marked.
func (b *builder) onFailureRecords(raw json.RawMessage, reqAt map[string]int, order [][]int) (at, lane int, recs []int, ok bool) {
	var of struct {
		RequestContext struct {
			RequestID string `json:"requestId"`
		} `json:"requestContext"`
		Kinesis *streamInfo `json:"KinesisBatchInfo"`
		DDB     *streamInfo `json:"DDBStreamInfo"`
		Kafka   *struct {
			RecordsInfo map[string]struct {
				First string `json:"firstRecordOffset"`
				Last  string `json:"lastRecordOffset"`
			} `json:"recordsInfo"`
		} `json:"KafkaBatchInfo"`
	}
	if json.Unmarshal(raw, &of) != nil {
		return 0, 0, nil, false
	}
	at = -1
	if i, ok := reqAt[of.RequestContext.RequestID]; ok {
		at = i
	}
	var name, first, last string
	switch {
	case of.Kinesis != nil:
		name, first, last = of.Kinesis.ShardID, of.Kinesis.Start, of.Kinesis.End
	case of.DDB != nil:
		name, first, last = of.DDB.ShardID, of.DDB.Start, of.DDB.End
	case of.Kafka != nil && len(of.Kafka.RecordsInfo) == 1:
		for p, ri := range of.Kafka.RecordsInfo {
			name, first, last = p, p+"@"+ri.First, p+"@"+ri.Last
		}
	default:
		return 0, 0, nil, false
	}
	l, known := b.lane[name]
	if !known || !b.d.Ordered[l] {
		return 0, 0, nil, false
	}
	fs, ls := b.engine[first], b.engine[last]
	if len(fs) == 0 || len(ls) == 0 {
		return 0, 0, nil, false
	}
	fi, li := fs[0], ls[len(ls)-1]
	in := false
	for _, r := range order[l] {
		if r == fi {
			in = true
		}
		if in && b.fate[r] != checks.Filtered {
			recs = append(recs, r)
		}
		if r == li {
			break
		}
	}
	return at, l, recs, len(recs) > 0
}

type streamInfo struct {
	ShardID string `json:"shardId"`
	Start   string `json:"startSequenceNumber"`
	End     string `json:"endSequenceNumber"`
}

// naturalCompare orders names with their numbers as numbers, so
// partition orders-2 comes before orders-10 (names equal so, such as
// orders-2 and orders-02, as strings).
func naturalCompare(a, b string) int {
	if c := natural(a, b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func natural(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// frontCode is s as the length it shares with prev and the rest.
func frontCode(prev, s string) (int, string) {
	n := 0
	for n < len(prev) && n < len(s) && prev[n] == s[n] {
		n++
	}
	return n, s[n:]
}

// ranges writes ascending runs of indexes as start, length pairs.
func ranges(idx []int) []int {
	out := []int{}
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && idx[j] == idx[j-1]+1 {
			j++
		}
		out = append(out, idx[i], j-i)
		i = j
	}
	return out
}

func nullable(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

//go:embed assets/report.js
var script string

//go:embed assets/report.css
var style string

// csp is the page's Content-Security-Policy: nothing may be fetched, and
// only the page's own script and style (by their hashes) run.
func csp() string {
	h := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return "default-src 'none'; script-src " + h(script) + "; style-src " + h(style) + "; img-src data:; base-uri 'none'; form-action 'none'"
}

// Write writes the page of a run to w.
func Write(w io.Writer, in Input) error {
	d, err := build(in)
	if err != nil {
		return err
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js) // escapes <, > and &: the document cannot close its script element
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	bw := bufio.NewWriter(w)
	title := html.EscapeString(in.Title)
	fmt.Fprintf(bw, `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="%s">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="sluice run --html">
<title>%s</title>
<style>%s</style>
</head>
<body>
<noscript><p>This report draws itself with JavaScript; the run's report.json and trace.jsonl hold the same facts as text.</p></noscript>
<script id="run-data" type="application/json">`, csp(), title, style)
	bw.Write(bytes.TrimRight(js.Bytes(), "\n"))
	fmt.Fprintf(bw, "</script>\n<script>%s</script>\n</body>\n</html>\n", script)
	return bw.Flush()
}
