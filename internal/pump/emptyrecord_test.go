package pump_test

import (
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
)

// TestEmptyRecordTagClearsStoredField: a flight whose RESP carried every
// text and grouped record gets one FLOP per record with the empty tag (SIS
// §1.6.3: an empty tag deletes the value). After the round trip through the
// mailbox, decoder, merge engine and store, none of the six fields is stored
// any more, and the flight's last KAFKA_SCHD document has no key for them
// and no empty object anywhere.
func TestEmptyRecordTagClearsStoredField(t *testing.T) {
	eachBackend(t, func(t *testing.T, h *harness) {
		tags := []string{"SRVT", "VIPF", "MAFL", "PSHT", "TIPT", "PORT"}
		var records []string
		for _, tag := range tags {
			records = append(records, "<"+tag+"><ITEM>one</ITEM></"+tag+">")
		}
		h.put(h.schd("RESP", fltr(1, "CA1", "09", records...)))
		p := h.newPump()
		h.drain(p)
		before := h.flights()[1]
		for _, tag := range tags {
			if len(before.Lists[tag]) != 1 {
				t.Fatalf("after the RESP %s = %v, want one item", tag, before.Lists[tag])
			}
		}

		empty := []string{"<%s/>", "<%s></%s>"}
		for i, tag := range tags {
			form := strings.ReplaceAll(empty[i%2], "%s", tag)
			h.put(h.flop(tag, 1, form))
		}
		h.drain(p)

		after := h.flights()[1]
		for _, tag := range tags {
			if items, ok := after.Lists[tag]; ok {
				t.Errorf("after the empty-tag FLOP %s is still stored: %v", tag, items)
			}
		}
		if after.StateVersion != before.StateVersion+int64(len(tags)) {
			t.Errorf("state version %d -> %d, want one bump per FLOP", before.StateVersion, after.StateVersion)
		}
		payload := h.lastState(1)
		for _, tag := range tags {
			if strings.Contains(payload, `"`+tag+`"`) {
				t.Errorf("KAFKA_SCHD still names %s: %s", tag, payload)
			}
		}
		if strings.Contains(payload, "{}") {
			t.Errorf("KAFKA_SCHD holds an empty object: %s", payload)
		}
	})
}

// lastState is the newest KAFKA_SCHD state document of flight flid.
func (h *harness) lastState(flid flight.FLID) string {
	h.t.Helper()
	var payload string
	if h.mem != nil {
		h.mem.View(func(d pumptest.Data) {
			for _, e := range d.Outbox {
				if e.FLID == flid && e.State != "" {
					payload = e.State
				}
			}
		})
		return payload
	}
	if err := h.db.QueryRow(h.t.Context(), `SELECT payload FROM msg_event_record WHERE flid = $1 AND kind = 'KAFKA_SCHD' ORDER BY id DESC LIMIT 1`, int64(flid)).Scan(&payload); err != nil {
		h.t.Fatal(err)
	}
	return payload
}
