package pump_test

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// noise is n bytes of base64 text of seeded random bytes: no codec shrinks
// it much.
func noise(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 19))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// A message whose flight state would make a Kafka record larger than
// kafka.maxRecordBytes is DEAD at the door (STATE_TOO_LARGE, naming the
// flight, the field that grew and the size) and changes nothing: no state,
// no event. The messages around it apply; a snapshot with such a flight is
// refused whole, like any refused snapshot.
func TestOversizeStateIsDeadAtTheDoor(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		first := h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"))
		// Each value is within the decoder's 16 KiB; together they are not.
		grow := h.put(h.flop("REMC", 1, "<REMC>"+noise(1, 9000)+"</REMC><LACL>"+noise(2, 9000)+"</LACL>"))
		after := h.put(h.flop("ESTT", 1, "<ESTT>09SEP260945</ESTT>"))
		snap := h.put(h.schd("DNLD", fltr(2, "CA2", "09", "<REMC>"+noise(3, 9000)+"</REMC><LACL>"+noise(4, 9000)+"</LACL>")))
		h.drain(h.newPump())

		h.wantRow(first, pumpdata.StatusSucceeded, "")
		h.wantRow(after, pumpdata.StatusSucceeded, "")
		r := h.wantRow(grow, pumpdata.StatusDead, pump.ReasonStateTooLarge)
		for _, want := range []string{"flight 1", "kafka.maxRecordBytes 16384", "largest field"} {
			if !strings.Contains(r.Note, want) {
				t.Errorf("note %q does not say %q", r.Note, want)
			}
		}
		if !strings.Contains(r.Note, "REMC") && !strings.Contains(r.Note, "LACL") {
			t.Errorf("note %q names neither field that grew", r.Note)
		}
		h.wantRow(snap, pumpdata.StatusDead, pump.ReasonStateTooLarge)
		if n, _ := h.events(grow); n != 0 {
			t.Fatalf("%d outbox events of the refused FLOP", n)
		}
		if n, _ := h.events(snap); n != 0 {
			t.Fatalf("%d outbox events of refused messages", n)
		}
		fl := h.flights()
		if s, ok := fl[1]; !ok || s.Scalars["REMC"] != "" || s.Scalars["LACL"] != "" || s.Scalars["ESTT"] != "09SEP260945" {
			t.Fatalf("flight 1 after the refused message: %+v", fl[1])
		}
		if _, ok := fl[2]; ok {
			t.Fatal("the refused snapshot created flight 2")
		}
		t.Logf("note: %s", r.Note)
	}, `kafka: {brokers: ["127.0.0.1:9092"], maxRecordBytes: 16384, compression: zstd}`)
}
