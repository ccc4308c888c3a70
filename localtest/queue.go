package localtest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/batchresponse"
	"github.com/sluicehq/sluice/invocation"
)

// runQueue polls the SQS queue until it is empty (every message deleted or
// moved to the dead-letter queue) or the run stops. Lambda's rules
// (docs/semantics.md, SQS): a successful invocation deletes the batch; a function
// error deletes nothing, and the messages return after the visibility
// timeout with ApproximateReceiveCount one higher; a valid partial response
// deletes the unlisted messages; without ReportBatchItemFailures a listed
// failure is ignored and the whole batch is deleted. Past the queue's
// maxReceiveCount a message moves to its dead-letter queue.
func (r *runner) runQueue(ctx context.Context) error {
	s := r.s
	max := s.batchSize
	if s.source == events.SourceSQSFIFO {
		max = min(max, 10)
	}
	visibility := time.Duration(s.visibility) * time.Second
	if r.mq == nil && r.opts.Mapping.VisibilityTimeout == nil {
		visibility = 0 // a real queue: its own visibility timeout
	}
	idle := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Up to MaximumConcurrency batches are in flight at once; a FIFO
		// queue gives none of them a group another one holds.
		var batches []*queueBatch
		for len(batches) < s.concurrency {
			msgs, dropped, err := r.receiveBatch(ctx, max, visibility)
			if err != nil {
				return err
			}
			if len(msgs) == 0 && dropped > 0 {
				continue // every message received was filtered out, and deleted
			}
			if len(msgs) == 0 {
				break
			}
			batches = append(batches, r.queueBatch(msgs))
		}
		if len(batches) == 0 {
			left, _, err := r.queue.Counts(ctx)
			if err != nil {
				return fmt.Errorf("localtest: queue counts: %w", err)
			}
			if left == 0 {
				return nil
			}
			// Messages are in flight: wait for the first to become visible.
			wait := time.Second
			if r.mq != nil {
				if t, ok := r.mq.NextVisible(); ok {
					wait = max0(t.Sub(r.clock.Now()))
				}
			} else if idle++; idle > 3*s.visibility+10 {
				r.report.Stopped = "the queue still holds messages that never became visible"
				return nil
			}
			if err := r.clock.Sleep(ctx, wait); err != nil {
				return err
			}
			continue
		}
		idle = 0
		if err := r.invokeQueueBatches(ctx, batches); err != nil {
			return err
		}
	}
}

// receiveBatch receives one batch; on a real queue it gathers for up to
// MaximumBatchingWindowInSeconds for a fuller batch, as Lambda's pollers
// do. Messages that do not pass the mapping's filters are deleted and
// counted in dropped.
func (r *runner) receiveBatch(ctx context.Context, max int, visibility time.Duration) (msgs []invocation.QueueMessage, dropped int, err error) {
	msgs, err = r.queue.Receive(ctx, max, visibility)
	if err != nil {
		return nil, 0, fmt.Errorf("localtest: receive: %w", err)
	}
	if s := r.s; r.mq == nil && s.window > 0 && len(msgs) > 0 && len(msgs) < max {
		until := r.clock.Now().Add(time.Duration(s.window) * time.Second)
		for len(msgs) < max && r.clock.Now().Before(until) {
			if err := r.clock.Sleep(ctx, min(until.Sub(r.clock.Now()), 200*time.Millisecond)); err != nil {
				return nil, 0, err
			}
			more, err := r.queue.Receive(ctx, max-len(msgs), visibility)
			if err != nil {
				return nil, 0, fmt.Errorf("localtest: receive: %w", err)
			}
			msgs = append(msgs, more...)
		}
	}
	return r.dropFiltered(ctx, msgs)
}

// queueBatch is one batch of received messages and the event sent for it.
type queueBatch struct {
	msgs    []invocation.QueueMessage
	ids     []string
	groups  []string
	payload []byte
}

func (r *runner) queueBatch(msgs []invocation.QueueMessage) *queueBatch {
	var b bytes.Buffer
	b.WriteString(`{"Records":[`)
	qb := &queueBatch{msgs: msgs, ids: make([]string, len(msgs))}
	groups := map[string]bool{}
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m.Event)
		qb.ids[i] = m.MessageID
		if m.GroupID != "" && !groups[m.GroupID] {
			groups[m.GroupID] = true
			qb.groups = append(qb.groups, m.GroupID)
		}
		if _, ok := r.fates[m.MessageID]; !ok {
			if r.refs == nil {
				key := m.GroupID
				if key == "" {
					key = m.MessageID
				}
				r.see(realRef(r.s.source, m.MessageID, key, m.Event))
			}
			r.resolve(m.MessageID, FateLeft)
		}
	}
	b.WriteString("]}")
	qb.payload = b.Bytes()
	return qb
}

