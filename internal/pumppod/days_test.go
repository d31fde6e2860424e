package pumppod

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/verify"
)

// A day's FlightFeedDay mirrors its ledger row and its last verification:
// every field of the record, times to the second the API keeps, long
// texts cut to the schema's bounds; no verification, none shown.
func TestDayStatusShowsTheLastVerification(t *testing.T) {
	commit := time.Date(2026, 9, 9, 10, 0, 0, 700, time.UTC)
	finished := time.Date(2026, 9, 10, 8, 30, 5, 900, time.UTC)
	d := store.LedgerDay{Day: "2026-09-09", Version: 3, LastMessageID: 42, Flights: 7, LastCommitAt: commit}
	if got := dayStatus(d); got.Verification != nil || got.Version != 3 || got.Flights != 7 || got.LastMessageID != 42 || !got.LastCommitAt.Time.Equal(commit.Truncate(time.Second)) {
		t.Fatalf("no verification: %+v", got)
	}
	d.Verification = &verify.Record{Day: "2026-09-09", Outcome: verify.OutcomeDiffers, Flights: 7, Differing: 2, Messages: 31,
		Reason: "ledger: roster; " + strings.Repeat("é", 600), StartedAt: finished.Add(-time.Minute), FinishedAt: finished, RanBy: "api system:serviceaccount:ops:ops"}
	got := dayStatus(d).Verification
	want := &v1alpha1.DayVerification{Outcome: "DIFFERS", Flights: 7, Differing: 2, Messages: 31, FinishedAt: metav1.NewTime(finished.Truncate(time.Second)),
		RanBy: "api system:serviceaccount:ops:ops"}
	if got == nil || got.Outcome != want.Outcome || got.Flights != want.Flights || got.Differing != want.Differing || got.Messages != want.Messages ||
		!got.FinishedAt.Equal(&want.FinishedAt) || got.RanBy != want.RanBy {
		t.Fatalf("verification %+v, want %+v", got, want)
	}
	if len(got.Reason) > 1024 || !strings.HasPrefix(got.Reason, "ledger: roster; é") || !strings.HasSuffix(got.Reason, "é") {
		t.Fatalf("reason of %d bytes not cut to 1024 on a rune: %q…", len(got.Reason), got.Reason[:40])
	}
}
