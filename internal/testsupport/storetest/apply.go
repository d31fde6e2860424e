package storetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// ApplyIncrement merges one message's increment records (FLOP, ADFT) in tx
// as a working set of its own, written at once (see engine.WorkingSet.Increment):
// the pump's path for a batch of one increment, without the pump.
func ApplyIncrement(ctx context.Context, tx *store.Tx, meta store.Meta, records []flight.Commands) (engine.IncrementEffect, error) {
	flids := make([]flight.FLID, len(records))
	for i, r := range records {
		flids[i] = r.FLID
	}
	set, err := tx.LoadSet(ctx, flids, len(records), nil)
	if err != nil {
		return engine.IncrementEffect{}, fmt.Errorf("message %d: %w", meta.MessageID, err)
	}
	out, err := set.Increment(meta, records)
	if err != nil {
		return engine.IncrementEffect{}, err
	}
	if err := tx.WriteSet(ctx, set); err != nil {
		return engine.IncrementEffect{}, fmt.Errorf("message %d: %w", meta.MessageID, err)
	}
	return out, nil
}

// DeleteFlights ends flight instances (FDEL) in tx as a working set of its
// own, written at once (see engine.WorkingSet.Delete).
func DeleteFlights(ctx context.Context, tx *store.Tx, meta store.Meta, flids []flight.FLID) (engine.DeleteEffect, error) {
	set, err := tx.LoadSet(ctx, flids, len(flids), nil)
	if err != nil {
		return engine.DeleteEffect{}, fmt.Errorf("message %d: %w", meta.MessageID, err)
	}
	out, err := set.Delete(meta, flids)
	if err != nil {
		return engine.DeleteEffect{}, err
	}
	if err := tx.WriteSet(ctx, set); err != nil {
		return engine.DeleteEffect{}, fmt.Errorf("message %d: delete: %w", meta.MessageID, err)
	}
	return out, nil
}

// FullRecord is a snapshot record of day for flid with every mapped field
// populated: scalars "<TAG>-<n>" (typed times 09SEP261200), each
// collection with two items carrying every item column — and, with
// unmapped, a key without a column, kept in attrs — the first gate being
// gate, anomalies and records.
func FullRecord(flid flight.FLID, day string, n int, gate string, unmapped bool) store.SnapshotRecord {
	var cmds []flight.Command
	for _, f := range flight.Fields() {
		switch f.Kind {
		case flight.KindScalar:
			v := fmt.Sprintf("%s-%d", f.Tag, n)
			if f.TypedTimeColumn != "" {
				v = "09SEP261200"
			}
			cmds = append(cmds, flight.Command{Tag: f.Tag, Op: flight.OpSet, Value: v})
		case flight.KindCollection:
			var items []flight.Item
			for k := 1; k <= 2; k++ {
				it := flight.Item{}
				if unmapped {
					it["XTRA"] = "x\"" + strconv.Itoa(k)
				}
				if f.SeqAttr != "" {
					it[f.SeqAttr] = strconv.Itoa(k)
				}
				for _, c := range f.ItemColumns {
					it[c] = strings.ToLower(c) + "-" + strconv.Itoa(k)
				}
				if f.Tag == "GTDT" && k == 1 {
					it["GATE"] = gate
				}
				items = append(items, it)
			}
			cmds = append(cmds, flight.Command{Tag: f.Tag, Op: flight.OpReplace, Items: items})
		case flight.KindAnomaly:
			cmds = append(cmds, flight.Command{Tag: f.Tag, Op: flight.OpSet, Anomaly: flight.Item{"DDES": "HKG", flight.TextKey: "wx"}})
		case flight.KindRecord:
			cmds = append(cmds, flight.Command{Tag: f.Tag, Op: flight.OpReplace, Items: []flight.Item{{"CODE": "X", flight.TextKey: "t"}}})
		}
	}
	return store.SnapshotRecord{Day: day, Cmds: flight.Commands{FLID: flid, Full: true, Cmds: cmds}}
}

// Record is a full snapshot record of day ("2026-09-09") for flid with
// FLNO flno, SODT 08:00 that day, and the extra commands, in field order.
func Record(flid flight.FLID, flno, day string, extra ...flight.Command) store.SnapshotRecord {
	sodt := day
	if d, err := time.Parse(time.DateOnly, day); err == nil {
		sodt = strings.ToUpper(d.Format("02Jan06")) + "0800"
	}
	cmds := []flight.Command{{Tag: "FLNO", Op: flight.OpSet, Value: flno}, {Tag: "SODT", Op: flight.OpSet, Value: sodt}}
	cmds = append(cmds, extra...)
	slices.SortFunc(cmds, func(a, b flight.Command) int { return flight.FieldOrder(a.Tag) - flight.FieldOrder(b.Tag) })
	return store.SnapshotRecord{Cmds: flight.Commands{FLID: flid, Full: true, Cmds: cmds}, Day: day}
}
