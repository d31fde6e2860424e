-- A mailbox row is the message processed before only when its identity
-- matches: row id, received time and payload digest. The mailbox's ids can
-- restart (TRUNCATE, a restore, a reset AUTO_INCREMENT, another mailbox);
-- a row with a known id but another received time or payload is a new
-- message. Its predecessor's processing record and raw text move here, so
-- nothing of it is lost, and the new message is processed as new.

-- +goose Up
CREATE TABLE msg_id_reuse (
    id                 bigserial   PRIMARY KEY,
    message_id         bigint      NOT NULL,
    detected_at        timestamptz NOT NULL DEFAULT now(),
    -- The new row that reused the id.
    new_received_at    timestamptz NOT NULL,
    new_payload_digest bytea       NOT NULL,
    -- The predecessor: its proc_state row …
    old_received_at    timestamptz NOT NULL,
    old_payload_digest bytea,
    old_identity_key   text,
    old_msg_type       text,
    old_msg_styp       text,
    old_status         text        NOT NULL,
    old_reason         text,
    old_note           text,
    old_flags          text[]      NOT NULL DEFAULT '{}',
    old_finished_at    timestamptz,
    -- … and its archived raw text (NULL when retention had removed it).
    old_byte_size      bigint,
    old_truncated      boolean,
    old_body           bytea
);
CREATE INDEX msg_id_reuse_message ON msg_id_reuse (message_id);

-- The replay short-circuit of a full-day snapshot (seed 000 §5.1) compares
-- the day's last message by id and received time, so a reused id is never
-- taken for a replay. NULL for rows written before this migration.
ALTER TABLE schd_gen ADD COLUMN last_msg_received_at timestamptz;

-- +goose Down
ALTER TABLE schd_gen DROP COLUMN last_msg_received_at;
DROP TABLE msg_id_reuse;
