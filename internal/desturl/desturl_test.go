package desturl

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Target
	}{
		{"", Target{Kind: None}},
		{"mem://x", Target{Kind: None}},
		{"file://out/failed.jsonl", Target{Kind: File, Path: "out/failed.jsonl"}},
		{"file:///tmp/failed/", Target{Kind: Dir, Path: "/tmp/failed/"}},
		{"http://127.0.0.1:4566/000000000000/dlq", Target{Kind: SQS}},
		{"s3://failed-batches", Target{Kind: S3, Bucket: "failed-batches"}},
		{"s3://failed-batches/", Target{Kind: S3, Bucket: "failed-batches"}},
		{"s3://", Target{Kind: Unknown}},
		{"s3://bucket/prefix", Target{Kind: Unknown}},
		{"arn:aws:s3:::failed-batches", Target{Kind: S3, Bucket: "failed-batches"}},
		{"arn:aws-cn:s3:::b", Target{Kind: S3, Bucket: "b"}},
		{"kafka://failed-records", Target{Kind: Kafka, Topic: "failed-records"}},
		{"kafka://127.0.0.1:9092,127.0.0.1:9093/dlt", Target{Kind: Kafka, Seeds: []string{"127.0.0.1:9092", "127.0.0.1:9093"}, Topic: "dlt"}},
		{"kafka:///dlt", Target{Kind: Unknown}},
		{"kafka://h:1/", Target{Kind: Unknown}},
		{"arn:aws:sns:us-east-1:123456789012:topic", Target{Kind: Unknown}},
		{"queue", Target{Kind: Unknown}},
	} {
		got := Parse(tc.in)
		if got.Kind != tc.want.Kind || got.Path != tc.want.Path || got.Bucket != tc.want.Bucket || got.Topic != tc.want.Topic || !slices.Equal(got.Seeds, tc.want.Seeds) {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
