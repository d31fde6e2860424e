package readapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/store"
)

// The reference-data routes: the lists the AODB keeps of
// airlines, airports, gates, … (docs/processing-rules.md, "Reference
// data"), as the pump stored them.
//
//	GET /api/v1/feeds/{ns}/{name}/ref                                 every list (get flightfeeds/flights)
//	GET /api/v1/feeds/{ns}/{name}/ref/{kind}?limit=N&cursor=C|after=KEY one list's records by key (get flightfeeds/flights)
//	GET /api/v1/feeds/{ns}/{name}/ref/{kind}/{key}                    one record, the key the rest of the path (get flightfeeds/flights)
//
// {kind} is a list's name (airlines) or its SIS TYPE (AIRL). Reference
// data is what a consumer of the flights reads beside them (the codes a
// flight carries name its airline, gate, stand), so the routes want the
// flights' permission and are limited like the flights: a request slot
// each, and a list's page out of the same budget as a page of flights.

// RefList is one reference-data list of the catalogue and what is stored
// of it: how many records, the message that last changed it and when, and
// the last whole list (DNLD, RESP) received. A list the AODB never sent
// has no records and no message.
type RefList struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Title string `json:"title"`
	// Key are the elements a record is keyed by, by preference.
	Key           []string  `json:"key"`
	Records       int64     `json:"records"`
	LastMessageID int64     `json:"last_message_id,omitempty"`
	UpdatedAt     time.Time `json:"updated_at,omitzero"`
	ReplacedBy    int64     `json:"replaced_by,omitempty"`
	ReplacedAt    time.Time `json:"replaced_at,omitzero"`
}

// RefRecord is one stored reference-data record: its list, its key, the
// message that last changed it and when, and the record as the AODB sent
// it (a JSON object, docs/processing-rules.md).
type RefRecord struct {
	Type      string          `json:"type"`
	Name      string          `json:"name"`
	Key       string          `json:"key"`
	MessageID int64           `json:"message_id"`
	UpdatedAt time.Time       `json:"updated_at"`
	Record    json.RawMessage `json:"record"`
}

// RefPage is a page of one list's records, keys ascending.
type RefPage struct {
	Items []RefRecord `json:"items"`
	// Cursor continues the list (pass it as ?cursor=); absent on the last
	// page.
	Cursor string `json:"cursor,omitempty"`
}

// RefLists is every list of the catalogue, by name, with what stored says
// of it (store.ReferenceLists): a list never received is there with no
// records, so a reader sees what the AODB could send and did not. A stored
// type the catalogue does not know (none today) is left out: the read API
// could not serve its records either.
func RefLists(stored []store.ReferenceList) []RefList {
	byType := make(map[string]store.ReferenceList, len(stored))
	for _, l := range stored {
		byType[l.Type] = l
	}
	kinds := sis.ReferenceKinds()
	out := make([]RefList, 0, len(kinds))
	for _, k := range kinds {
		l := byType[k.Type]
		out = append(out, RefList{Type: k.Type, Name: k.Name, Title: k.Title, Key: k.Key, Records: l.Records,
			LastMessageID: l.LastMessageID, UpdatedAt: l.UpdatedAt, ReplacedBy: l.ReplacedBy, ReplacedAt: l.ReplacedAt})
	}
	return out
}

// RefRecordOf is a stored record of kind as the read API serves it.
func RefRecordOf(kind sis.ReferenceKind, r store.ReferenceRecord) RefRecord {
	return RefRecord{Type: kind.Type, Name: kind.Name, Key: r.Key, MessageID: r.MessageID, UpdatedAt: r.UpdatedAt, Record: json.RawMessage(r.Doc)}
}

// ErrUnknownRefKind says a name is neither a reference list's name nor its
// SIS TYPE; its text names the valid ones.
var ErrUnknownRefKind = errors.New("unknown reference list")

