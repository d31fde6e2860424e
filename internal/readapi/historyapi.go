package readapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// A flight's history, message by message:
//
//	GET /api/v1/feeds/{ns}/{name}/flights/{flid}/history?day=&since=&limit=&cursor=
//
// every new state the pump gave the flight, oldest first: the message
// (id, TYPE, STYP, received time, result), when it committed, the state
// version before and after, and the fields it set, cleared or replaced
// with their old and new values. It reads what the flight route reads (a
// flight's data), so it wants the same permission and is limited alike:
// a request slot, and its page out of the lists' budget.

// HistoryPage is a page of a flight's history, oldest first.
type HistoryPage struct {
	FLID  string               `json:"flid"`
	Items []store.FlightChange `json:"items"`
	// Cursor continues the history (pass it as ?cursor=); absent on the
	// last page.
	Cursor string `json:"cursor,omitempty"`
}

func (a *ReadAPI) history(w http.ResponseWriter, r *http.Request) {
	id, err := flight.ParseFLID(r.PathValue("flid"))
	if err != nil {
		httpError(w, http.StatusBadRequest, "flid: %v", err)
		return
	}
	q := r.URL.Query()
	var f store.HistoryFilter
	var ok bool
	if f.Day, ok = queryDay(w, q, "day"); !ok {
		return
	}
	if f.Since, ok = queryTime(w, q, "since"); !ok {
		return
	}
	limit := DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			httpError(w, http.StatusBadRequest, "limit %q: must be 1 to %d", v, MaxPageSize)
			return
		}
		limit = n
	}
	if v := q.Get("cursor"); v != "" {
		after, err := decodeHistoryCursor(id, v)
		if err != nil {
			httpError(w, http.StatusBadRequest, "cursor %q: not a cursor this API returned for flight %s", v, id)
			return
		}
		f.After = after
	}
	release, ok := a.fromBudget(w, r, limit)
	if !ok {
		return
	}
	defer release()
	a.withReader(w, r, "read history of flight "+id.String(), func(ctx context.Context, fr FeedReader) (any, error) {
		// One page in SQL: the limit+1 oldest changes after the cursor,
		// the extra one only telling that another page follows.
		f.Limit = limit + 1
		changes, err := fr.FlightHistory(ctx, id, f)
		if errors.Is(err, store.ErrNoFlight) {
			return nil, notFound{fmt.Sprintf("flight %s not found", id)}
		}
		if err != nil {
			return nil, err
		}
		out := HistoryPage{FLID: id.String(), Items: changes}
		if len(changes) > limit {
			out.Items = changes[:limit]
			out.Cursor = encodeHistoryCursor(id, changes[limit-1].Version)
		}
		if out.Items == nil {
			out.Items = []store.FlightChange{}
		}
		return out, nil
	})
}

// History cursors are opaque to clients; they carry the flight, so a
// cursor of another flight is refused, and the last version listed.
const historyCursorPrefix = "hist:"

func encodeHistoryCursor(id flight.FLID, version int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(historyCursorPrefix + id.String() + ":" + strconv.FormatInt(version, 10)))
}

func decodeHistoryCursor(id flight.FLID, s string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, err
	}
	v, ok := strings.CutPrefix(string(b), historyCursorPrefix+id.String()+":")
	if !ok {
		return 0, errors.New("bad cursor")
	}
	return strconv.ParseInt(v, 10, 64)
}
