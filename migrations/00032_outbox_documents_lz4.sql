-- A flight's state document goes into the outbox with every change
-- (msg_event.state), and its history row carries what changed
-- (flight_change.changes). A fully populated flight's state is about
-- 2.6 kB, past the size where PostgreSQL compresses a value before it
-- writes the row, and its default method (pglz) cost the writing backend
-- about 20 µs of CPU a row, more than the rest of the row's insert, for
-- every live event on such a flight. lz4 compresses the same documents
-- several times faster (and reads them back faster, as the dispatcher
-- does) at a somewhat lower ratio (a 3 kB state: 880 bytes against 740).
--
-- Only the catalog changes: values already written keep their method and
-- stay readable. A server built without lz4 keeps pglz (the statement is
-- refused there, and the migration goes on without it).

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE msg_event ALTER COLUMN state SET COMPRESSION lz4, ALTER COLUMN notice SET COMPRESSION lz4;
    ALTER TABLE flight_change ALTER COLUMN changes SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this server has no lz4: outbox documents stay compressed with pglz';
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE msg_event ALTER COLUMN state SET COMPRESSION default, ALTER COLUMN notice SET COMPRESSION default;
ALTER TABLE flight_change ALTER COLUMN changes SET COMPRESSION default;
