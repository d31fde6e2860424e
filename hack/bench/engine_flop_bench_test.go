package bench

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// passDoor lets every record through, measuring nothing but its bytes.
type passDoor struct{}

func (passDoor) Of(key, value []byte, _ []engine.Header) engine.RecordSize {
	n := len(key) + len(value)
	return engine.RecordSize{Uncompressed: n, Compressed: n}
}
func (passDoor) Fits(engine.RecordSize) bool { return true }
func (passDoor) Max() int                    { return 1 << 20 }

// BenchmarkEngineFLOPBacklog applies the e2e benchmark's live events (1,000
// mixed FLOPs, ADFTs and FDELs over a 2,000-flight day whose RESP made the
// stored states) to working sets as the pump does, 250 messages a batch,
// and takes each batch's Pending: the engine's part of a FLOP drain
// (merge, diff, state document, notice, history changes), decoding not
// included. One op is the 1,000 messages; cpu-ns/op is the process's CPU
// time (the collector's workers included), steadier than the wall time on
// a shared machine.
func BenchmarkEngineFLOPBacklog(b *testing.B) {
	const flights, messages, batch = 2000, 1000, 250
	opts := simulate.Options{Day: "2026-09-09", Flights: flights, Seed: 1, FirstSeqn: 2, Location: time.UTC}
	resp, err := sis.Decode([]byte(simulate.Response(opts).Body), sis.Options{})
	if err != nil {
		b.Fatal(err)
	}
	records := make([]flight.Commands, len(resp.Records))
	for i, r := range resp.Records {
		records[i] = r.Commands
	}
	writes, _, err := engine.MergeSnapshot(records, nil, true, opts.Day)
	if err != nil {
		b.Fatal(err)
	}
	base := make(map[flight.FLID]flight.State, len(writes))
	var flids []flight.FLID
	for _, w := range writes {
		base[w.Next.FLID] = w.Next
		flids = append(flids, w.Next.FLID)
	}
	type msg struct {
		meta   engine.Meta
		change engine.Change
	}
	var msgs []msg
	for i, m := range simulate.Backlog(opts, messages) {
		d, err := sis.Decode([]byte(m.Body), sis.Options{})
		if err != nil || (d.Kind != sis.KindFLOP && d.Kind != sis.KindADFT && d.Kind != sis.KindFDEL) {
			continue // the malformed ones
		}
		c := engine.Change{Deletions: d.Deletions}
		for _, r := range d.Records {
			c.Increments = append(c.Increments, r.Commands)
			flids = append(flids, r.FLID)
		}
		flids = append(flids, d.Deletions...)
		msgs = append(msgs, msg{engine.Meta{MessageID: int64(i + 1), Type: d.Meta.Type, Styp: d.Meta.Styp, Door: passDoor{}}, c})
	}
	now := time.Date(2026, 9, 9, 10, 0, 0, 0, time.UTC)
	plausible := engine.Plausibility{Location: time.UTC, Window: 48 * time.Hour}
	b.ReportAllocs()
	runtime.GC() // the setup's garbage is not the loop's
	cpu0 := processCPU(b)
	for b.Loop() {
		for start := 0; start < len(msgs); start += batch {
			versions := make([]int64, 2*batch)
			for i := range versions {
				versions[i] = int64(i + 1)
			}
			// Written is not called: the set never changes base.
			set := engine.NewWorkingSet(flids, base, versions, now)
			for _, m := range msgs[start:min(start+batch, len(msgs))] {
				if _, err := set.Apply(m.meta, m.change, plausible); err != nil {
					b.Fatal(err)
				}
			}
			if p := set.Pending(); len(p.Events) == 0 {
				b.Fatal("no events")
			}
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
