package pump_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// refRecord is a stored reference-data record as a test compares it: its
// record (compact JSON) and the message that last changed it.
type refRecord struct {
	Doc       string
	MessageID int64
}

// references reads the stored records of a reference-data type by key.
func (h *harness) references(typ string) map[string]refRecord {
	h.t.Helper()
	var recs []pumpdata.ReferenceRecord
	if h.mem != nil {
		h.mem.View(func(d pumptest.Data) {
			for _, r := range maps.All(d.Reference[typ]) {
				recs = append(recs, r)
			}
		})
	} else {
		var err error
		if recs, err = h.store.ReferenceRecords(context.Background(), typ, "", 1000); err != nil {
			h.t.Fatal(err)
		}
	}
	out := map[string]refRecord{}
	for _, r := range recs {
		var v any
		if err := json.Unmarshal(r.Doc, &v); err != nil {
			h.t.Fatalf("%s %s: %v", typ, r.Key, err)
		}
		doc, _ := json.Marshal(v)
		out[r.Key] = refRecord{Doc: string(doc), MessageID: r.MessageID}
	}
	return out
}

// refMessage is a reference-data message of typ/styp holding records.
func (m *sisMessages) refMessage(typ, styp string, records ...string) string {
	body := fmt.Sprintf("<RECS>%d</RECS>", len(records))
	for _, r := range records {
		body += "<" + typ + ">" + r + "</" + typ + ">"
	}
	return "<MSG>" + m.meta(typ, styp) + body + "</MSG>"
}

// TestReferenceDataIsAppliedInTheBatch: the interface's reference data
// is applied in the batch transaction and ends SUCCEEDED on its
// first attempt, like a FLOP, with the flight messages around it; a type
// the interface defines and FlightFeed does not apply (SCHS) ends SKIPPED
// (NOT_APPLIED) at once; a record without its key is DEAD and changes
// nothing.
func TestReferenceDataIsAppliedInTheBatch(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		dnld := h.put(h.refMessage("GLST", "DNLD", "<GCOD>B7</GCOD><GTNM>old</GTNM>", "<GCOD>B8</GCOD><GTML>T2</GTML>"))
		schs := h.put("<MSG>" + h.meta("SCHS", "DNLD") + "<SCHS><SNAM>W26</SNAM><RECS>0</RECS></SCHS></MSG>")
		flop := h.put(h.flop("ESTT", 9, "<ESTT>09SEP260930</ESTT>"))
		upd := h.put(h.refMessage("GLST", "UPD", "<GCOD>B7</GCOD><GTNM>new</GTNM>"))
		add := h.put(h.refMessage("GLST", "ADD", "<GCOD>B9</GCOD>"))
		del := h.put(h.refMessage("GLST", "DEL", "<GCOD>B8</GCOD>"))
		same := h.put(h.refMessage("GLST", "UPD", "<GCOD>B7</GCOD><GTNM>new</GTNM>"))
		airl := h.put(h.refMessage("AIRL", "DNLD", `<ITOP>CA</ITOP><ICOP>CCA</ICOP><OGRP>STAR ALLIANCE</OGRP>`))
		keyless := h.put(h.refMessage("GLST", "UPD", "<GTNM>nameless</GTNM>"))
		p := h.newPump()
		h.drain(p)
		for _, id := range []int64{dnld, flop, upd, add, del, same, airl} {
			h.wantRow(id, pumpdata.StatusSucceeded, "")
		}
		h.wantRow(schs, pumpdata.StatusSkipped, "NOT_APPLIED")
		h.wantRow(keyless, pumpdata.StatusDead, "MISSING_FIELD")
		for _, id := range []int64{schs, dnld, keyless} {
			if _, _, _, attempts := h.procState(id); attempts != 1 {
				t.Fatalf("message %d took %d attempts, want 1 (never retried)", id, attempts)
			}
		}
		if c := p.Status().Counts; c[pumpdata.StatusFailed] != 0 {
			t.Fatalf("counts %v: a reference or not-applied message was retried", c)
		}
		want := map[string]refRecord{
			// B7 repeated unchanged by `same`: it keeps the message that
			// changed it.
			"B7": {Doc: `{"GCOD":"B7","GTNM":"new"}`, MessageID: upd},
			"B9": {Doc: `{"GCOD":"B9"}`, MessageID: add},
		}
		if diff := cmp.Diff(want, h.references("GLST")); diff != "" {
			t.Fatalf("gates (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]refRecord{"CA": {Doc: `{"ICOP":"CCA","ITOP":"CA","OGRP":["STAR ALLIANCE"]}`, MessageID: airl}},
			h.references("AIRL")); diff != "" {
			t.Fatalf("airlines (-want +got):\n%s", diff)
		}
		if _, ok := h.flights()[9]; !ok {
			t.Fatal("the FLOP between reference messages was not applied")
		}

		// The answer to a reference request (RESP) is the whole list too.
		resp := h.put(h.refMessage("GLST", "RESP", "<GCOD>A1</GCOD>"))
		h.drain(h.newPump())
		h.wantRow(resp, pumpdata.StatusSucceeded, "")
		if diff := cmp.Diff(map[string]refRecord{"A1": {Doc: `{"GCOD":"A1"}`, MessageID: resp}}, h.references("GLST")); diff != "" {
			t.Fatalf("gates after RESP (-want +got):\n%s", diff)
		}
		if got := h.references("AIRL"); len(got) != 1 {
			t.Fatalf("another type's list changed: %v", got)
		}
	})
}

