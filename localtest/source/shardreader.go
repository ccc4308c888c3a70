package source

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/invocation"
)

// maxEmptyPages bounds the GetRecords calls one Read makes while pages come
// back empty but the iterator is not yet at the tip of the shard.
const maxEmptyPages = 5

// shardPage is one GetRecords answer, converted.
type shardPage struct {
	recs    []invocation.StreamRecord
	next    *string // NextShardIterator; nil when the shard is closed
	atTip   bool    // the iterator has caught up (Kinesis MillisBehindLatest 0)
	expired bool    // the iterator had expired
}

// read is a Read of a Kinesis or DynamoDB stream shard: it reuses the
// iterator the last Read left if that continued after after, gets a fresh
// one (fresh) otherwise or when the cached one expired, pages with get
// until records come, the shard ends, it is at the tip or maxEmptyPages
// pages were empty, and remembers where it stopped.
func (c *shardCursors) read(ctx context.Context, shard, after string, fresh func() (string, error),
	get func(iterator string, left int) (shardPage, error), max int) ([]invocation.StreamRecord, error) {
	it, cached := c.take(shard, after)
	if !cached {
		var err error
		if it, err = fresh(); err != nil {
			return nil, err
		}
	}
	var recs []invocation.StreamRecord
	var next *string
	for page := 0; ; page++ {
		p, err := get(it, max-len(recs))
		if err == nil && p.expired && cached && page == 0 {
			// A cached iterator outlived its 5 minutes: start over from after.
			if it, err = fresh(); err != nil {
				return nil, err
			}
			p, err = get(it, max-len(recs))
		}
		if err != nil {
			return nil, err
		}
		if p.expired {
			return nil, fmt.Errorf("localtest: shard %s: the shard iterator expired", shard)
		}
		recs = append(recs, p.recs...)
		next = p.next
		if len(recs) > 0 || next == nil || p.atTip || page+1 >= maxEmptyPages {
			break
		}
		it = *next
	}
	if next != nil {
		last := after
		if len(recs) > 0 {
			last = recs[len(recs)-1].SequenceNumber
		}
		c.put(shard, last, *next)
	}
	return recs, nil
}

// shardCursors remembers, per shard, the NextShardIterator of the last Read
// and the sequence number it continues after.
type shardCursors struct {
	mu sync.Mutex
	m  map[string]shardCursor
}

type shardCursor struct{ after, iterator string }

// take returns and forgets the iterator of shard if it continues after after.
func (c *shardCursors) take(shard, after string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.m[shard]
	if !ok || cur.after != after || cur.iterator == "" {
		return "", false
	}
	delete(c.m, shard)
	return cur.iterator, true
}

func (c *shardCursors) put(shard, after, iterator string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]shardCursor{}
	}
	c.m[shard] = shardCursor{after, iterator}
}
