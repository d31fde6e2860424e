package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/sis/sistest"
)

// fullDayRecords is the largest snapshot the protocol allows (RECS ≤ 9999).
const fullDayRecords = 9999

var (
	dnldOnce sync.Once
	dnldRaw  []byte
)

// fullDNLD builds the ~30 MB, 9,999-record DNLD once per process.
func fullDNLD(b *testing.B) []byte {
	b.Helper()
	dnldOnce.Do(func() { dnldRaw = sistest.DNLD(fullDayRecords) })
	return dnldRaw
}

// tokenScan is the baseline: a plain encoding/xml RawToken pass over the same
// bytes, with no decoding work at all. The codec cannot be faster than this.
func tokenScan(raw []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(raw))
	for {
		_, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// baselinePerOp times tokenScan over raw (best of three runs).
func baselinePerOp(b *testing.B, raw []byte) time.Duration {
	b.Helper()
	best := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		if err := tokenScan(raw); err != nil {
			b.Fatal(err)
		}
		best = min(best, time.Since(start))
	}
	return best
}

// BenchmarkSISDecodeFullDayDNLD decodes a 9,999-record DNLD into commands and
// reports, besides ns/op, MB/s and allocations, the ratio of its time to a
// plain token scan of the same bytes measured in the same run
// (x-token-scan). "default" is what the pump gets (records decoded on all
// cores); "sequential" pins one worker.
func BenchmarkSISDecodeFullDayDNLD(b *testing.B) {
	b.Run("default", func(b *testing.B) { benchDecode(b, sis.Options{}) })
	b.Run("sequential", func(b *testing.B) { benchDecode(b, sis.Options{Workers: 1}) })
}

func benchDecode(b *testing.B, opts sis.Options) {
	raw := fullDNLD(b)
	baseline := baselinePerOp(b, raw)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		msg, err := sis.Decode(raw, opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(msg.Records) != fullDayRecords {
			b.Fatalf("decoded %d records, want %d", len(msg.Records), fullDayRecords)
		}
	}
	b.StopTimer()
	perOp := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(perOp)/float64(baseline), "x-token-scan")
	b.ReportMetric(float64(len(raw))/1e6, "input-MB")
}

// BenchmarkSISTokenScanBaseline is the baseline on its own, for reference.
func BenchmarkSISTokenScanBaseline(b *testing.B) {
	raw := fullDNLD(b)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := tokenScan(raw); err != nil {
			b.Fatal(err)
		}
	}
}
