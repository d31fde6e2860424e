package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flightfeed/flightfeed/hack/bench/rounds"
	"github.com/flightfeed/flightfeed/internal/simulate"
)

// compare drains the same backlog with the baseline binary and with the
// binary under test (-baseline, -bin), round by round on fresh databases,
// the order alternating so that neither always runs on the warmer or
// the busier machine: each round is a 2,000-flight RESP, then the first
// -backlogs size of FLOPs, then (-latency not 0) the latency run on the
// same feed. It prints every drain, then the medians of each binary and
// their ratios (binary under test / baseline): what a change costs,
// measured in one run on one machine; and the medians of the latency
// runs' percentiles, by phase.
func compare(ctx context.Context, o options, tps pgbenchRates) error {
	base, err := filepath.Abs(o.baseline)
	if err != nil {
		return err
	}
	if _, err := os.Stat(base); err != nil {
		return fmt.Errorf("-baseline %s: %w (hack/bench/baseline.sh builds one)", base, err)
	}
	if o.rounds < 1 {
		return fmt.Errorf("-rounds %d: at least 1", o.rounds)
	}
	if len(o.backlogs) == 0 {
		return compareRESP(ctx, o, base)
	}
	n := o.backlogs[0]
	fmt.Printf("compare: %d rounds of a %d-flight RESP then %d FLOPs; baseline %s, under test %s\n", o.rounds, o.flights, n, base, o.bin)
	bins := map[string]string{"baseline": base, "test": o.bin}
	got := map[string][]drainFigures{}
	lat := map[string][]latencyFigures{}
	for r := 1; r <= o.rounds; r++ {
		for _, which := range rounds.Order(r, true) {
			fo := o
			fo.bin = bins[which]
			fmt.Printf("-- round %d, %s\n", r, which)
			d, l, err := compareDrain(ctx, fo, fmt.Sprintf("cmp%d%s", r, which[:1]), n, tps)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r, which, err)
			}
			got[which] = append(got[which], d)
			lat[which] = append(lat[which], l)
		}
	}
	if o.latency > 0 {
		printLatencyMedians(o.rounds, lat["baseline"], lat["test"])
	}
	b, t := medianFigures(got["baseline"]), medianFigures(got["test"])
	fmt.Printf("medians of %d rounds, %d FLOPs:    %10s %10s %10s %10s %10s %10s %10s\n", o.rounds, n,
		"msgs/s", "µs all", "µs pump", "µs feed db", "µs mailbox", "WAL rec", "WAL bytes")
	row := func(name string, d drainFigures) {
		fmt.Printf("  %-32s %10.0f %10.1f %10.1f %10.1f %10.1f %10.2f %10.0f\n", name, d.rate, d.all, d.pump, d.feedPG, d.feedMy, d.walRecords, d.walBytes)
	}
	row("baseline", b)
	row("under test", t)
	fmt.Printf("  %-32s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", "ratio (under test / baseline)",
		rounds.Ratio(t.rate, b.rate), rounds.Ratio(t.all, b.all), rounds.Ratio(t.pump, b.pump), rounds.Ratio(t.feedPG, b.feedPG), rounds.Ratio(t.feedMy, b.feedMy),
		rounds.Ratio(t.walRecords, b.walRecords), rounds.Ratio(t.walBytes, b.walBytes))
	return nil
}

// compareDrain is one round's drain with o.bin on fresh databases, and
// its latency run when o.latency is not 0.
func compareDrain(ctx context.Context, o options, name string, n int, tps pgbenchRates) (drainFigures, latencyFigures, error) {
	f, err := newFeed(ctx, o, name)
	if err != nil {
		return drainFigures{}, latencyFigures{}, err
	}
	defer f.close(ctx)
	empty, err := f.drain(ctx, "empty")
	if err != nil {
		return drainFigures{}, latencyFigures{}, err
	}
	if _, err := f.resp(ctx, o.flights, empty); err != nil {
		return drainFigures{}, latencyFigures{}, err
	}
	d, err := f.backlog(ctx, n, empty, tps)
	if err != nil || o.latency == 0 {
		return d, latencyFigures{}, err
	}
	l, err := f.latencyRun(ctx)
	return d, l, err
}

// printLatencyMedians prints, for the baseline and the binary under test,
// the medians over the rounds of each latency phase's p50, p99 and max,
// and of the run's CPU per message.
func printLatencyMedians(n int, base, test []latencyFigures) {
	fmt.Printf("latency, medians of %d rounds (ms):%46s %23s\n", n, "baseline p50/p99/max", "under test p50/p99/max")
	at := func(get func(latencyFigures) []time.Duration, i int) func(latencyFigures) float64 {
		return func(l latencyFigures) float64 { return msf(get(l)[i]) }
	}
	p50 := func(l latencyFigures) []time.Duration { return l.p50 }
	p99 := func(l latencyFigures) []time.Duration { return l.p99 }
	pmax := func(l latencyFigures) []time.Duration { return l.max }
	for i, ph := range latencyPhases {
		fmt.Printf("  %-76s %6.1f %6.1f %6.1f    %6.1f %6.1f %6.1f\n", ph.name,
			rounds.Median(base, at(p50, i)), rounds.Median(base, at(p99, i)), rounds.Median(base, at(pmax, i)),
			rounds.Median(test, at(p50, i)), rounds.Median(test, at(p99, i)), rounds.Median(test, at(pmax, i)))
	}
	cpu := func(ls []latencyFigures) string {
		return fmt.Sprintf("pump %.0f, feed's PostgreSQL %.0f, mailbox %.0f",
			rounds.Median(ls, func(l latencyFigures) float64 { return l.pump }),
			rounds.Median(ls, func(l latencyFigures) float64 { return l.feedPG }),
			rounds.Median(ls, func(l latencyFigures) float64 { return l.feedMy }))
	}
	fmt.Printf("  CPU µs per message: baseline %s; under test %s\n", cpu(base), cpu(test))
}

