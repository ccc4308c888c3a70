package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/localtest/source"
)

// FranzKafka returns a KafkaReader that reads with franz-go, giving up
// after wait without new records (the offsets may not exist yet, or the
// cluster is unreachable). opts are added to the client's options (TLS,
// SASL).
func FranzKafka(wait time.Duration, opts ...kgo.Opt) KafkaReader {
	return func(ctx context.Context, seeds []string, topic string, partition int32, first, last int64) ([]KafkaRecord, error) {
		cl, err := kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(seeds...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(first)}}),
			// A first offset already deleted resets to the log's start,
			// whose first record then shows the range was trimmed.
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		}, opts...)...)
		if err != nil {
			return nil, fmt.Errorf("kafka client for %v: %w", seeds, err)
		}
		defer cl.Close()
		var out []KafkaRecord
		for {
			pctx, cancel := context.WithTimeout(ctx, wait)
			fetches := cl.PollFetches(pctx)
			cancel()
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			got := 0
			var ferr error
			fetches.EachError(func(_ string, _ int32, err error) {
				if err != context.DeadlineExceeded && err != context.Canceled {
					ferr = err
				}
			})
			if ferr != nil {
				return nil, fmt.Errorf("fetching from %v: %v", seeds, ferr)
			}
			for _, r := range fetches.Records() {
				got++
				if r.Offset > last {
					if len(out) == 0 {
						return nil, fmt.Errorf("the first record still in the partition is at offset %d, after the batch's last offset %d: %w", r.Offset, last, ErrTrimmed)
					}
					continue
				}
				b, err := json.Marshal(source.KafkaEventRecord(r))
				if err != nil {
					return nil, err
				}
				out = append(out, KafkaRecord{Offset: r.Offset, Timestamp: r.Timestamp, JSON: b})
				if r.Offset == last {
					return out, nil
				}
			}
			if len(out) > 0 && out[len(out)-1].Offset >= last {
				return out, nil
			}
			if got == 0 {
				at := "no record"
				if len(out) > 0 {
					at = fmt.Sprintf("records up to offset %d", out[len(out)-1].Offset)
				}
				return nil, fmt.Errorf("nothing more after %v (read %s): the offsets up to %d are not in the partition", wait, at, last)
			}
			// Records past last in the same fetch mean last was skipped
			// (a compacted or transactional log): what came is all there is.
			for _, r := range fetches.Records() {
				if r.Offset > last {
					return out, nil
				}
			}
		}
	}
}
