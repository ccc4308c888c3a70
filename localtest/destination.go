package localtest

import (
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/localtest/onfailure"
	"strings"

	sevents "github.com/sluicehq/sluice/events"
)

// A TopicOpener is a Kafka source that opens the on-failure destination
// kafka://topic (seeds nil: a topic of its own cluster) or
// kafka://host:port/topic of a Kafka mapping. The runner opens it through
// Options.Kafka when Options.Destination is nil, and calls closer, if not
// nil, at the end of the run. source.KafkaCluster implements it.
type TopicOpener interface {
	OpenTopic(seeds []string, topic string) (dest onfailure.Destination, closer func(), err error)
}

// destKind is what an on-failure Destination string names.
type destKind int

const (
	destNone    destKind = iota // "" or mem://
	destFile                    // file://path: JSON lines
	destDir                     // file://dir/: S3 objects under dir
	destSQS                     // an SQS queue URL
	destS3                      // s3://bucket or arn:aws:s3:::bucket
	destKafka                   // kafka://topic or kafka://host:port[,host:port]/topic
	destUnknown                 // anything else
)

// parsedDest is an on-failure Destination taken apart.
type parsedDest struct {
	kind   destKind
	path   string   // file, dir
	bucket string   // s3
	seeds  []string // kafka; nil: the source's cluster
	topic  string   // kafka
}

// parseDestination reads an on-failure Destination string.
func parseDestination(d string) parsedDest {
	switch {
	case d == "" || strings.HasPrefix(d, "mem://"):
		return parsedDest{kind: destNone}
	case strings.HasPrefix(d, "file://"):
		p := strings.TrimPrefix(d, "file://")
		if strings.HasSuffix(p, "/") {
			return parsedDest{kind: destDir, path: p}
		}
		return parsedDest{kind: destFile, path: p}
	case strings.HasPrefix(d, "http://") || strings.HasPrefix(d, "https://"):
		return parsedDest{kind: destSQS}
	case strings.HasPrefix(d, "s3://"):
		b := strings.TrimSuffix(strings.TrimPrefix(d, "s3://"), "/")
		if b == "" || strings.Contains(b, "/") {
			return parsedDest{kind: destUnknown}
		}
		return parsedDest{kind: destS3, bucket: b}
	case strings.HasPrefix(d, "arn:") && strings.Contains(d, ":s3:::"):
		// arn:PARTITION:s3:::BUCKET
		_, b, _ := strings.Cut(d, ":s3:::")
		if b == "" || strings.Contains(b, "/") {
			return parsedDest{kind: destUnknown}
		}
		return parsedDest{kind: destS3, bucket: b}
	case strings.HasPrefix(d, "kafka://"):
		rest := strings.TrimPrefix(d, "kafka://")
		hosts, topic, ok := strings.Cut(rest, "/")
		if !ok {
			return parsedDest{kind: destKafka, topic: rest}
		}
		if hosts == "" || topic == "" || strings.Contains(topic, "/") {
			return parsedDest{kind: destUnknown}
		}
		return parsedDest{kind: destKafka, seeds: strings.Split(hosts, ","), topic: topic}
	}
	return parsedDest{kind: destUnknown}
}

// destinationProblem says what is wrong with an on-failure Destination for
// a mapping, or "".
func (m *Mapping) destinationProblem(d string) string {
	p := parseDestination(d)
	switch p.kind {
	case destUnknown:
		return fmt.Sprintf("%q is not an on-failure destination: use an SQS queue URL, s3://bucket or arn:aws:s3:::bucket, kafka://topic (Kafka), a file:// path (JSON lines) or a file://dir/ (S3 objects)", d)
	case destS3, destDir:
		if !m.stream() && m.EventSource != sevents.SourceKafka {
			return fmt.Sprintf("%q: an S3 destination is for Kinesis, DynamoDB Streams and Kafka sources", d)
		}
	case destKafka:
		switch {
		case m.EventSource != sevents.SourceKafka:
			return fmt.Sprintf("%q: a Kafka topic destination is for Kafka sources only", d)
		case m.Mode != KafkaProvisioned:
			return fmt.Sprintf("%q: a Kafka topic destination needs Mode provisioned", d)
		case p.topic == "":
			return fmt.Sprintf("%q names no topic: use kafka://topic or kafka://host:port/topic", d)
		case p.topic == m.Topic:
			return fmt.Sprintf("%q is the source topic: Lambda refuses a destination that would feed the mapping its own failures", d)
		}
	}
	return ""
}

// openDestination makes the Destination a mapping's on-failure Destination
// names, when the runner can make it alone; closer, if not nil, releases it.
func (r *runner) openDestination(d string) (dest onfailure.Destination, closer func(), err error) {
	p := parseDestination(d)
	uuid := r.mappingUUID()
	switch p.kind {
	case destNone:
		return nil, nil, nil
	case destFile:
		return &fileDestination{path: p.path}, nil, nil
	case destDir:
		return DirDestination(p.path, uuid), nil, nil
	case destSQS:
		return nil, nil, fmt.Errorf("localtest: the on-failure destination %s is a queue URL: pass Options.Destination (e.g. destination.SQS) to send to it", d)
	case destS3:
		return nil, nil, fmt.Errorf("localtest: the on-failure destination %s is an S3 bucket: pass Options.Destination (destination.S3) to send to it", d)
	case destKafka:
		o, ok := r.opts.Kafka.(TopicOpener)
		if !ok {
			if p.seeds == nil {
				return nil, nil, fmt.Errorf("localtest: the on-failure destination %s is a topic of the source's cluster, and the source is not a Kafka cluster: name the cluster (kafka://host:port/%s) or pass Options.Destination (destination.Kafka)", d, p.topic)
			}
			return nil, nil, fmt.Errorf("localtest: the on-failure destination %s is a Kafka topic, and the source is not a Kafka cluster: pass Options.Destination (destination.Kafka) to send to it", d)
		}
		return o.OpenTopic(p.seeds, p.topic)
	}
	return nil, nil, errors.New("localtest: unknown on-failure destination " + d)
}

func (r *runner) mappingUUID() string {
	if u := r.opts.Mapping.UUID; u != "" {
		return u
	}
	return onfailure.DefaultMappingUUID
}

// validUUID reports whether s is a UUID in its 8-4-4-4-12 hex form.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
