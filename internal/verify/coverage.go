package verify

import (
	"fmt"
	"slices"
	"time"
)

// Archived is one msg_archive row (without its body).
type Archived struct {
	ID        int64
	Received  time.Time
	Truncated bool
}

// Processed is one message's live processing state (proc_state).
type Processed struct {
	ID       int64
	Received time.Time
	// Status is SUCCEEDED, SKIPPED, DEAD (finished), PENDING or FAILED.
	Status, Reason string
	// Finished is when the live pump committed the result.
	Finished time.Time
}

func finished(status string) bool {
	return status == "SUCCEEDED" || status == "SKIPPED" || status == "DEAD"
}

// Touch is a message the served day names: a snapshot of the day
// (schd_snap_log), the ledger's last snapshot, a flight's last message.
type Touch struct {
	ID   int64
	What string
}

// NotVerifiable says why the archive cannot rebuild a day.
type NotVerifiable struct {
	Day    string
	Reason string
}

func (e *NotVerifiable) Error() string {
	return fmt.Sprintf("%s NOT VERIFIABLE: %s", e.Day, e.Reason)
}

// Coverage returns the messages a rebuild of day replays, in mailbox order
// (received time, then id): every finished message, each archived. It
// returns a *NotVerifiable when the archive cannot rebuild the day: a
// message the day names is not archived; a finished message is not
// archived (it may have touched the day); or an archived body was cut at
// the size limit while the live pump applied the message (a DEAD message
// cut for its size is replayed as it was: cut, and refused again).
func Coverage(day string, archive []Archived, processed []Processed, touches []Touch) ([]Archived, error) {
	byID := make(map[int64]Archived, len(archive))
	var oldest *Archived
	for i, a := range archive {
		byID[a.ID] = a
		if oldest == nil || before(a.Received, a.ID, oldest.Received, oldest.ID) {
			oldest = &archive[i]
		}
	}
	for _, t := range touches {
		if _, ok := byID[t.ID]; !ok {
			return nil, &NotVerifiable{Day: day, Reason: fmt.Sprintf("message %d (%s) is not in the archive%s",
				t.ID, t.What, archiveStart(oldest))}
		}
	}
	var out []Archived
	for _, p := range processed {
		if !finished(p.Status) {
			continue
		}
		a, ok := byID[p.ID]
		if !ok {
			return nil, &NotVerifiable{Day: day, Reason: fmt.Sprintf(
				"message %d (received %s, %s) was processed but is not in the archive: pruned by archive retention or processed before the archive existed%s",
				p.ID, p.Received.UTC().Format(time.RFC3339), p.Status, archiveStart(oldest))}
		}
		if a.Truncated && p.Status != "DEAD" {
			return nil, &NotVerifiable{Day: day, Reason: fmt.Sprintf(
				"message %d's archived body is truncated (larger than mailbox.maxMessageBytes when archived) but it was applied (%s)", p.ID, p.Status)}
		}
		out = append(out, a)
	}
	sortArchived(out)
	return out, nil
}

func archiveStart(oldest *Archived) string {
	if oldest == nil {
		return "; the archive is empty"
	}
	return fmt.Sprintf("; the archive starts at message %d (received %s)", oldest.ID, oldest.Received.UTC().Format(time.RFC3339))
}

func sortArchived(a []Archived) {
	slices.SortFunc(a, func(x, y Archived) int {
		switch {
		case before(x.Received, x.ID, y.Received, y.ID):
			return -1
		case before(y.Received, y.ID, x.Received, x.ID):
			return 1
		}
		return 0
	})
}

func before(ra time.Time, ia int64, rb time.Time, ib int64) bool {
	if !ra.Equal(rb) {
		return ra.Before(rb)
	}
	return ia < ib
}
