-- A re-sent copy is recognised by its identity SNDR|TYPE|STYP|SEQN and its
-- content digest: the digest of the message without what a re-send may
-- change (the META send time, DDTM/DTTM; see sis.ResendFields), so a copy
-- the AODB re-stamped is SKIPPED(DUPLICATE). payload_digest stays the
-- digest of the raw text: it identifies the mailbox row (mailbox id reuse),
-- and a re-stamped copy is another row. NULL for rows written before this
-- migration and for messages that did not decode.

--
-- A RESP completes the newest PENDING request of its operation day, sender
-- and request type (seed 000 §7.1): req_track keeps whom a request asked
-- (its META/RCVR). NULL for requests recorded before this migration, which
-- any sender may answer.

-- +goose Up
ALTER TABLE proc_state ADD COLUMN content_digest bytea;
ALTER TABLE req_track ADD COLUMN receiver text;

-- +goose Down
ALTER TABLE req_track DROP COLUMN receiver;
ALTER TABLE proc_state DROP COLUMN content_digest;
