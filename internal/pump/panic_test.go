package pump_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
)

// panicObserver counts the messages the pump made DEAD by a panic.
type panicObserver struct {
	pump.NopObserver
	mu     sync.Mutex
	panics int
	// largest is the most messages one committed batch held.
	largest int
}

func (o *panicObserver) BatchCommitted(messages int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.largest = max(o.largest, messages)
}

func (o *panicObserver) MessagePanicked() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.panics++
}

func (o *panicObserver) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.panics
}

// A panic while one message of a batch is decoded or applied makes that
// message alone DEAD (INTERNAL): the pump goes on, the other messages of
// the batch commit, the flights are those of a run without the message,
// the panic is counted once, noticed (an Event), and its stack is logged,
// never written to the mailbox's note.
func TestPanicMakesOnlyItsMessageDead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, stage string
		third       func(h *harness) string
	}{
		{"decoding", "decoding", func(h *harness) string { return h.flop("GTDT", 1, `<GTDT GTNO="1"><GATE>Z9</GATE></GTDT>`) }},
		{"applying an increment", "applying", func(h *harness) string {
			return h.flop("GTDT", 1, `<GTDT GTNO="1"><GATE>Z9</GATE></GTDT>`)
		}},
		{"applying a snapshot", "applying", func(h *harness) string {
			return h.schd("DNLD", fltr(1, "CA1", "09", "<ESTT>09SEP261111</ESTT>"), fltr(7, "CA7", "09"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			bodies := []string{
				h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"),
				h.flop("ESTT", 2, "<ESTT>09SEP260931</ESTT>"),
				c.third(h),
				h.flop("ESTT", 3, "<ESTT>09SEP260932</ESTT>"),
				h.flop("ESTT", 1, "<ESTT>09SEP260933</ESTT>"),
			}
			ids := make([]int64, len(bodies))
			for i, b := range bodies {
				ids[i] = h.put(b)
			}
			bad := ids[2]
			boom := func(id int64) {
				if id == bad {
					panic(fmt.Sprintf("injected\nfailure of row %d %s", id, strings.Repeat("x", 500)))
				}
			}
			var logs logLines
			obs := &panicObserver{}
			p := h.newPump(func(o *pump.Options) { o.Log, o.Observer = logs.logger(), obs })
			if c.stage == "decoding" {
				p.InjectPanics(boom, nil)
			} else {
				p.InjectPanics(nil, boom)
			}
			p.SetBatchSize(len(bodies)) // the five in one batch
			h.drain(p)

			for i, id := range ids {
				if id == bad {
					continue
				}
				h.wantRow(id, pumpdata.StatusSucceeded, "")
				if i > 2 && h.count(`SELECT count(*) FROM msg_event WHERE message_id = $1`, id) == 0 {
					t.Fatalf("row %d after the panic queued no event", id)
				}
			}
			r := h.wantRow(bad, pumpdata.StatusDead, "INTERNAL: panic while "+c.stage+": injected failure of row")
			if strings.Contains(r.Note, "goroutine") || strings.Contains(r.Note, "\n") || len(r.Note) > 300 {
				t.Fatalf("the note carries more than a short line: %q", r.Note)
			}
			dead, err := h.store.DeadMessages(t.Context(), store.DeadFilter{Reason: pump.ReasonInternal})
			if err != nil {
				t.Fatal(err)
			}
			if len(dead) != 1 || dead[0].MessageID != bad || dead[0].Status != pumpdata.StatusDead {
				t.Fatalf("flightfeed dead --reason INTERNAL lists %+v, want row %d", dead, bad)
			}
			if h.count(`SELECT count(*) FROM msg_event WHERE message_id = $1`, bad) != 0 {
				t.Fatal("the panicking message queued events")
			}
			if h.count(`SELECT count(*) FROM msg_archive WHERE message_id = $1`, bad) != 1 {
				t.Fatal("the panicking message was not archived")
			}
			if n := obs.count(); n != 1 {
				t.Fatalf("panics counted %d times, want 1", n)
			}
			obs.mu.Lock()
			largest := obs.largest
			obs.mu.Unlock()
			if largest != len(bodies) {
				t.Fatalf("the largest committed batch held %d messages, want all %d in one", largest, len(bodies))
			}
			var noticed int
			for _, n := range p.DrainNotices() {
				if n.Kind == pump.NoticePanic && n.MessageID == bad && n.Reason == pump.ReasonInternal {
					noticed++
				}
			}
			if noticed != 1 {
				t.Fatalf("%d MessagePanicked notices for row %d", noticed, bad)
			}
			if logs.matching(fmt.Sprintf(`"msg_id"=%d`, bad)) == 0 || logs.matching("goroutine ") == 0 {
				t.Fatalf("no log line with the row's id and the stack:\n%s", strings.Join(logs.lines, "\n"))
			}

			// The same messages without the third one.
			clean := newHarness(t)
			for i, b := range bodies {
				if i != 2 {
					clean.put(b)
				}
			}
			clean.drain(clean.newPump())
			if got, want := versionField.ReplaceAllString(h.export(), ""), versionField.ReplaceAllString(clean.export(), ""); got != want {
				t.Fatalf("flights after the panic:\n%s\nwithout the message:\n%s", got, want)
			}
		})
	}
}
