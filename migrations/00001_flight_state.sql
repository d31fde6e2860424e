-- Flight current state: one main row per FLID plus nine child tables that
-- hold the ten variable-length collections (seed 000 §3.2). Every SIS value
-- is kept as its original string (SPEC §2.9); typed UTC columns exist only
-- where the module itself needs them (day grouping, history sweep).

-- +goose Up
-- state_version values come from one sequence (SPEC §2.3): a FLID's versions
-- keep rising across delete and re-create, and tombstones take a fresh value.
CREATE SEQUENCE state_version_seq AS bigint START WITH 1 NO CYCLE;

CREATE TABLE flight_schd (
    flid             bigint      PRIMARY KEY
                     CONSTRAINT flight_schd_flid_range CHECK (flid BETWEEN 0 AND 999999999999),
    -- Operation day the flight belongs to: NULL until a full-day snapshot
    -- includes it, then never changed (trigger flight_schd_guard).
    operation_day    date,
    state_version    bigint      NOT NULL CONSTRAINT flight_schd_state_version_positive CHECK (state_version > 0),
    last_message_id  bigint      NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- FLTR scalars (SPEC §3.1), original strings.
    ffid            text,
    alcd            text,
    alsc            text,
    flno            text,
    mvin            text,
    sodt            text,
    flty            text,
    flin            text,
    acft            text,
    reno            text,
    taop            text,
    tafl            text,
    taid            text,
    trml            text,
    maxp            text,
    csop            text,
    csft            text,
    maid            text,
    estt            text,
    actt            text,
    stnd            text,
    phag            text,
    fhag            text,
    mhag            text,
    cncl            text,
    remc            text,
    botm            text,
    lacl            text,
    fint            text,
    appt            text,
    egsr            text,
    egst            text,
    vipp            text,
    vipr            text,
    lbno            text,
    lbwt            text,
    paxc            text,
    exsc            text,
    exsr            text,
    exss            text,
    ftss            text,
    pedt            text,
    neat            text,
    padt            text,
    naat            text,
    stdt            text,
    eddt            text,
    dyop            text,
    scht            text,
    cobt            text,
    tobt            text,
    eobt            text,
    ctot            text,
    iest            text,
    runw            text,
    -- Typed UTC columns derived from SIS local times (SPEC §2.9).
    sodt_utc         timestamptz,
    cncl_utc         timestamptz,
    naat_utc         timestamptz,
    neat_utc         timestamptz,
    -- Anomaly objects (FDIV/FRET/FLAB): known attributes, text, and every
    -- other attribute in *_attrs, so nothing is dropped.
    fdiv_ddes        text,
    fdiv_ddir        text,
    fdiv_text        text,
    fdiv_attrs       jsonb,
    fret_text        text,
    fret_attrs       jsonb,
    flab_text        text,
    flab_attrs       jsonb,
    -- Text records (SRVT/VIPF/MAFL) and grouped records (PSHT/TIPT/PORT):
    -- the canonical JSON array of their items, every child kept.
    srvt_text        text,
    vipf_text        text,
    mafl_text        text,
    psht_text        text,
    tipt_text        text,
    port_text        text
);

-- GTDT@GTNO: one row per item, input order in ordinal (from 1); source_seq is
-- the upstream sequence attribute, kept verbatim, never a key.
CREATE TABLE flight_gate (
    flid             bigint      NOT NULL REFERENCES flight_schd (flid),
    ordinal          integer     NOT NULL CHECK (ordinal > 0),
    source_seq       text,
    gate            text,
    pgot            text,
    pgct            text,
    gotm            text,
    gctm            text,
    gtyp            text,
    -- Every child element or attribute not mapped to a column above.
    attrs            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    record_version   bigint      NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flid, ordinal)
);

-- CKDT@CKNO: one row per item, input order in ordinal (from 1); source_seq is
-- the upstream sequence attribute, kept verbatim, never a key.
CREATE TABLE flight_checkin (
    flid             bigint      NOT NULL REFERENCES flight_schd (flid),
    ordinal          integer     NOT NULL CHECK (ordinal > 0),
    source_seq       text,
    chkc            text,
    ccls            text,
    pcot            text,
    pcct            text,
    cotm            text,
    cctm            text,
    ctyp            text,
    -- Every child element or attribute not mapped to a column above.
    attrs            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    record_version   bigint      NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flid, ordinal)
);

-- CLDT@CLNO: one row per item, input order in ordinal (from 1); source_seq is
-- the upstream sequence attribute, kept verbatim, never a key.
CREATE TABLE flight_belt (
    flid             bigint      NOT NULL REFERENCES flight_schd (flid),
    ordinal          integer     NOT NULL CHECK (ordinal > 0),
    source_seq       text,
    -- Every child element or attribute not mapped to a column above.
    attrs            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    record_version   bigint      NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flid, ordinal)
);

-- PSDT@PSNO: one row per item, input order in ordinal (from 1); source_seq is
-- the upstream sequence attribute, kept verbatim, never a key.
CREATE TABLE flight_stand_plan (
    flid             bigint      NOT NULL REFERENCES flight_schd (flid),
    ordinal          integer     NOT NULL CHECK (ordinal > 0),
    source_seq       text,
    psst            text,
    stst            text,
    stet            text,
    -- Every child element or attribute not mapped to a column above.
    attrs            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    record_version   bigint      NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flid, ordinal)
);

