-- One trace row per processing attempt (seed 000 §5.6), also for an attempt
-- whose COMMIT failed without the server's answer (the connection broke, the
-- pump was stopped while it waited): the server may have committed it or not.
-- Such a row says COMMIT_UNKNOWN, and result_if_committed keeps the result
-- the attempt has if its commit went through (COMMITTED or REPLAY_SKIPPED).
-- The next start of a pump (store.Store.ResolveCommitUnknown) looks at what
-- committed and sets result to that result or to ROLLED_BACK, clearing
-- result_if_committed: the one change ever made to a trace row, and still
-- never read for a decision. The partial index keeps that look cheap on a
-- trace log of 90 days.
--
-- Down turns an unresolved COMMIT_UNKNOWN into ROLLED_BACK, what the
-- releases before this one wrote for such an attempt.

-- +goose Up
ALTER TABLE schd_snap_log DROP CONSTRAINT schd_snap_log_result_check,
    ADD CONSTRAINT schd_snap_log_result_check
        CHECK (result IN ('COMMITTED', 'REPLAY_SKIPPED', 'ROLLED_BACK', 'COMMIT_UNKNOWN')),
    ADD COLUMN result_if_committed text
        CONSTRAINT schd_snap_log_result_if_committed_check CHECK (result_if_committed IN ('COMMITTED', 'REPLAY_SKIPPED')),
    ADD CONSTRAINT schd_snap_log_unknown_check CHECK ((result = 'COMMIT_UNKNOWN') = (result_if_committed IS NOT NULL));
CREATE INDEX schd_snap_log_commit_unknown ON schd_snap_log (id) WHERE result = 'COMMIT_UNKNOWN';

-- +goose Down
DROP INDEX schd_snap_log_commit_unknown;
UPDATE schd_snap_log SET result = 'ROLLED_BACK', result_if_committed = NULL WHERE result = 'COMMIT_UNKNOWN';
ALTER TABLE schd_snap_log DROP CONSTRAINT schd_snap_log_unknown_check,
    DROP COLUMN result_if_committed,
    DROP CONSTRAINT schd_snap_log_result_check,
    ADD CONSTRAINT schd_snap_log_result_check CHECK (result IN ('COMMITTED', 'REPLAY_SKIPPED', 'ROLLED_BACK'));
