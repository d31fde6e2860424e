-- A flight's history, message by message: one row per new state of a
-- flight (its state_version), written in the transaction that makes the
-- state, with what the message changed (field, Set/Clear/Replace, old and
-- new values as the canonical document shows them) or how the flight went
-- (DELETE by an FDEL, VICTIM of a full-day snapshot's diff-delete, HISTORY
-- by the lifecycle job). It answers "which message set gate B7, when, and
-- what was there before" after the outbox rows are long gone. Rows go with
-- the raw messages' retention (retention.archiveDays), by committed_at.

-- +goose Up
CREATE TABLE flight_change (
    flid          bigint      NOT NULL,
    state_version bigint      NOT NULL,
    message_id    bigint      NOT NULL,
    -- The message's received time: with message_id its identity, as mailbox
    -- ids can be reused (NULL for a lifecycle job's change).
    received_at   timestamptz,
    operation_day date,
    kind          text        NOT NULL CHECK (kind IN ('UPSERT', 'DELETE', 'VICTIM', 'HISTORY')),
    -- json, not jsonb: the values keep the canonical document's bytes and
    -- key order, as the read API and the CLI show them.
    changes       json        NOT NULL,
    -- The writing transaction's time.
    committed_at  timestamptz NOT NULL DEFAULT now(),
    -- Paging one flight's history oldest first reads this key's range.
    PRIMARY KEY (flid, state_version)
);
-- Retention deletes by age. Rows arrive in committed_at order, so a BRIN
-- index finds the old ones at almost no cost to each insert (a B-tree
-- would add an index entry, and its WAL, to every change).
CREATE INDEX flight_change_committed ON flight_change USING brin (committed_at);

-- +goose Down
DROP TABLE flight_change;
