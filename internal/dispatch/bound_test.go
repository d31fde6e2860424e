package dispatch_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/testsupport/heapwatch"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
)

// The client reads a broker's response only up to twice the record size
// plus a margin (not franz-go's 100 MiB), and lowers the fetch size to
// match, which franz-go requires.
func TestClientReadBoundFollowsTheRecordSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		maxRecord   int32
		read, fetch int32
	}{
		{1 << 20, 6 << 20, 1 << 20}, // the default
		{4096, 2*4096 + 4<<20, 4096},
		// The most NewClient accepts: franz-go's 100 MiB write bound
		// refuses larger batches (kafka.maxRecordBytes allows 1 GiB).
		{100 << 20, 204 << 20, 100 << 20},
	} {
		f := bareFeed()
		f.Spec.Kafka.MaxRecordBytes = c.maxRecord
		cl, err := dispatch.NewClient(f)
		if err != nil {
			t.Fatalf("maxRecordBytes %d: %v", c.maxRecord, err)
		}
		read, _ := cl.OptValue(kgo.BrokerMaxReadBytes).(int32)
		fetch, _ := cl.OptValue(kgo.FetchMaxBytes).(int32)
		cl.Close()
		if read != c.read || fetch != c.fetch || read != dispatch.BrokerReadBytes(c.maxRecord) {
			t.Errorf("maxRecordBytes %d: read bound %d, fetch %d; want %d, %d", c.maxRecord, read, fetch, c.read, c.fetch)
		}
	}
}

// A broker that answers the client's first request (ApiVersions) with a
// size prefix of 1 GiB fails the request with an error giving the size and
// the limit, and the client reserves nothing for it.
func TestHugeBrokerResponseFailsTheRequest(t *testing.T) {
	ln := loopback.Serve(t, func(c net.Conn) {
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
			return
		}
		// The size, then zeros for as long as the client reads.
		_, _ = c.Write(binary.BigEndian.AppendUint32(nil, 1<<30))
		_, _ = io.Copy(c, zeroReader{})
	})
	f := bareFeed()
	f.Spec.Kafka.Brokers = []string{ln.Addr().String()}
	cl, err := dispatch.NewClient(f, kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var perr error
	peak, total := heapwatch.Run(func() { perr = cl.Ping(ctx) })
	t.Logf("broker claimed 1024 MiB; heap peak grew %.1f MiB, %.1f MiB allocated in all", float64(peak)/(1<<20), float64(total)/(1<<20))
	if want := "invalid large response size 1073741824 > limit 6291456"; perr == nil || !strings.Contains(perr.Error(), want) {
		t.Fatalf("got %v, want an error saying %q", perr, want)
	}
	if peak > 16<<20 {
		t.Errorf("heap peak grew %d MiB, want under 16 MiB", peak>>20)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
