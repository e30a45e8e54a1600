-- The small spec's x-tables (Gadget, GadgetShelf: things.yaml): what codegen/rows.py checks the mapping
-- against. extra is a column no property maps (NOT NULL with a DEFAULT: inserts still work).
CREATE TABLE gadgets (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    name TEXT NOT NULL,
    title TEXT,
    kind TEXT NOT NULL,
    active INTEGER,
    count INTEGER,
    note TEXT,
    spec_w INTEGER NOT NULL,
    spec_h INTEGER,
    spec_unit TEXT,
    mount_type TEXT,
    mount_depth INTEGER,
    mount_screw TEXT,
    labels TEXT NOT NULL DEFAULT '{}',
    tags TEXT,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    extra INTEGER NOT NULL DEFAULT 0
);

-- GadgetShelf (x-table singleton): one row per workspace, keyed by it.
CREATE TABLE gadget_shelves (
    workspace_id TEXT PRIMARY KEY,
    capacity INTEGER NOT NULL,
    label TEXT,
    slots TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
