-- PostgreSQL dialect of 0001_gadgets.sqlite.sql. The small spec's x-tables (Gadget, GadgetShelf: things.yaml): what codegen/rows.py checks the mapping
-- against. extra is a column no property maps (NOT NULL with a DEFAULT: inserts still work).
CREATE TABLE gadgets (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    name TEXT NOT NULL,
    title TEXT,
    kind TEXT NOT NULL,
    active BIGINT,
    count BIGINT,
    note TEXT,
    spec_w BIGINT NOT NULL,
    spec_h BIGINT,
    spec_unit TEXT,
    mount_type TEXT,
    mount_depth BIGINT,
    mount_screw TEXT,
    labels TEXT NOT NULL DEFAULT '{}',
    tags TEXT,
    version BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    extra BIGINT NOT NULL DEFAULT 0
);

-- GadgetShelf (x-table singleton): one row per workspace, keyed by it.
CREATE TABLE gadget_shelves (
    workspace_id TEXT PRIMARY KEY,
    capacity BIGINT NOT NULL,
    label TEXT,
    slots TEXT NOT NULL,
    version BIGINT NOT NULL,
    updated_at TEXT NOT NULL
);
