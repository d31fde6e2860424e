package store

import (
	"context"
	"fmt"
)

// An operator's re-request of a held day (the ops API, `flightfeed
// rerequest`); the pump's own requests are in pump_requests.go.

// ReleaseFailedRequests is an operator's re-request of day (YYYY-MM-DD):
// the FAILED requests of kind for it are released, so the pump asks for
// the day again at its next round, counting refusals from zero. It returns
// how many it released (0: the day was not held).
func (s *Store) ReleaseFailedRequests(ctx context.Context, kind, day string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE req_track SET released_at = now(), updated_at = now()
		WHERE kind = $1 AND operation_day = $2::date AND status = 'FAILED' AND released_at IS NULL`, kind, day)
	if err != nil {
		return 0, fmt.Errorf("re-request %s for %s: %w", kind, day, err)
	}
	return tag.RowsAffected(), nil
}