// invokeQueueBatches invokes the batches at once, each in an execution
// environment of its own, and then applies their answers in the order
// they were received, so a run repeats whatever order the invocations end
// in.
func (r *runner) invokeQueueBatches(ctx context.Context, batches []*queueBatch) error {
	calls := make([]*pendingInvoke, 0, len(batches))
	var stop error
	for _, b := range batches {
		c, err := r.beginInvoke(b.payload)
		if err != nil {
			stop = err
			break
		}
		// The i-th batch in flight runs in execution environment i: a
		// bootstrap runs one process per environment, as Lambda runs one
		// execution environment per concurrent invocation.
		c.inv.Environment = len(calls) + 1
		calls = append(calls, c)
	}
	if len(calls) == 1 {
		r.doInvoke(ctx, calls[0])
	} else {
		var wg sync.WaitGroup
		for _, c := range calls {
			wg.Go(func() { r.doInvoke(ctx, c) })
		}
		wg.Wait()
	}
	for i, c := range calls {
		resp, _, err := r.endInvoke(c)
		if err != nil {
			return err
		}
		if err := r.settleQueueBatch(ctx, batches[i], c, resp); err != nil {
			return err
		}
	}
	return stop
}

// settleQueueBatch applies Lambda's reading of one batch's answer: delete
// what succeeded, leave the rest to come back after the visibility
// timeout.
func (r *runner) settleQueueBatch(ctx context.Context, qb *queueBatch, c *pendingInvoke, resp invocation.Response) error {
	s, msgs, ids := r.s, qb.msgs, qb.ids
	entry := TraceEntry{N: c.n, RequestID: c.reqID, Groups: qb.groups, IDs: ids, Result: resultOf(resp), Retry: msgs[0].ReceiveCount - 1, Ms: resp.Duration.Milliseconds()}
	var remove []int // indexes of messages to delete
	switch {
	case resp.Failed():
		entry.Error = "function error: " + or(resp.ErrorType, resp.FunctionError)
	default:
		v := batchresponse.Strings(resp.Payload, ids)
		switch {
		case !s.reportFailures:
			if v.Kind == batchresponse.Partial {
				entry.Ignored = true
				entry.Reported = pick(ids, v.Reported)
				r.report.Totals.IgnoredResponses++
				r.report.Totals.IgnoredRecords += len(v.Reported)
			}
			remove = all(len(msgs))
		case v.Kind == batchresponse.Success:
			remove = all(len(msgs))
		case v.Kind == batchresponse.Partial:
			entry.Result = ResultPartial
			entry.Reported = pick(ids, v.Reported)
			listed := map[int]bool{}
			for _, i := range v.Reported {
				listed[i] = true
			}
			for i := range msgs {
				if !listed[i] {
					remove = append(remove, i)
				}
			}
		default:
			entry.Result = ResultFunctionError
			entry.Error = "invalid partial batch response: " + v.Reason
		}
	}
	for _, m := range msgs {
		if m.ReceiveCount > 1 {
			r.report.Totals.Redeliveries++
		}
	}
	r.trace(entry, resp)
	handles := make([]string, len(remove))
	for n, i := range remove {
		handles[n] = msgs[i].ReceiptHandle
		r.resolve(msgs[i].MessageID, FateProcessed)
	}
	if len(handles) > 0 {
		if err := r.queue.Delete(ctx, handles); err != nil {
			return fmt.Errorf("localtest: delete: %w", err)
		}
	}
	if entry.Result == ResultSuccess && len(remove) == len(msgs) {
		if f := r.opts.Faults.DuplicateRate; f > 0 && r.rnd.Float64() < f {
			dup, _, err := r.invoke(ctx, qb.payload, c.inv.Environment)
			if err != nil {
				return err
			}
			r.report.Totals.Duplicates++
			r.trace(TraceEntry{Groups: qb.groups, IDs: ids, Result: resultOf(dup), Duplicate: true, Ms: dup.Duration.Milliseconds()}, dup)
		}
	}
	return nil
}

func max0(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func pick(ids []string, idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = ids[j]
	}
	return out
}
