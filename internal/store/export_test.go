package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SetSnapshotChunk makes ApplySnapshot merge and write n records at a time
// until restore is called. Only for tests that do not run in parallel.
func SetSnapshotChunk(n int) (restore func()) {
	old := snapshotChunk
	snapshotChunk = n
	return func() { snapshotChunk = old }
}

// StreamArchiveMin is the body size from which FinishBatch archives a new
// row by a streamed COPY.
var StreamArchiveMin = streamArchiveMin

// Setting is a run-time parameter of one of the store's sessions (SHOW).
func (s *Store) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

// SetCopyRowsMin makes FinishBatch send a batch's new rows of one kind by
// COPY from n of them until restore is called. Only for tests that do not
// run in parallel.
func SetCopyRowsMin(n int) (restore func()) {
	old := copyRowsMin
	copyRowsMin = n
	return func() { copyRowsMin = old }
}

// SetSnapshotCopyMin makes a snapshot's chunks send their new main rows,
// child rows and events by COPY from n rows of a kind until restore is
// called. Only for tests that do not run in parallel.
func SetSnapshotCopyMin(n int) (restore func()) {
	old := snapshotCopyMin
	snapshotCopyMin = n
	return func() { snapshotCopyMin = old }
}

// ChildReplaceSQL is the update in place of a child table's rows and the
// delete of its surplus rows, as the store sends them for a replaced
// collection.
func ChildReplaceSQL(table string) (upsert, surplus string) {
	for _, c := range childTables {
		if c.name == table {
			return childUpsert(c), childSurplusDelete(c)
		}
	}
	return "", ""
}

// PreparedPlan is one prepared statement of a session with the number of
// times it ran on a generic plan and on a custom one (pg_prepared_statements).
type PreparedPlan struct {
	SQL             string
	Generic, Custom int64
}

// PreparedPlans lists the prepared statements of the session the pool
// hands out next: with MaxConns 1, the store's only one.
func (s *Store) PreparedPlans(ctx context.Context) ([]PreparedPlan, error) {
	rows, err := s.pool.Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (PreparedPlan, error) {
		var p PreparedPlan
		err := row.Scan(&p.SQL, &p.Generic, &p.Custom)
		return p, err
	})
}

// ReadWindowFull is ReadWindow by the full statement, whatever the window.
func (s *Store) ReadWindowFull(ctx context.Context, limit int, done []int64) (Window, error) {
	w, _, err := s.readWindowFull(ctx, limit, done)
	return w, err
}

// ReadWholeWindow is ReadWindow's short statement: whole is false when the
// window was full (limit rows) and was left to the full statement.
func (s *Store) ReadWholeWindow(ctx context.Context, limit int) (w Window, whole bool, err error) {
	return s.readWholeWindow(ctx, limit)
}
