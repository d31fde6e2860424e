package bench

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/flightfeed/flightfeed/internal/dispatch"
)

// BenchmarkKafkaCodec weighs the producer's codecs on the dispatcher's
// records: a 2,000-flight day whose every flight then changes its ESTT
// (each change a state and a notice record, 1.4 KB of JSON on average).
// They go through franz-go to an in-process kfake broker as the
// dispatcher sends them, a pass at a steady rate (a message a pass: each
// record alone in its batch) and a backlog's pass (every record in one
// flush), and the metrics are the bytes of the record batches on the wire
// (what the broker stores) and the CPU of compressing them, taken from the
// compressing thread's own CPU time (RUSAGE_THREAD), which a loaded
// machine does not inflate the way it does wall time:
//
//	go test -bench KafkaCodec -run '^$' -benchtime 1x ./hack/bench/
func BenchmarkKafkaCodec(b *testing.B) {
	s, epoch := benchStore(b)
	defer s.Close()
	for r := range 2 {
		if err := applyRound(s, epoch, int64(r+1), 2000, r); err != nil {
			b.Fatal(err)
		}
	}
	ev, err := s.PendingEvents(context.Background(), 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	var recs []*kgo.Record
	for _, e := range ev {
		if e.MessageID != 2 { // the changes, not the day's first snapshot
			continue
		}
		r, err := dispatch.Record(e, dispatch.Topics{State: "KAFKA_SCHD", Notice: "KAFKA_MSG"})
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, r)
	}
	const steadyRecords = 400
	for _, mode := range []struct {
		name    string
		recs    []*kgo.Record
		perPass int
	}{{"steady", recs[:steadyRecords], 2}, {"backlog", recs, len(recs)}} {
		// The batches' records sections as the producer builds them
		// before compressing: sent with the codec none.
		_, raw := produceCounted(b, kgo.NoCompression(), mode.recs, mode.perPass)
		for _, c := range []struct {
			name  string
			codec kgo.CompressionCodec
		}{
			{"none", kgo.NoCompression()},
			{"zstd-default", kgo.ZstdCompression()},
			{"zstd-fastest", kgo.ZstdCompression().WithLevel(int(zstd.SpeedFastest))},
			{"zstd-better", kgo.ZstdCompression().WithLevel(int(zstd.SpeedBetterCompression))},
			{"lz4", kgo.Lz4Compression()},
		} {
			b.Run(mode.name+"/"+c.name, func(b *testing.B) {
				var wire int
				var cpu time.Duration
				for range b.N {
					wire, _ = produceCounted(b, c.codec, mode.recs, mode.perPass)
					cpu += compressCPU(b, c.codec, raw)
				}
				n := float64(len(mode.recs))
				b.ReportMetric(float64(wire)/n, "wire-B/record")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/n, "compress-cpu-ns/record")
				b.ReportMetric(float64(len(raw)), "batches")
			})
		}
	}
}

// batchHeader is a v2 record batch's header, before its records.
const batchHeader = 61

// produceCounted produces recs perPass at a time, a flush a pass, as the
// dispatcher's client does (manual flushing, sticky key partitioning), and
// returns the bytes of the record batches the broker received and each
// batch's records section as sent.
func produceCounted(b *testing.B, codec kgo.CompressionCodec, recs []*kgo.Record, perPass int) (wire int, batches [][]byte) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "KAFKA_SCHD", "KAFKA_MSG"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	counting := false
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		if counting {
			for _, t := range req.(*kmsg.ProduceRequest).Topics {
				for _, p := range t.Partitions {
					wire += len(p.Records)
					batches = append(batches, bytes.Clone(p.Records[batchHeader:]))
				}
			}
		}
		return nil, nil, false
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ManualFlushing(), kgo.MaxBufferedRecords(len(recs)+1),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.ProducerBatchCompression(codec))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	cl.Produce(ctx, &kgo.Record{Topic: "KAFKA_MSG", Key: []byte("warm-up")}, nil) // metadata, producer id
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	counting = true
	mu.Unlock()
	for i := 0; i < len(recs); i += perPass {
		for _, r := range recs[i:min(i+perPass, len(recs))] {
			r2 := *r
			cl.Produce(ctx, &r2, func(_ *kgo.Record, err error) {
				if err != nil {
					b.Error(err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return wire, batches
}

// compressReps is how many times compressCPU compresses the batches, so
// that each measure spans many scheduler ticks.
const compressReps = 10

// compressCPU is the CPU time the codec's default compressor (the
// producer's) takes over the batches (the mean of compressReps), measured on this goroutine's locked
// thread.
func compressCPU(b *testing.B, codec kgo.CompressionCodec, batches [][]byte) time.Duration {
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		b.Fatal(err)
	}
	if comp == nil {
		return 0
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var buf bytes.Buffer
	start := threadCPU(b)
	for range compressReps {
		for _, raw := range batches {
			buf.Reset()
			comp.Compress(&buf, raw)
		}
	}
	return (threadCPU(b) - start) / compressReps
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID,
// exact to the nanosecond, where getrusage counts in scheduler ticks).
func threadCPU(b *testing.B) time.Duration {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID, Linux
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		b.Fatal(errno)
	}
	return time.Duration(ts.Nano())
}
