package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

func TestRetryable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"ProvisionedThroughputExceeded", &types.ProvisionedThroughputExceededException{}, true},
		{"RequestLimitExceeded", &types.RequestLimitExceeded{}, true},
		{"Throttling", &smithy.GenericAPIError{Code: "ThrottlingException"}, true},
		{"InternalServerError", &types.InternalServerError{}, true},
		{"Wrapped", fmt.Errorf("op: %w", &types.ProvisionedThroughputExceededException{}), true},
		{"ResourceNotFound", &types.ResourceNotFoundException{}, false},
		{"Validation", &smithy.GenericAPIError{Code: "ValidationException"}, false},
		{"Canceled", context.Canceled, false},
		{"DeadlineExceeded", context.DeadlineExceeded, false},
		{"Plain", errors.New("x"), false},
	} {
		if got := retryable(tc.err); got != tc.want {
			t.Errorf("%s: retryable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
