package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/idempotency"
)

// BatchGetter is the part of *dynamodb.Client that Get uses. A Client
// without it makes Get an error, and the handlers' batch-level lookup
// then leaves the work to the claims.
type BatchGetter interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// BatchGetLimit is how many keys one BatchGetItem request may name.
const BatchGetLimit = 100

// getInFlight bounds how many BatchGetItem requests Get has in flight.
const getInFlight = 4

// unprocessedRetries bounds the follow-up requests for keys DynamoDB left
// unprocessed (it does so under throttling or past 16 MB).
const unprocessedRetries = 3

var _ idempotency.Getter = (*Store)(nil)

// Get implements idempotency.Getter: one BatchGetItem per 100 keys (up to 4
// at once), eventually consistent (half the read units of a strong read; a
// completed record the read misses is found by the claim instead). Keys
// DynamoDB leaves unprocessed are asked again up to 3 times; what is still
// missing then is left out and reported in the error, with the records that
// were read.
func (s *Store) Get(ctx context.Context, keys []string) (map[string]*idempotency.Record, error) {
	bg, ok := s.client.(BatchGetter)
	if !ok {
		return nil, &idempotency.StoreError{Op: "get", Err: fmt.Errorf("table %s: the DynamoDB client has no BatchGetItem", s.table)}
	}
	out := make(map[string]*idempotency.Record, len(keys))
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, getInFlight)
	)
	for start := 0; start < len(keys); start += BatchGetLimit {
		chunk := keys[start:min(start+BatchGetLimit, len(keys))]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			recs, err := s.getChunk(ctx, bg, chunk)
			mu.Lock()
			defer mu.Unlock()
			for _, r := range recs {
				out[r.Key] = r
			}
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func (s *Store) getChunk(ctx context.Context, bg BatchGetter, keys []string) ([]*idempotency.Record, error) {
	req := make([]map[string]types.AttributeValue, len(keys))
	var long map[string]string // stored form -> key, for the keys kept by a digest
	for i, k := range keys {
		req[i] = s.layout.key(k)
		if st := s.layout.stored(k); st != k {
			if long == nil {
				long = map[string]string{}
			}
			long[st] = k
		}
	}
	var recs []*idempotency.Record
	for try := 0; len(req) > 0; try++ {
		if try > unprocessedRetries {
			return recs, &idempotency.StoreError{Op: "get", Key: keys[0], Retryable: true,
				Err: fmt.Errorf("table %s: %d keys still unprocessed after %d requests", s.table, len(req), try)}
		}
		if try > 0 {
			t := time.NewTimer(time.Duration(try*try) * 25 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return recs, &idempotency.StoreError{Op: "get", Key: keys[0], Err: ctx.Err()}
			case <-t.C:
			}
		}
		outp, err := bg.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{s.table: {Keys: req}},
		})
		if err != nil {
			return recs, s.storeError("get", keys[0], err)
		}
		for _, item := range outp.Responses[s.table] {
			k := s.itemKey(item)
			if orig, ok := long[k]; ok {
				k = orig
			}
			rec, err := s.record(k, item)
			if err != nil {
				return recs, &idempotency.StoreError{Op: "get", Key: k, Err: err}
			}
			recs = append(recs, rec)
		}
		req = outp.UnprocessedKeys[s.table].Keys
	}
	return recs, nil
}

// itemKey reads the idempotency key back from an item.
func (s *Store) itemKey(item map[string]types.AttributeValue) string {
	if s.layout.sk != "" {
		return getS(item, s.layout.sk)
	}
	return getS(item, s.layout.pk)
}
