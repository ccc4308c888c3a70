package localtest

import (
	"errors"
	"fmt"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/desturl"
	"github.com/sluicehq/sluice/localtest/onfailure"
)

// A TopicOpener is a Kafka source that opens the on-failure destination
// kafka://topic (seeds nil: a topic of its own cluster) or
// kafka://host:port/topic of a Kafka mapping. The runner opens it through
// Options.Kafka when Options.Destination is nil, and calls closer, if not
// nil, at the end of the run. source.KafkaCluster implements it.
type TopicOpener interface {
	OpenTopic(seeds []string, topic string) (dest onfailure.Destination, closer func(), err error)
}

// destinationProblem says what is wrong with an on-failure Destination for
// a mapping, or "".
func (m *Mapping) destinationProblem(d string) string {
	p := desturl.Parse(d)
	switch p.Kind {
	case desturl.Unknown:
		return fmt.Sprintf("%q is not an on-failure destination: use an SQS queue URL, s3://bucket or arn:aws:s3:::bucket, kafka://topic (Kafka), a file:// path (JSON lines) or a file://dir/ (S3 objects)", d)
	case desturl.S3, desturl.Dir:
		if !m.stream() && m.EventSource != sevents.SourceKafka {
			return fmt.Sprintf("%q: an S3 destination is for Kinesis, DynamoDB Streams and Kafka sources", d)
		}
	case desturl.Kafka:
		switch {
		case m.EventSource != sevents.SourceKafka:
			return fmt.Sprintf("%q: a Kafka topic destination is for Kafka sources only", d)
		case m.Mode != KafkaProvisioned:
			return fmt.Sprintf("%q: a Kafka topic destination needs Mode provisioned", d)
		case p.Topic == "":
			return fmt.Sprintf("%q names no topic: use kafka://topic or kafka://host:port/topic", d)
		case p.Topic == m.Topic:
			return fmt.Sprintf("%q is the source topic: Lambda refuses a destination that would feed the mapping its own failures", d)
		}
	}
	return ""
}

// openDestination makes the Destination a mapping's on-failure Destination
// names, when the runner can make it alone; closer, if not nil, releases it.
func (r *runner) openDestination(d string) (dest onfailure.Destination, closer func(), err error) {
	p := desturl.Parse(d)
	uuid := r.mappingUUID()
	switch p.Kind {
	case desturl.None:
		return nil, nil, nil
	case desturl.File:
		return &fileDestination{path: p.Path}, nil, nil
	case desturl.Dir:
		return DirDestination(p.Path, uuid), nil, nil
	case desturl.SQS:
		return nil, nil, fmt.Errorf("localtest: the on-failure destination %s is a queue URL: pass Options.Destination (e.g. destination.SQS) to send to it", d)
	case desturl.S3:
		return nil, nil, fmt.Errorf("localtest: the on-failure destination %s is an S3 bucket: pass Options.Destination (destination.S3) to send to it", d)
	case desturl.Kafka:
		o, ok := r.opts.Kafka.(TopicOpener)
		if !ok {
			if p.Seeds == nil {
				return nil, nil, fmt.Errorf("localtest: the on-failure destination %s is a topic of the source's cluster, and the source is not a Kafka cluster: name the cluster (kafka://host:port/%s) or pass Options.Destination (destination.Kafka)", d, p.Topic)
			}
			return nil, nil, fmt.Errorf("localtest: the on-failure destination %s is a Kafka topic, and the source is not a Kafka cluster: pass Options.Destination (destination.Kafka) to send to it", d)
		}
		return o.OpenTopic(p.Seeds, p.Topic)
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