// medianFigures is each figure's median over the rounds (each figure on
// its own: the median rate and the median CPU may come from different
// rounds).
func medianFigures(ds []drainFigures) drainFigures {
	med := func(get func(drainFigures) float64) float64 { return rounds.Median(ds, get) }
	return drainFigures{
		rate:       med(func(d drainFigures) float64 { return d.rate }),
		all:        med(func(d drainFigures) float64 { return d.all }),
		pump:       med(func(d drainFigures) float64 { return d.pump }),
		feedPG:     med(func(d drainFigures) float64 { return d.feedPG }),
		feedMy:     med(func(d drainFigures) float64 { return d.feedMy }),
		walRecords: med(func(d drainFigures) float64 { return d.walRecords }),
		walBytes:   med(func(d drainFigures) float64 { return d.walBytes }),
	}
}

// compareRESP is compare without a backlog (-backlogs=): each round
// drains a full-day RESP of -flights and one of -big-flights (when not 0)
// with each binary, each on fresh databases, the order alternating; it
// prints every drain, then per size the medians of each binary (time to
// the last record in Kafka less the empty drain, CPU of all processes
// and of the pump less the empty drain's, the pump's peak RSS) and their
// ratios.
func compareRESP(ctx context.Context, o options, base string) error {
	sizes := []int{o.flights}
	if o.bigFlights > 0 {
		sizes = append(sizes, o.bigFlights)
	}
	fmt.Printf("compare: %d rounds of full-day RESPs of %v flights; baseline %s, under test %s\n", o.rounds, sizes, base, o.bin)
	bins := map[string]string{"baseline": base, "test": o.bin}
	type key struct {
		which string
		n     int
	}
	got := map[key][]respFigures{}
	for r := 1; r <= o.rounds; r++ {
		for _, n := range sizes {
			for _, which := range rounds.Order(r, true) {
				fo := o
				fo.bin = bins[which]
				fmt.Printf("-- round %d, %s, %d flights\n", r, which, n)
				d, err := compareRESPDrain(ctx, fo, fmt.Sprintf("cmp%d%s%d", r, which[:1], n), n)
				if err != nil {
					return fmt.Errorf("round %d, %s, %d flights: %w", r, which, n, err)
				}
				got[key{which, n}] = append(got[key{which, n}], d)
			}
		}
	}
	fmt.Printf("medians of %d rounds:                 %10s %10s %10s %10s %10s\n", o.rounds, "RESP s", "CPU all s", "CPU pump s", "RSS MB", "again s")
	for _, n := range sizes {
		b, t := medianRESP(got[key{"baseline", n}]), medianRESP(got[key{"test", n}])
		row := func(name string, d respFigures) {
			fmt.Printf("  %-34s %10.3f %10.2f %10.2f %10.0f %10.3f\n", name, d.took, d.all, d.pump, d.rss, d.again)
		}
		row(fmt.Sprintf("%d flights, baseline", n), b)
		row(fmt.Sprintf("%d flights, under test", n), t)
		fmt.Printf("  %-34s %10.3f %10.3f %10.3f %10.3f %10.3f\n", "ratio (under test / baseline)",
			rounds.Ratio(t.took, b.took), rounds.Ratio(t.all, b.all), rounds.Ratio(t.pump, b.pump), rounds.Ratio(t.rss, b.rss), rounds.Ratio(t.again, b.again))
	}
	return nil
}

// respFigures are one RESP drain's figures: seconds to Kafka and CPU
// seconds (all processes, the pump), each less the empty drain's, and the
// pump's peak RSS in MB; again is the drain of the same day's RESP once
// more (the same flights, unchanged: a day asked for again), less the
// empty drain.
type respFigures struct {
	took, all, pump, rss, again float64
}

// compareRESPDrain is one round's RESP of n flights with o.bin on fresh
// databases.
func compareRESPDrain(ctx context.Context, o options, name string, n int) (respFigures, error) {
	f, err := newFeed(ctx, o, name)
	if err != nil {
		return respFigures{}, err
	}
	defer f.close(ctx)
	empty, err := f.drain(ctx, "empty")
	if err != nil {
		return respFigures{}, err
	}
	r, err := f.resp(ctx, n, empty)
	if err != nil {
		return respFigures{}, err
	}
	if err := f.put(ctx, []simulate.Message{simulate.Response(f.opts(n))}); err != nil {
		return respFigures{}, err
	}
	f.seqn++
	again, err := f.drain(ctx, fmt.Sprintf("again%d", n))
	if err != nil {
		return respFigures{}, err
	}
	fmt.Printf("RESP %5d flights again (unchanged): %s (process %s)\n", n, ms(again.took-empty.took), ms(again.took))
	return respFigures{took: r.took.Seconds(), all: r.cpuTotal.Seconds(), pump: (r.procs.pump - empty.procs.pump).Seconds(),
		rss: float64(r.rssMB), again: (again.took - empty.took).Seconds()}, nil
}

// medianRESP is each figure's median over the rounds.
func medianRESP(ds []respFigures) respFigures {
	med := func(get func(respFigures) float64) float64 { return rounds.Median(ds, get) }
	return respFigures{
		took:  med(func(d respFigures) float64 { return d.took }),
		all:   med(func(d respFigures) float64 { return d.all }),
		pump:  med(func(d respFigures) float64 { return d.pump }),
		rss:   med(func(d respFigures) float64 { return d.rss }),
		again: med(func(d respFigures) float64 { return d.again }),
	}
}