// deadFromAnOlderRelease makes mailbox row id what an older release left
// of a reference-data message: DEAD (UNSUPPORTED_TYPE), written back,
// its raw text archived.
func (h *harness) deadFromAnOlderRelease(id int64, body string) {
	h.t.Helper()
	const note = "UNSUPPORTED_TYPE: reference data GLST/DNLD is not processed (after 5 attempts)"
	digest := pumpdata.PayloadDigest([]byte(body))
	if h.mem != nil {
		h.mem.Update(func(d *pumptest.Data) {
			d.States[id] = pumpdata.ProcState{Status: pumpdata.StatusDead, Reason: "UNSUPPORTED_TYPE", Note: note, Attempts: 5,
				Finished: time.Now(), ReceivedAt: h.nextRow, Digest: digest}
			d.Archive[id] = pumpdata.ArchivedRow{MessageID: id, ReceivedAt: h.nextRow, Size: int64(len(body)), Body: []byte(body), Digest: digest}
		})
		if err := h.inbox.Backfill(h.t.Context(), []pumpdata.Backfill{{MessageID: id, Received: h.nextRow, Result: pumpdata.StatusDead, Note: note, Processed: time.Now()}}); err != nil {
			h.t.Fatal(err)
		}
		return
	}
	if _, err := h.db.Exec(h.t.Context(), `INSERT INTO proc_state (message_id, status, reason, note, attempts, received_at, payload_digest, finished_at)
		VALUES ($1, 'DEAD', 'UNSUPPORTED_TYPE', $2, 5, $3, $4, now())`, id, note, h.nextRow, digest); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.db.Exec(h.t.Context(), `INSERT INTO msg_archive (message_id, received_at, byte_size, digest, body) VALUES ($1, $2, $3, $4, $5)`,
		id, h.nextRow, len(body), digest, []byte(body)); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.mbox.ExecContext(h.t.Context(), `UPDATE CMINMSGS SET CMINMSGS_DATE_PROCESSED = NOW(), CMINMSGS_PROC_RESULT = 'DEAD',
		CMINMSGS_PROC_NOTE = ? WHERE CMINMSGS_ID = ?`, note, id); err != nil {
		h.t.Fatal(err)
	}
}

// TestReferenceMessageDeadFromAnOlderReleaseReplays: the upgrade note's
// way to load a list an older release made DEAD (UNSUPPORTED_TYPE):
// `replay --policy as-new` applies it to the reference store.
func TestReferenceMessageDeadFromAnOlderReleaseReplays(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		body := h.refMessage("GLST", "DNLD", "<GCOD>B7</GCOD>", "<GCOD>B8</GCOD>")
		id := h.put(body)
		h.deadFromAnOlderRelease(id, body)
		h.requestReplay(id, pumpdata.ReplayAsNew)
		h.drain(h.newPump())
		if r := h.replayOf(id); r.State != pumpdata.ReplayDone || r.Result != pumpdata.StatusSucceeded {
			t.Fatalf("replay %+v", r)
		}
		if got := h.references("GLST"); len(got) != 2 || got["B7"].MessageID != id {
			t.Fatalf("gates after the replay: %v", got)
		}
	})
}
