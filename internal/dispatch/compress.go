package dispatch

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kgo"
)

// zstdEncoders is how many batches the producer's zstd compressor encodes
// at once: franz-go compresses a produce request's batches as it writes the
// request on a broker's connection, so more than one only with several
// brokers, and each encoder holds about 1.6 MB.
const zstdEncoders = 2

// zstdCompressor compresses the producer's batches with zstd exactly as
// franz-go's default compressor does (its options, its default level: the
// same bytes), but with encoders that live as long as the client. franz-go
// keeps its encoders in a sync.Pool, which the garbage collector empties:
// during a backlog, when the pump collects often, a pass after a
// collection built a new encoder, 1.6 MB allocated and cleared (about a
// third of the compression's CPU in the pump's profile).
type zstdCompressor struct {
	enc *zstd.Encoder
}

// zstdOptions are franz-go's DefaultCompressor's for ZstdCompression().
func zstdOptions() []zstd.EOption {
	return []zstd.EOption{zstd.WithWindowSize(64 << 10), zstd.WithZeroFrames(true)}
}

func newZstdCompressor() (*zstdCompressor, error) {
	enc, err := zstd.NewWriter(nil, append(zstdOptions(), zstd.WithEncoderConcurrency(zstdEncoders))...)
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	return &zstdCompressor{enc: enc}, nil
}

// Compress implements kgo.Compressor. Like franz-go's compressor with zstd
// alone, it leaves a batch uncompressed for a broker too old for zstd
// (produce requests before version 7), and the producer sends a batch
// uncompressed when compressing does not make it smaller.
func (c *zstdCompressor) Compress(dst *bytes.Buffer, src []byte, flags ...kgo.CompressFlag) ([]byte, kgo.CompressionCodecType) {
	if slices.Contains(flags, kgo.CompressDisableZstd) {
		return src, kgo.CodecNone
	}
	if n := c.enc.MaxEncodedSize(len(src)); n > dst.Cap() {
		dst.Grow(n)
	}
	return c.enc.EncodeAll(src, dst.Bytes()), kgo.CodecZstd
}

// compressionOpt is the producer's compression of a kafka.compression
// codec.
func compressionOpt(codec kgo.CompressionCodec) (kgo.Opt, error) {
	if codec != kgo.ZstdCompression() {
		return kgo.ProducerBatchCompression(codec), nil
	}
	c, err := newZstdCompressor()
	if err != nil {
		return nil, err
	}
	return kgo.WithCompressor(c), nil
}
