-- A snapshot refused for SAME_FLID_ACROSS_OPERATION_DAYS (seed 000 §5.3)
-- names its offending FLIDs in free text only. The trace row now keeps them
-- structured, so `flightfeed dead` can show each FLID with its stored day and
-- the day the message gave it: a JSON array of
-- {"flid":"…","stored_day":"YYYY-MM-DD","message_day":"YYYY-MM-DD"}, NULL
-- when the attempt had no such conflict. Still never read for decisions.

-- +goose Up
ALTER TABLE schd_snap_log ADD COLUMN conflicts jsonb;

-- +goose Down
ALTER TABLE schd_snap_log DROP COLUMN conflicts;
