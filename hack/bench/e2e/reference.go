package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// referenceRun drains n FLOPs, then n reference-data messages of every
// type (a whole list of 20 records, an update, an addition, a deletion, in
// turn), each a drain of its own on the same feed, and prints both times
// and their ratio (a reference message costs what a FLOP costs;
// before, each one was retried with back-off and took ~2.7 s of the FIFO).
func (f *feed) referenceRun(ctx context.Context, n int, empty result) error {
	flops := simulate.Backlog(f.opts(f.o.flights), n)
	f.seqn += n
	if err := f.put(ctx, flops); err != nil {
		return err
	}
	fr, err := f.drain(ctx, fmt.Sprintf("flops%d", n))
	if err != nil {
		return err
	}
	refs := referenceMessages(n, f.seqn)
	f.seqn += n
	if err := f.put(ctx, refs); err != nil {
		return err
	}
	rr, err := f.drain(ctx, fmt.Sprintf("reference%d", n))
	if err != nil {
		return err
	}
	var ok int
	if err := f.mbox.QueryRowContext(ctx, `SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_PROC_RESULT = 'SUCCEEDED'
		AND CMINMSGS_CLOB_MSG LIKE '%<STYP>%' AND CMINMSGS_CLOB_MSG NOT LIKE '%<TYPE>FLOP</TYPE>%' AND CMINMSGS_CLOB_MSG NOT LIKE '%<TYPE>SCHD</TYPE>%'`).Scan(&ok); err != nil {
		return err
	}
	if ok != n {
		return fmt.Errorf("%d reference messages: %d SUCCEEDED", n, ok)
	}
	ft, rt := fr.took-empty.took, rr.took-empty.took
	fmt.Printf("reference data: %d messages %s vs %d FLOPs %s (processes %s, %s) = %.2fx the FLOPs' time\n",
		n, ms(rt), n, ms(ft), ms(rr.took), ms(fr.took), rt.Seconds()/ft.Seconds())
	fmt.Printf("  FLOPs: %s\n  reference: %s\n", fr.cpu, rr.cpu)
	return nil
}

// referenceMessages are n reference-data messages cycling through the
// interface's types and operations, SEQN from seqn.
func referenceMessages(n, seqn int) []simulate.Message {
	kinds := sis.ReferenceKinds()
	ops := []string{"DNLD", "UPD", "ADD", "DEL"}
	out := make([]simulate.Message, n)
	for i := range n {
		k := kinds[i%len(kinds)]
		op := ops[(i/len(kinds))%len(ops)]
		key := k.Key[0]
		var b strings.Builder
		fmt.Fprintf(&b, "<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DDTM>20261206080000</DDTM><TYPE>%s</TYPE><STYP>%s</STYP></META>",
			(seqn+i)%999999+1, k.Type, op)
		records := 1
		if op == "DNLD" {
			records = 20
		}
		fmt.Fprintf(&b, "<RECS>%d</RECS>", records)
		for r := range records {
			fmt.Fprintf(&b, "<%s><%s>K%03d</%s><NAME>%s record %d</NAME><CODE>%d</CODE></%s>", k.Type, key, r, key, k.Name, r, i, k.Type)
		}
		b.WriteString("</MSG>")
		out[i] = simulate.Message{Body: b.String()}
	}
	return out
}
