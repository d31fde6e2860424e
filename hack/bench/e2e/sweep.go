package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// sweepPoint is one RESP of the sweep.
type sweepPoint struct {
	flights int
	took    time.Duration // less the empty drain
	cpu     time.Duration // all processes, less the empty drain
	rssMB   int64
}

// sweep drains a full-day RESP of each flight count on fresh databases and
// prints a Markdown table of time against flights (with the pgbench
// figures of the same run for scale) and, with -chart, an SVG chart.
func sweep(ctx context.Context, o options, tps pgbenchRates) error {
	var points []sweepPoint
	for _, n := range o.sweep {
		f, err := newFeed(ctx, o, fmt.Sprintf("sweep%d", n))
		if err != nil {
			return err
		}
		empty, err := f.drain(ctx, "empty")
		if err != nil {
			f.close(ctx)
			return err
		}
		r, err := f.resp(ctx, n, empty)
		f.close(ctx)
		if err != nil {
			return err
		}
		points = append(points, sweepPoint{flights: n, took: r.took, cpu: r.cpuTotal, rssMB: r.rssMB})
	}
	fmt.Printf("\nRESP sweep (pgbench -c 1 in this run: %.0f TPS, %.0f TPS with -N)\n\n", tps.tpcb, tps.noUpdates)
	fmt.Println("| flights | RESP to Kafka | per flight | CPU, all processes | pump peak RSS |")
	fmt.Println("|---:|---:|---:|---:|---:|")
	for _, p := range points {
		fmt.Printf("| %d | %.2f s | %.0f µs | %.2f s | %d MB |\n", p.flights, p.took.Seconds(),
			float64(p.took.Microseconds())/float64(p.flights), p.cpu.Seconds(), p.rssMB)
	}
	if o.chart == "" {
		return nil
	}
	if err := os.WriteFile(o.chart, []byte(sweepSVG(points)), 0o644); err != nil { //nolint:gosec // a chart for the docs
		return fmt.Errorf("write the chart: %w", err)
	}
	fmt.Printf("\nchart: %s\n", o.chart)
	return nil
}

// sweepSVG draws the RESP time (seconds) against the flight count: a
// line with its points, axes and ticks, plain SVG without scripts.
func sweepSVG(points []sweepPoint) string {
	const w, h, left, right, top, bottom = 640.0, 360.0, 60.0, 20.0, 30.0, 50.0
	maxX, maxY := 0.0, 0.0
	for _, p := range points {
		maxX = math.Max(maxX, float64(p.flights))
		maxY = math.Max(maxY, p.took.Seconds())
	}
	maxX = niceCeil(maxX)
	maxY = niceCeil(maxY * 1.1)
	x := func(v float64) float64 { return left + v/maxX*(w-left-right) }
	y := func(v float64) float64 { return h - bottom - v/maxY*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14">Full-day RESP to Kafka: time against flights (make bench-sweep)</text>`+"\n", left)
	for i := 0; i <= 5; i++ {
		vx, vy := maxX*float64(i)/5, maxY*float64(i)/5
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(vy), w-right, y(vy))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.2g s</text>`+"\n", left-6, y(vy)+4, vy)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n", x(vx), h-bottom+18, vx)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top, left, h-bottom)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">flights in the RESP</text>`+"\n", (left+w-right)/2, h-12)
	var line []string
	for _, p := range points {
		line = append(line, fmt.Sprintf("%.1f,%.1f", x(float64(p.flights)), y(p.took.Seconds())))
	}
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>`+"\n", strings.Join(line, " "))
	for _, p := range points {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="#1f77b4"><title>%d flights: %.2f s</title></circle>`+"\n",
			x(float64(p.flights)), y(p.took.Seconds()), p.flights, p.took.Seconds())
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
