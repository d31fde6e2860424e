package readapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// historyDB is a database where flight 1 was written by five snapshots
// of its day (FLNO CA1-1 … CA1-5) and flight 2 by the first (the others
// leave it unchanged).
func historyDB(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	db := storetest.New(t, store.Options{Location: time.UTC})
	for i := 1; i <= 5; i++ {
		records := []store.SnapshotRecord{storetest.Record(1, fmt.Sprintf("CA1-%d", i), "2026-01-01"), storetest.Record(2, "CA2", "2026-01-01")}
		tx, err := db.Store.Begin(ctx, db.Epoch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ApplySnapshot(ctx, store.Meta{MessageID: int64(100 + i), ReceivedAt: time.Now(), Type: "SCHD", Styp: "DNLD"},
			store.Snapshot{FullDay: true, Day: "2026-01-01", Records: records}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return db.DSN
}

func historyPage(t *testing.T, rec *httptest.ResponseRecorder) HistoryPage {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var p HistoryPage
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// A flight's history pages oldest first with a cursor, each change with
// its message, versions before and after and the fields changed; an
// unknown flight is 404, another flight's cursor 400.
func TestReadAPIFlightHistory(t *testing.T) {
	h := testAPI(t, historyDB(t), 0, nil, nil).Handler()
	get := func(token, query string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, request(t, token, query))
		return rec
	}
	var all []store.FlightChange
	cursor := ""
	for page := 0; ; page++ {
		q := "/1/history?limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		p := historyPage(t, get(readerToken, q))
		if p.FLID != "1" || len(p.Items) == 0 || len(p.Items) > 2 {
			t.Fatalf("page %d: %+v", page, p)
		}
		all = append(all, p.Items...)
		if cursor = p.Cursor; cursor == "" {
			break
		}
	}
	if len(all) != 5 {
		t.Fatalf("%d changes over the pages, want 5: %+v", len(all), all)
	}
	for i, c := range all {
		wantOld := fmt.Sprintf(`"CA1-%d"`, i)
		if i == 0 {
			wantOld = ""
		}
		if c.MessageID != int64(101+i) || c.Kind != "UPSERT" || c.Day != "2026-01-01" || c.CommittedAt.IsZero() {
			t.Fatalf("change %d: %+v", i, c)
		}
		if i > 0 && (c.FromVersion != all[i-1].Version || c.Version <= c.FromVersion) {
			t.Fatalf("change %d: versions %d → %d after %d", i, c.FromVersion, c.Version, all[i-1].Version)
		}
		flno := c.Changes[0]
		if flno.Tag != "FLNO" || string(flno.Old) != wantOld || string(flno.New) != fmt.Sprintf(`"CA1-%d"`, i+1) {
			t.Fatalf("change %d: %+v", i, c.Changes)
		}
	}
	if p := historyPage(t, get(readerToken, "/2/history")); len(p.Items) != 1 || p.Cursor != "" {
		t.Fatalf("flight 2: %+v", p)
	}
	if p := historyPage(t, get(readerToken, "/2/history?day=2026-01-02")); len(p.Items) != 0 {
		t.Fatalf("flight 2 on another day: %+v", p)
	}
	since := all[4].CommittedAt.Format(time.RFC3339Nano)
	if p := historyPage(t, get(readerToken, "/1/history?since="+since)); len(p.Items) != 1 || p.Items[0].Version != all[4].Version {
		t.Fatalf("since the last change: %+v", p)
	}
	for _, tc := range []struct {
		name, token, query string
		code               int
	}{
		{"an unknown flight", readerToken, "/999/history", http.StatusNotFound},
		{"another flight's cursor", readerToken, "/2/history?cursor=" + encodeHistoryCursor(1, all[1].Version), http.StatusBadRequest},
		{"a bad day", readerToken, "/1/history?day=9/9", http.StatusBadRequest},
		{"a bad since", readerToken, "/1/history?since=yesterday", http.StatusBadRequest},
		{"no token", "", "/1/history", http.StatusUnauthorized},
		{"a user without the flights' right", operatorToken, "/1/history", http.StatusForbidden},
		{"a stranger", strangerToken, "/1/history", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if rec := get(tc.token, tc.query); rec.Code != tc.code {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tc.code)
			}
		})
	}
}

// The history takes a request slot like the flight: with the slots taken,
// it is refused at once with 429 and Retry-After, without reaching the
// database.
func TestReadAPIFlightHistoryBeyondTheCap(t *testing.T) {
	reader := &blockingReader{entered: make(chan struct{}, 10), release: make(chan struct{})}
	h := testAPI(t, "postgres://unused", 1, nil, reader).Handler()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), request(t, readerToken, "/7"))
	}()
	<-reader.entered
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, request(t, readerToken, "/7/history"))
	close(reader.release)
	<-done
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("%d %s (Retry-After %q), want 429", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
}
