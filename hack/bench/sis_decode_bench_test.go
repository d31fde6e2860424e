package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/simulate"
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

// tokenScan is the reference: a plain encoding/xml RawToken pass over the
// same bytes, with no decoding work at all. The decoder reads XML with its
// own tokenizer (package sis), so a ratio below 1 is possible: it says the
// whole decode costs less than encoding/xml's bare token pass.
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

// BenchmarkSISDecodeFLOPBacklog decodes the e2e benchmark's live events (a
// backlog of 1,000 mixed FLOPs over a 2,000-flight day, as make bench puts
// them in the mailbox), one message at a time as the pump does, and reports
// the ratio to a plain token scan of the same messages (x-token-scan).
func BenchmarkSISDecodeFLOPBacklog(b *testing.B) {
	day := time.Date(2026, 9, 9, 0, 0, 0, 0, time.UTC)
	msgs := simulate.Backlog(simulate.Options{Day: day.Format("2006-01-02"), Flights: 2000, Seed: 1, FirstSeqn: 2, Location: time.UTC}, 1000)
	raws := make([][]byte, len(msgs))
	size := 0
	for i, m := range msgs {
		raws[i] = []byte(m.Body)
		size += len(m.Body)
	}
	var baseline time.Duration
	for range 3 {
		start := time.Now()
		for _, raw := range raws {
			if err := tokenScan(raw); err != nil {
				b.Fatal(err)
			}
		}
		if d := time.Since(start); baseline == 0 || d < baseline {
			baseline = d
		}
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, raw := range raws {
			if _, err := sis.Decode(raw, sis.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	perOp := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(perOp)/float64(baseline), "x-token-scan")
	b.ReportMetric(float64(perOp.Microseconds())/float64(len(raws)), "µs/message")
}
