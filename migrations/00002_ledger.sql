-- Snapshot ledger (seed 000 §4) and the single-writer lock.

-- +goose Up
-- One row per operation day: the version of its latest committed full-day
-- snapshot, that snapshot's mailbox id (replay short-circuit) and commit time.
CREATE TABLE schd_gen (
    operation_day    date        PRIMARY KEY,
    version          bigint      NOT NULL CHECK (version >= 0),
    last_message_id  bigint      NOT NULL,
    last_recv_at     timestamptz NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- The complete FLID roster of each day's latest snapshot: the basis of the
-- next diff-delete. A FLID belongs to at most one day's roster, since a
-- flight's day is set once and every roster member carries its day.
CREATE TABLE schd_gen_flid (
    operation_day    date        NOT NULL REFERENCES schd_gen (operation_day) ON DELETE CASCADE,
    flid             bigint      NOT NULL CHECK (flid BETWEEN 0 AND 999999999999),
    PRIMARY KEY (operation_day, flid),
    CONSTRAINT schd_gen_flid_one_day UNIQUE (flid)
);

-- Every write transaction locks this row first (seed 000 §5.1 step 1) and
-- checks that its caller still holds the current fencing epoch (SPEC §4):
-- a pump that lost its lease cannot commit.
CREATE TABLE pipeline_lock (
    name             text        PRIMARY KEY,
    epoch            bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    holder           text,
    acquired_at      timestamptz
);
INSERT INTO pipeline_lock (name) VALUES ('FLIGHT_SCHD_WRITER');

-- +goose Down
DROP TABLE pipeline_lock;
DROP TABLE schd_gen_flid;
DROP TABLE schd_gen;
