package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

// replyError is an error reply from the server, as go-redis returns it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func TestRetryable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"Loading", replyError("LOADING Redis is loading the dataset in memory"), true},
		{"Busy", replyError("BUSY Redis is busy running a script"), true},
		{"TryAgain", replyError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"ClusterDown", replyError("CLUSTERDOWN The cluster is down"), true},
		{"MasterDown", replyError("MASTERDOWN Link with MASTER is down"), true},
		{"ReadOnly", replyError("READONLY You can't write against a read only replica."), true},
		{"Wrapped", fmt.Errorf("op: %w", replyError("LOADING x")), true},
		{"EOF", io.EOF, true},
		{"UnexpectedEOF", io.ErrUnexpectedEOF, true},
		{"Refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"Reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"PoolTimeout", redis.ErrPoolTimeout, true},
		{"WrongType", replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"ScriptError", replyError("ERR user_script:1: Script attempted to access nonexistent global variable"), false},
		{"NoAuth", replyError("NOAUTH Authentication required."), false},
		{"Closed", redis.ErrClosed, false},
		{"Canceled", context.Canceled, false},
		{"DeadlineExceeded", context.DeadlineExceeded, false},
		{"Plain", errors.New("x"), false},
	} {
		if got := retryable(tc.err); got != tc.want {
			t.Errorf("%s: retryable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
