package localtest

// Helpers of the internal tests for the external ones (package
// localtest_test), which may import the rooms that import localtest
// (localtest/invoke, localtest/source, localtest/destination).
var (
	KinesisMapping = kinesisMapping
	KinesisRecords = kinesisRecords
	OneKey         = oneKey
	SubLane        = subLane

	MD5OfMessageAttributes = md5OfMessageAttributes
)
