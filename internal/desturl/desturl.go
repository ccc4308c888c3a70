// Package desturl takes apart the on-failure Destination string of a
// localtest mapping (DestinationConfig.OnFailure.Destination): an SQS
// queue URL, s3://bucket or arn:aws:s3:::bucket, kafka://topic or
// kafka://host:port/topic, a file:// path or a file://dir/. What each
// kind is valid for and how the runner opens it stay in localtest; the
// sluice command reads the S3 buckets and Kafka clusters it opens itself
// with it too.
package desturl

import "strings"

// Kind is what an on-failure Destination string names.
type Kind int

const (
	None    Kind = iota // "" or mem://
	File                // file://Path: JSON lines
	Dir                 // file://dir/: S3 objects under dir
	SQS                 // an SQS queue URL
	S3                  // s3://bucket or arn:aws:s3:::bucket
	Kafka               // kafka://topic or kafka://host:port[,host:port]/topic
	Unknown             // anything else
)

// Target is an on-failure Destination taken apart.
type Target struct {
	Kind   Kind
	Path   string   // File, Dir
	Bucket string   // S3
	Seeds  []string // Kafka; nil: the source's cluster
	Topic  string   // Kafka
}

// Parse reads an on-failure Destination string.
func Parse(d string) Target {
	switch {
	case d == "" || strings.HasPrefix(d, "mem://"):
		return Target{Kind: None}
	case strings.HasPrefix(d, "file://"):
		p := strings.TrimPrefix(d, "file://")
		if strings.HasSuffix(p, "/") {
			return Target{Kind: Dir, Path: p}
		}
		return Target{Kind: File, Path: p}
	case strings.HasPrefix(d, "http://") || strings.HasPrefix(d, "https://"):
		return Target{Kind: SQS}
	case strings.HasPrefix(d, "s3://"):
		b := strings.TrimSuffix(strings.TrimPrefix(d, "s3://"), "/")
		if b == "" || strings.Contains(b, "/") {
			return Target{Kind: Unknown}
		}
		return Target{Kind: S3, Bucket: b}
	case strings.HasPrefix(d, "arn:") && strings.Contains(d, ":s3:::"):
		// arn:PARTITION:s3:::BUCKET
		_, b, _ := strings.Cut(d, ":s3:::")
		if b == "" || strings.Contains(b, "/") {
			return Target{Kind: Unknown}
		}
		return Target{Kind: S3, Bucket: b}
	case strings.HasPrefix(d, "kafka://"):
		rest := strings.TrimPrefix(d, "kafka://")
		hosts, topic, ok := strings.Cut(rest, "/")
		if !ok {
			return Target{Kind: Kafka, Topic: rest}
		}
		if hosts == "" || topic == "" || strings.Contains(topic, "/") {
			return Target{Kind: Unknown}
		}
		return Target{Kind: Kafka, Seeds: strings.Split(hosts, ","), Topic: topic}
	}
	return Target{Kind: Unknown}
}
