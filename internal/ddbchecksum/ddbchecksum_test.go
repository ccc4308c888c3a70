package ddbchecksum_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/sluicehq/sluice/internal/ddbchecksum"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// logs is an SDK logger that keeps what it is given.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Logf(c logging.Classification, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.buf, "%s "+format+"\n", append([]any{c}, v...)...)
}

func (l *logs) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// DynamoDB Local answers an error without X-Amz-Crc32, and the SDK's
// client then warns that the body "did not match expected checksum, 0":
// with Option it does not, and successes are still read as before.
func TestDynamoDBLocalErrorsDoNotWarn(t *testing.T) {
	srv := servers.DynamoDB(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []func(*dynamodb.Options)
		warn bool
	}{
		{"the SDK alone warns", nil, true},
		{"with Option", []func(*dynamodb.Options){ddbchecksum.Option}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &logs{}
			cfg := srv.AWSConfig()
			cfg.Logger = l
			db := dynamodb.NewFromConfig(cfg, tc.opts...)
			_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("no-such-table"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}})
			if err == nil || !strings.Contains(err.Error(), "ResourceNotFoundException") {
				t.Fatalf("GetItem on a missing table: %v", err)
			}
			if _, err := db.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(l.String(), "did not match expected checksum"); got != tc.warn {
				t.Fatalf("warned %v, want %v; the SDK's log:\n%s", got, tc.warn, l.String())
			}
		})
	}
}

// A response whose X-Amz-Crc32 does not match its body is still caught:
// Option fills in a missing checksum, it does not stop the check. (A test
// server, as DynamoDB Local never sends a wrong one.)
func TestAWrongChecksumIsStillCaught(t *testing.T) {
	body := `{"TableNames":["a"]}`
	for _, tc := range []struct {
		name   string
		header string
		warn   bool
	}{
		{"wrong", "12345", true},
		{"right", fmt.Sprint(crc32.ChecksumIEEE([]byte(body))), false},
		{"missing", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tc.header != "" {
					w.Header().Set("X-Amz-Crc32", tc.header)
				}
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.Write([]byte(body))
			}))
			defer ts.Close()
			l := &logs{}
			db := dynamodb.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(ts.URL), Logger: l,
				Credentials: aws.AnonymousCredentials{}}, ddbchecksum.Option)
			out, err := db.ListTables(context.Background(), &dynamodb.ListTablesInput{})
			if err != nil || len(out.TableNames) != 1 {
				t.Fatalf("%v %+v", err, out)
			}
			if got := strings.Contains(l.String(), "did not match expected checksum"); got != tc.warn {
				t.Fatalf("warned %v, want %v; the SDK's log:\n%s", got, tc.warn, l.String())
			}
		})
	}
}