// LookupRefKind finds the reference list name names (airlines or AIRL),
// or says which ones there are.
func LookupRefKind(name string) (sis.ReferenceKind, error) {
	if k, ok := sis.LookupReferenceKind(name); ok {
		return k, nil
	}
	kinds := sis.ReferenceKinds()
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		names = append(names, k.Name+" ("+k.Type+")")
	}
	return sis.ReferenceKind{}, fmt.Errorf("%w %q: one of %s", ErrUnknownRefKind, name, strings.Join(names, ", "))
}

func (a *ReadAPI) refLists(w http.ResponseWriter, r *http.Request) {
	a.withReader(w, r, "list reference data", func(ctx context.Context, fr FeedReader) (any, error) {
		stored, err := fr.ReferenceLists(ctx)
		return items[RefList]{Items: RefLists(stored)}, err
	})
}

func (a *ReadAPI) refRecords(w http.ResponseWriter, r *http.Request) {
	kind, err := LookupRefKind(r.PathValue("kind"))
	if err != nil {
		httpError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	q := r.URL.Query()
	limit := DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			httpError(w, http.StatusBadRequest, "limit %q: must be 1 to %d", v, MaxPageSize)
			return
		}
		limit = n
	}
	after := q.Get("after")
	if v := q.Get("cursor"); v != "" {
		if after != "" {
			httpError(w, http.StatusBadRequest, "give either cursor (a page's) or after (a key), not both")
			return
		}
		key, err := decodeRefCursor(kind.Type, v)
		if err != nil {
			httpError(w, http.StatusBadRequest, "cursor %q: not a cursor this API returned for %s", v, kind.Name)
			return
		}
		after = key
	}
	release, ok := a.fromBudget(w, r, limit)
	if !ok {
		return
	}
	defer release()
	a.withReader(w, r, "list "+kind.Name, func(ctx context.Context, fr FeedReader) (any, error) {
		// One page in SQL: the limit+1 lowest keys after the cursor, the
		// extra one only telling that another page follows.
		recs, err := fr.ReferenceRecords(ctx, kind.Type, after, limit+1)
		if err != nil {
			return nil, err
		}
		out := RefPage{Items: make([]RefRecord, 0, min(len(recs), limit))}
		if len(recs) > limit {
			recs = recs[:limit]
			out.Cursor = encodeRefCursor(kind.Type, recs[limit-1].Key)
		}
		for _, rec := range recs {
			out.Items = append(out.Items, RefRecordOf(kind, rec))
		}
		return out, nil
	})
}

func (a *ReadAPI) refRecord(w http.ResponseWriter, r *http.Request) {
	kind, err := LookupRefKind(r.PathValue("kind"))
	if err != nil {
		httpError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	key := r.PathValue("key")
	if key == "" {
		httpError(w, http.StatusBadRequest, "a %s key is required after %s/", kind.Name, r.PathValue("kind"))
		return
	}
	a.withReader(w, r, "read "+kind.Name, func(ctx context.Context, fr FeedReader) (any, error) {
		rec, err := fr.ReferenceRecordByKey(ctx, kind.Type, key)
		if errors.Is(err, store.ErrNoReferenceRecord) {
			return nil, notFound{fmt.Sprintf("%s (%s) record %q not found", kind.Name, kind.Type, key)}
		}
		if err != nil {
			return nil, err
		}
		return RefRecordOf(kind, rec), nil
	})
}

// Reference cursors are opaque to clients; they carry the list's TYPE, so
// a cursor of another list is refused, and the last key listed.
const refCursorPrefix = "ref:"

func encodeRefCursor(typ, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(refCursorPrefix + typ + ":" + key))
}

func decodeRefCursor(typ, s string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", err
	}
	key, ok := strings.CutPrefix(string(b), refCursorPrefix+typ+":")
	if !ok || key == "" {
		return "", errors.New("bad cursor")
	}
	return key, nil
}
