package inbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// answers plays back one ReceiveMessage answer per call (the message ids
// it holds), then empty ones; it fakes the rare case of a short poll that
// samples servers without the messages.
type answers struct {
	SQSAPI
	replies [][]string
	calls   int
}

func (a *answers) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	a.calls++
	out := &sqs.ReceiveMessageOutput{}
	if a.calls <= len(a.replies) {
		for _, id := range a.replies[a.calls-1][:min(len(a.replies[a.calls-1]), int(in.MaxNumberOfMessages))] {
			out.Messages = append(out.Messages, sqstypes.Message{MessageId: aws.String(id), ReceiptHandle: aws.String("h-" + id), Body: aws.String(id)})
		}
	}
	return out, nil
}

// A short poll (wait 0) may answer empty while messages wait: the queue
// counts as drained only after ShortPollEmpties empty answers in a row; a
// long poll asks every server, so one empty answer ends it.
func TestQueueNextDrained(t *testing.T) {
	tests := []struct {
		name    string
		wait    time.Duration
		replies [][]string
		want    int // messages read
		calls   int // receives made
	}{
		{"short poll: empty answers before the rest", 0, [][]string{{"a", "b"}, {}, {}, {"c"}, {"d"}}, 4, 5 + ShortPollEmpties},
		{"short poll: drained", 0, [][]string{{"a"}}, 1, 1 + ShortPollEmpties},
		{"short poll: seen again is not new", 0, [][]string{{"a"}, {"a"}, {"a"}, {"b"}}, 2, 4 + ShortPollEmpties},
		{"long poll: one empty answer drains", time.Second, [][]string{{"a"}, {}, {"b"}}, 1, 2},
		{"max reached first", 0, [][]string{{"a", "b", "c", "d", "e"}}, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &answers{replies: tt.replies}
			max := 10
			if tt.name == "max reached first" {
				max = 3
			}
			got, err := Queue(api, "q", time.Minute, tt.wait).Next(context.Background(), max)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want || api.calls != tt.calls {
				t.Fatalf("read %d messages in %d receives; want %d in %d (%s)", len(got), api.calls, tt.want, tt.calls, fmt.Sprint(got))
			}
		})
	}
}
