-- A roster row still needs its day's ledger row, and deleting a day's
-- ledger row still removes its roster, but the check runs once per
-- statement over the days it wrote instead of once per row. A full-day
-- snapshot of a new day inserts its whole roster (10,000 rows for the
-- largest day): the foreign key looked its one ledger row up 10,000 times,
-- most of the time that insert took.
--
-- The checks keep the foreign key's error code (23503), and the cascade
-- its effect. A foreign key also locks the ledger row against a concurrent
-- delete; these checks do not need to, because every write transaction
-- locks pipeline_lock first (store Begin), so two writers never overlap.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION schd_gen_flid_has_day() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing date;
BEGIN
    SELECT d.day INTO missing FROM (SELECT DISTINCT operation_day AS day FROM written) d
    WHERE NOT EXISTS (SELECT 1 FROM schd_gen g WHERE g.operation_day = d.day)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'schd_gen_flid: day % has no row in schd_gen', missing
            USING ERRCODE = 'foreign_key_violation', TABLE = 'schd_gen_flid';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION schd_gen_removes_roster() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM schd_gen_flid f WHERE f.operation_day IN (SELECT operation_day FROM removed);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION schd_gen_keeps_rostered_days() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    left_behind date;
BEGIN
    SELECT d.day INTO left_behind FROM (SELECT DISTINCT operation_day AS day FROM removed) d
    WHERE NOT EXISTS (SELECT 1 FROM schd_gen g WHERE g.operation_day = d.day)
      AND EXISTS (SELECT 1 FROM schd_gen_flid f WHERE f.operation_day = d.day)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'schd_gen: day % still has a roster in schd_gen_flid', left_behind
            USING ERRCODE = 'foreign_key_violation', TABLE = 'schd_gen_flid';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION schd_gen_truncate_alone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM schd_gen_flid) THEN
        RAISE EXCEPTION 'schd_gen: truncate schd_gen_flid first'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'schd_gen_flid';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

ALTER TABLE schd_gen_flid DROP CONSTRAINT schd_gen_flid_operation_day_fkey;
CREATE TRIGGER schd_gen_flid_day_ins AFTER INSERT ON schd_gen_flid REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION schd_gen_flid_has_day();
CREATE TRIGGER schd_gen_flid_day_upd AFTER UPDATE ON schd_gen_flid REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION schd_gen_flid_has_day();
CREATE TRIGGER schd_gen_roster_cascade AFTER DELETE ON schd_gen REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION schd_gen_removes_roster();
CREATE TRIGGER schd_gen_roster_day_upd AFTER UPDATE ON schd_gen REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION schd_gen_keeps_rostered_days();
CREATE TRIGGER schd_gen_truncate_roster_first AFTER TRUNCATE ON schd_gen
    FOR EACH STATEMENT EXECUTE FUNCTION schd_gen_truncate_alone();

-- +goose Down
DROP TRIGGER schd_gen_truncate_roster_first ON schd_gen;
DROP TRIGGER schd_gen_roster_day_upd ON schd_gen;
DROP TRIGGER schd_gen_roster_cascade ON schd_gen;
DROP TRIGGER schd_gen_flid_day_upd ON schd_gen_flid;
DROP TRIGGER schd_gen_flid_day_ins ON schd_gen_flid;
ALTER TABLE schd_gen_flid ADD CONSTRAINT schd_gen_flid_operation_day_fkey
    FOREIGN KEY (operation_day) REFERENCES schd_gen (operation_day) ON DELETE CASCADE;
DROP FUNCTION schd_gen_truncate_alone();
DROP FUNCTION schd_gen_keeps_rostered_days();
DROP FUNCTION schd_gen_removes_roster();
DROP FUNCTION schd_gen_flid_has_day();
