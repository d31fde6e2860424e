// Package recsize measures a Kafka record the way the producer and the
// broker count it, so the pump can refuse at the door what the topics would
// never accept (kafka.maxRecordBytes, processing rules R7.3).
//
// A broker checks max.message.bytes against a record batch: its 61-byte
// header plus its records, compressed when the producer compresses. The
// producer (franz-go, like the Java client) refuses before compression a
// record whose batch alone would exceed its batch limit, which the
// dispatcher sets to the same kafka.maxRecordBytes. A record passes the
// door when both counts of a batch holding it alone fit: the uncompressed
// one, and the compressed one with the feed's codec.
//
// A *Measure is the engine's Door (engine.Door): the engine decides with
// it without importing a Kafka client.
package recsize

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/engine"
)

// BatchHeader is the size of a v2 record batch's header, which the broker
// counts with the records.
const BatchHeader = 61

// Measure holds a limit and the codec the producer compresses with. It is
// safe for concurrent use: the dispatcher lowers the limit (Lower) when a
// topic accepts less than configured, while the pump measures.
type Measure struct {
	max  atomic.Int64
	comp kgo.Compressor
}

// Max is the limit in force: kafka.maxRecordBytes, or less when a topic
// accepts less.
func (m *Measure) Max() int { return int(m.max.Load()) }

// Lower sets the limit to n when n is smaller, and reports whether it did.
func (m *Measure) Lower(n int) bool {
	for {
		cur := m.max.Load()
		if int64(n) >= cur {
			return false
		}
		if m.max.CompareAndSwap(cur, int64(n)) {
			return true
		}
	}
}

// New returns the measure of a limit and a codec: zstd, lz4 or none.
func New(maxBytes int, codec string) (*Measure, error) {
	c, ok := Codec(codec)
	if !ok {
		return nil, fmt.Errorf("kafka compression %q is not zstd, lz4 or none", codec)
	}
	comp, err := kgo.DefaultCompressor(c)
	if err != nil {
		return nil, fmt.Errorf("kafka compression %s: %w", codec, err)
	}
	m := &Measure{comp: comp}
	m.max.Store(int64(maxBytes))
	return m, nil
}

// Codec is the producer's codec of a kafka.compression value.
func Codec(name string) (kgo.CompressionCodec, bool) {
	switch name {
	case "zstd":
		return kgo.ZstdCompression(), true
	case "lz4":
		return kgo.Lz4Compression(), true
	case "none":
		return kgo.NoCompression(), true
	}
	return kgo.CompressionCodec{}, false
}

// producerSlack covers what the producer may count beyond a v2 batch (a
// flexible request's longer length prefixes) before it knows the broker's
// produce version.
const producerSlack = 16

// Fits reports whether both counts are within the limit.
func (m *Measure) Fits(s engine.RecordSize) bool {
	limit := m.Max()
	return s.Uncompressed+producerSlack <= limit && s.Compressed <= limit
}

// Of measures the record with key, value and headers in a batch of its
// own. The records are compressed only when the uncompressed batch is close
// enough to the limit for the codec's worst case to matter (a codec grows
// incompressible data by well under 1/64): below that the compressed count
// is taken as the uncompressed one, which bounds it.
func (m *Measure) Of(key, value []byte, headers []engine.Header) engine.RecordSize {
	n := recordLen(key, value, headers)
	s := engine.RecordSize{Uncompressed: BatchHeader + n, Compressed: BatchHeader + n}
	limit := m.Max()
	if s.Uncompressed <= limit-limit/64-64 || m.comp == nil {
		return s
	}
	rec := appendRecord(make([]byte, 0, n), key, value, headers)
	var buf bytes.Buffer
	out, codec := m.comp.Compress(&buf, rec)
	if codec != 0 && out != nil {
		s.Compressed = BatchHeader + len(out)
	}
	return s
}

func varlen(v int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], int64(v))
}

// bodyLen is a v2 record without its length prefix: attributes, timestamp
// and offset deltas (0 in a batch of one), key, value and headers.
func bodyLen(key, value []byte, headers []engine.Header) int {
	n := 1 + 1 + 1 + varlen(len(key)) + len(key) + varlen(len(value)) + len(value) + varlen(len(headers))
	for _, h := range headers {
		n += varlen(len(h.Key)) + len(h.Key) + varlen(len(h.Value)) + len(h.Value)
	}
	return n
}

func recordLen(key, value []byte, headers []engine.Header) int {
	b := bodyLen(key, value, headers)
	return varlen(b) + b
}

func appendRecord(dst, key, value []byte, headers []engine.Header) []byte {
	dst = binary.AppendVarint(dst, int64(bodyLen(key, value, headers)))
	dst = append(dst, 0)              // attributes
	dst = binary.AppendVarint(dst, 0) // timestamp delta
	dst = binary.AppendVarint(dst, 0) // offset delta
	dst = binary.AppendVarint(dst, int64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendVarint(dst, int64(len(value)))
	dst = append(dst, value...)
	dst = binary.AppendVarint(dst, int64(len(headers)))
	for _, h := range headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = binary.AppendVarint(dst, int64(len(h.Value)))
		dst = append(dst, h.Value...)
	}
	return dst
}
