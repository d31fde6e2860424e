-- Trace log, raw archive and flight history: the layers beside the decision
-- tables (seed 000 §3.2, §5.6, §8; SPEC §2.7, §2.8).

-- +goose Up
-- Append-only trace of every snapshot attempt, written outside the main
-- transaction and never read for decisions. No unique key: one row per try.
CREATE TABLE schd_snap_log (
    id               bigserial   PRIMARY KEY,
    operation_day    date,
    msg_id           bigint      NOT NULL,
    recv_at          timestamptz NOT NULL,
    recs             integer,
    old_version      bigint,
    new_version      bigint,
    deleted_count    integer,
    result           text        NOT NULL CHECK (result IN ('COMMITTED', 'REPLAY_SKIPPED', 'ROLLED_BACK')),
    flags            text[]      NOT NULL DEFAULT '{}',
    old_flid_digest  text,
    new_flid_digest  text,
    archive_key      bigint,
    duration_ms      integer,
    detail           text,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schd_snap_log_day ON schd_snap_log (operation_day, recv_at);
CREATE INDEX schd_snap_log_msg ON schd_snap_log (msg_id);

-- Evidence layer: the raw text of every mailbox row, keyed by its id,
-- archived before decoding so a rejected message can be audited or replayed.
CREATE TABLE msg_archive (
    message_id       bigint      PRIMARY KEY,
    received_at      timestamptz NOT NULL,
    archived_at      timestamptz NOT NULL DEFAULT now(),
    byte_size        bigint      NOT NULL CHECK (byte_size >= 0),
    -- Set when the message was larger than the configured limit: body then
    -- holds its first limit bytes, byte_size the real size.
    truncated        boolean     NOT NULL DEFAULT false,
    digest           bytea       NOT NULL,
    -- Bytes, not text: a message that is not valid UTF-8 (or holds NUL) is
    -- still archived exactly as it arrived.
    body             bytea       NOT NULL
);
CREATE INDEX msg_archive_archived ON msg_archive (archived_at);

-- History store: full state of flights that left current state through the
-- lifecycle sweep, archived in the same transaction that deletes them.
CREATE TABLE flight_history (
    id               bigserial   PRIMARY KEY,
    flid             bigint      NOT NULL CHECK (flid BETWEEN 0 AND 999999999999),
    operation_day    date,
    state_version    bigint      NOT NULL,
    state            jsonb       NOT NULL,
    reason           text        NOT NULL,
    archived_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX flight_history_flid ON flight_history (flid, archived_at);
CREATE INDEX flight_history_archived ON flight_history (archived_at);

-- +goose Down
DROP TABLE flight_history;
DROP TABLE msg_archive;
DROP TABLE schd_snap_log;
