package dispatch

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/config"
)

// Bounded reads ("bounded per feed"). franz-go reads a broker's
// response whole, reserving the size its 4-byte prefix claims (up to
// 100 MiB by default, per connection, and a client holds one to each
// broker). The client refuses a response larger than BrokerReadBytes of
// the feed when its size arrives, before reserving anything: the request
// fails with "invalid large response size N > limit M: response too
// large", and the dispatcher retries with backoff like any broker error.
//
// The dispatcher only produces: its largest legitimate responses are
// metadata of the feed's two topics (some tens of bytes a partition: a
// megabyte is tens of thousands of partitions), the topics'
// configuration and produce acknowledgements, none of which grows with the
// records. The records themselves are at most kafka.maxRecordBytes (the
// door, package recsize). A fetch (only a test's consumer options ask for
// one) returns at most FetchMaxBytes, which is set to one record, plus one
// batch over it, which the broker sends whole so that a consumer can make
// progress. Hence 2 × maxRecordBytes (a fetch) plus a margin for the rest;
// the default 1 MiB records give 6 MiB instead of franz-go's 100 MiB.

// BrokerReadMargin is what BrokerReadBytes adds for the responses that do
// not carry records.
const BrokerReadMargin = 4 << 20

// maxBrokerRead is the most franz-go accepts as BrokerMaxReadBytes.
const maxBrokerRead = 1 << 30

// BrokerReadBytes is the largest response the client of a feed whose
// kafka.maxRecordBytes is maxRecordBytes (0: the default) reads from a
// broker.
func BrokerReadBytes(maxRecordBytes int32) int32 {
	if maxRecordBytes <= 0 {
		maxRecordBytes = config.DefaultMaxRecordBytes
	}
	return int32(min(2*int64(maxRecordBytes)+BrokerReadMargin, maxBrokerRead))
}

// boundOpts are the client options of the bound: franz-go refuses a read
// bound below FetchMaxBytes (50 MiB by default), so that comes down to one
// record too.
func boundOpts(maxRecordBytes int32) []kgo.Opt {
	if maxRecordBytes <= 0 {
		maxRecordBytes = config.DefaultMaxRecordBytes
	}
	return []kgo.Opt{kgo.BrokerMaxReadBytes(BrokerReadBytes(maxRecordBytes)), kgo.FetchMaxBytes(maxRecordBytes)}
}
