-- Live events (FLOP) rewrite a flight's main row many times a day, and every
-- write changes updated_at. While an index covered updated_at, each of those
-- writes added an entry to every index of flight_schd. Without one, and
-- with room left on each page, PostgreSQL updates the row on its page and
-- leaves the indexes alone (a HOT update) unless an indexed time changes.

-- +goose Up
-- Unused: reads filter updatedSince within a day or a FLID range.
DROP INDEX flight_schd_updated;
-- NULL-day retention walks the few flights without a day by FLID and
-- checks updated_at on the row.
DROP INDEX flight_schd_null_day;
CREATE INDEX flight_schd_null_day ON flight_schd (flid) WHERE operation_day IS NULL;
ALTER TABLE flight_schd SET (fillfactor = 80);

-- +goose Down
ALTER TABLE flight_schd RESET (fillfactor);
DROP INDEX flight_schd_null_day;
CREATE INDEX flight_schd_null_day ON flight_schd (updated_at) WHERE operation_day IS NULL;
CREATE INDEX flight_schd_updated ON flight_schd (updated_at, flid);
