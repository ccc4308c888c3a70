package handlers

// S3EventBridgeDetail is the detail of an Amazon S3 event delivered
// through Amazon EventBridge (source "aws.s3"; detail-type "Object
// Created", "Object Deleted", "Object Restore Initiated", "Object Restore
// Completed", "Object Restore Expired", "Object Tags Added", "Object Tags
// Deleted", "Object ACL Updated", "Object Storage Class Changed", "Object
// Access Tier Changed"), as S3 writes it:
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html.
// Read it as the detail of an EventBridge event, e.g.
// handlers.SQSRecord[handlers.EventBridgeEvent[handlers.S3EventBridgeDetail]];
// an event from another source fails its record permanently.
//
// Unlike S3Notification (S3's own notifications to SQS or SNS), an
// EventBridge event carries one object, and its default idempotency key is
// the EventBridge event's id (EventBridgeEvent). The fields a detail type
// does not carry stay empty (the detail field table of the page above
// says which carries what).
type S3EventBridgeDetail struct {
	// Version is "0".
	Version string `json:"version"`
	Bucket  struct {
		Name string `json:"name"`
	} `json:"bucket"`
	Object S3EventBridgeObject `json:"object"`
	// RequestID is the S3 request that caused the event.
	RequestID string `json:"request-id"`
	// Requester is the account or service principal that made the request
	// (s3.amazonaws.com for S3's own lifecycle and restore work).
	Requester       string `json:"requester"`
	SourceIPAddress string `json:"source-ip-address"`
	// Reason is the operation: PutObject, POST Object, CopyObject,
	// CompleteMultipartUpload (Object Created); DeleteObject, Lifecycle
	// Expiration (Object Deleted).
	Reason string `json:"reason"`
	// DeletionType is "Permanently Deleted" or "Delete Marker Created"
	// (Object Deleted).
	DeletionType string `json:"deletion-type"`
	// RestoreExpiryTime is when a restored copy expires (Object Restore
	// Completed), as S3 writes it (RFC 3339).
	RestoreExpiryTime       string `json:"restore-expiry-time"`
	SourceStorageClass      string `json:"source-storage-class"`
	DestinationStorageClass string `json:"destination-storage-class"`
	DestinationAccessTier   string `json:"destination-access-tier"`
}

// S3EventBridgeObject is the object an S3EventBridgeDetail is about. Key is
// as S3 writes it into the event.
type S3EventBridgeObject struct {
	Key       string `json:"key"`
	Size      int64  `json:"size"`
	ETag      string `json:"etag"`
	VersionID string `json:"version-id"`
	// Sequencer orders the Object Created and Object Deleted events of one
	// key (compare them as S3Notification's sequencers: the shorter padded
	// with zeros on the left).
	Sequencer string `json:"sequencer"`
}

func (*S3EventBridgeDetail) eventBridgeSource() string { return "aws.s3" }
