package invocation

import (
	"slices"
	"testing"
)

// An answer to a payload that is not an event is read without records to
// check it against: a function error, named items, or a success.
func TestAnswerVerdict(t *testing.T) {
	for _, tc := range []struct {
		resp     Response
		outcome  string
		reported []string
	}{
		{Response{Payload: []byte(`{"errorType":"UnmarshalTypeError","errorMessage":"json: cannot unmarshal"}`), FunctionError: "Unhandled"}, OutcomeFunctionError, nil},
		{Response{Payload: []byte(`{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":{"partition":"t-0","offset":3}}]}`)}, OutcomePartial,
			[]string{"m1", `{"partition":"t-0","offset":3}`}},
		{Response{Payload: []byte(`{"batchItemFailures":[]}`)}, OutcomeSuccess, nil},
		{Response{Payload: []byte(`null`)}, OutcomeSuccess, nil},
		{Response{}, OutcomeSuccess, nil},
		{Response{Payload: []byte(`"ok"`)}, OutcomeSuccess, nil},
	} {
		v := AnswerVerdict(tc.resp)
		if v.Outcome != tc.outcome || !slices.Equal(v.Reported, tc.reported) {
			t.Errorf("%s: %+v, want %s %v", tc.resp.Payload, v, tc.outcome, tc.reported)
		}
	}
}
