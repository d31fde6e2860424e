-- A live event (FLOP) rewrites its flight's main row: that should be one
-- heap-only (HOT) update record and nothing else. Two things added to it:
--
-- The guard flight_schd_guard was a BEFORE UPDATE row trigger. For such a
-- trigger PostgreSQL fetches and locks the old row before it updates it,
-- whether or not the WHEN clause then calls the function: one more WAL
-- record (LOCK) and page change per updated row. The guard only raises, it
-- never changes the new row, so it runs as an AFTER UPDATE row trigger with
-- the same WHEN clause, the same function and the same errors (FF001 with
-- hint SAME_FLID_ACROSS_OPERATION_DAYS, FF002, FF003): the failing
-- statement is refused as before, at its end instead of at the row. An
-- AFTER row trigger reads the old row without locking it.
--
-- The indexes on the typed SIS times (sodt_utc, cncl_utc, naat_utc,
-- neat_utc) were meant for the history sweep, which cannot use them: it
-- compares each time with the end of the flight's operation day computed
-- per row (greatest(day_end, naat_utc) < cutoff) and reads the whole table.
-- No other read filters on them. A FLOP that moves NEAT or NAAT (most
-- arrivals) changed an indexed column, so its update was not HOT and added
-- an entry to every index of flight_schd.

-- +goose Up
DROP TRIGGER flight_schd_guard ON flight_schd;
CREATE TRIGGER flight_schd_guard AFTER UPDATE ON flight_schd
    FOR EACH ROW
    WHEN ((OLD.operation_day IS NOT NULL AND NEW.operation_day IS DISTINCT FROM OLD.operation_day)
          OR NEW.flid <> OLD.flid
          OR NEW.state_version <= OLD.state_version)
    EXECUTE FUNCTION flight_schd_guard();
DROP INDEX flight_schd_sodt;
DROP INDEX flight_schd_cncl;
DROP INDEX flight_schd_naat;
DROP INDEX flight_schd_neat;

-- +goose Down
CREATE INDEX flight_schd_sodt ON flight_schd (sodt_utc);
CREATE INDEX flight_schd_cncl ON flight_schd (cncl_utc) WHERE cncl_utc IS NOT NULL;
CREATE INDEX flight_schd_naat ON flight_schd (naat_utc) WHERE naat_utc IS NOT NULL;
CREATE INDEX flight_schd_neat ON flight_schd (neat_utc) WHERE neat_utc IS NOT NULL;
DROP TRIGGER flight_schd_guard ON flight_schd;
CREATE TRIGGER flight_schd_guard BEFORE UPDATE ON flight_schd
    FOR EACH ROW
    WHEN ((OLD.operation_day IS NOT NULL AND NEW.operation_day IS DISTINCT FROM OLD.operation_day)
          OR NEW.flid <> OLD.flid
          OR NEW.state_version <= OLD.state_version)
    EXECUTE FUNCTION flight_schd_guard();