-- CHDT@CHNO: one row per item, input order in ordinal (from 1); source_seq is
-- the upstream sequence attribute, kept verbatim, never a key.
CREATE TABLE flight_chute (
    flid             bigint      NOT NULL REFERENCES flight_schd (flid),
    ordinal          integer     NOT NULL CHECK (ordinal > 0),
    source_seq       text,
    -- Every child element or attribute not mapped to a column above.
    attrs            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    record_version   bigint      NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flid, ordinal)
);

-- DELY (no sequence attribute): one row per item, input order in ordinal (from 1); source_seq is
-- the upstream sequence attribute, kept verbatim, never a key.
CREATE TABLE flight_delay (
    flid             bigint      NOT NULL REFERENCES flight_schd (flid),
    ordinal          integer     NOT NULL CHECK (ordinal > 0),
    source_seq       text,
    code            text,
    strt            text,
    dura            text,
    comment         text,  -- the item's character text (TEXT)
    -- Every child element or attribute not mapped to a column above.
    attrs            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    record_version   bigint      NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flid, ordinal)
);

-- ABTM@ASNO: one row per item, input order in ordinal (from 1); source_seq is
-- the upstream sequence attribute, kept verbatim, never a key.
CREATE TABLE flight_bridge_op (
    flid             bigint      NOT NULL REFERENCES flight_schd (flid),
    ordinal          integer     NOT NULL CHECK (ordinal > 0),
    source_seq       text,
    abdg            text,
    abop            text,
    aotm            text,
    -- Every child element or attribute not mapped to a column above.
    attrs            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    record_version   bigint      NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flid, ordinal)
);

-- CHOT@CSNO: one row per item, input order in ordinal (from 1); source_seq is
-- the upstream sequence attribute, kept verbatim, never a key.
CREATE TABLE flight_chock_op (
    flid             bigint      NOT NULL REFERENCES flight_schd (flid),
    ordinal          integer     NOT NULL CHECK (ordinal > 0),
    source_seq       text,
    chtm            text,
    chid            text,
    chst            text,
    -- Every child element or attribute not mapped to a column above.
    attrs            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    record_version   bigint      NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flid, ordinal)
);

-- ROUT and ERUT share one table; route_kind is part of the key so both kinds
-- can number their points from 1 (seed 001 §3.4).
CREATE TABLE flight_route_point (
    flid             bigint      NOT NULL REFERENCES flight_schd (flid),
    route_kind       text        NOT NULL CHECK (route_kind IN ('ROUT', 'ERUT')),
    ordinal          integer     NOT NULL CHECK (ordinal > 0),
    source_seq       text,
    apcd             text,
    scat             text,
    scdt             text,
    attrs            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    record_version   bigint      NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (flid, route_kind, ordinal)
);

-- The database enforces the identity rules it can see (seed 000 §7.4):
-- operation_day is set once, and a flight's state_version only rises.
-- +goose StatementBegin
CREATE FUNCTION flight_schd_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.operation_day IS NOT NULL AND NEW.operation_day IS DISTINCT FROM OLD.operation_day THEN
        RAISE EXCEPTION 'flight %: operation_day is set once (% -> %)', OLD.flid, OLD.operation_day, NEW.operation_day
            USING ERRCODE = 'FF001', HINT = 'SAME_FLID_ACROSS_OPERATION_DAYS';
    END IF;
    IF NEW.flid <> OLD.flid THEN
        RAISE EXCEPTION 'flight %: flid is the identity and never changes', OLD.flid USING ERRCODE = 'FF002';
    END IF;
    IF NEW.state_version <= OLD.state_version THEN
        RAISE EXCEPTION 'flight %: state_version must rise (% -> %)', OLD.flid, OLD.state_version, NEW.state_version
            USING ERRCODE = 'FF003';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER flight_schd_guard BEFORE UPDATE ON flight_schd
    FOR EACH ROW EXECUTE FUNCTION flight_schd_guard();

-- Day reads and exports, NULL-day retention, read API "updatedSince".
CREATE INDEX flight_schd_operation_day ON flight_schd (operation_day, flid);
CREATE INDEX flight_schd_null_day ON flight_schd (updated_at) WHERE operation_day IS NULL;
CREATE INDEX flight_schd_updated ON flight_schd (updated_at, flid);
-- History sweep by typed times (seed 000 §8.1).
CREATE INDEX flight_schd_sodt ON flight_schd (sodt_utc);
CREATE INDEX flight_schd_cncl ON flight_schd (cncl_utc) WHERE cncl_utc IS NOT NULL;
CREATE INDEX flight_schd_naat ON flight_schd (naat_utc) WHERE naat_utc IS NOT NULL;
CREATE INDEX flight_schd_neat ON flight_schd (neat_utc) WHERE neat_utc IS NOT NULL;

-- +goose Down
DROP TABLE flight_route_point;
DROP TABLE flight_chock_op;
DROP TABLE flight_bridge_op;
DROP TABLE flight_delay;
DROP TABLE flight_chute;
DROP TABLE flight_stand_plan;
DROP TABLE flight_belt;
DROP TABLE flight_checkin;
DROP TABLE flight_gate;
DROP TABLE flight_schd;
DROP FUNCTION flight_schd_guard();
DROP SEQUENCE state_version_seq;
