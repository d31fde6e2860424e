// Package pumpdata is the plain data that crosses the pump's ports
// (internal/pump ports.go): the mailbox's rows (Row), what a batch reads
// and writes (PrefetchRequest, Prefetched, ProcState, PriorCopy, ReusedID,
// ArchivedRow, Result), the results waiting for the mailbox (Backfill),
// snapshots and their effect (Snapshot, SnapshotEffect, TraceEntry),
// full-day requests (Request), replays (ReplayRequest, ReplaySource), the
// lifecycle jobs' cut-offs (HistoryCutoffs), the writer's state cache
// (StateCache), the errors a port answers with (ErrFenced, ErrConflict,
// ErrNotNew) and what a database error says (Answer).
//
// The pump declares what it needs; packages store and mailbox adapt to it
// and keep these names as aliases (store.Request, mailbox.Row), so their
// other callers (the CLI, the read API, the operator) name them there as
// before. The package holds data, its
// constants and the small pure rules on them (ProcState.Same, ReplayFits,
// PayloadDigest, PlannedEffect); it does no I/O and imports no driver: both the real
// store and the in-memory one of the pump's tests (internal/pump/pumptest)
// use it.
package pumpdata
