-- The rates API's custom curves and ECB reference rates (handlers/rates_curves.c,
-- handlers/rates_reference.c). Refers to the accounts API's workspaces only: nothing here
-- depends on the live rates' tables (0001). Rates are exact decimal text, as given or as
-- published; dates 'YYYY-MM-DD', times RFC 3339 UTC text.

-- Custom forward curves. points: the JSON array the API shows, each tenor's value_date as of
-- the last save (a read recomputes them for today). A pair has at most one active curve in a
-- workspace: the partial unique index makes a second one impossible, whatever the handler.
CREATE TABLE rate_curves (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    name TEXT NOT NULL,
    pair TEXT NOT NULL,
    spot_source TEXT NOT NULL CHECK (spot_source IN ('live', 'reference')),
    points TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('draft', 'active', 'archived')),
    effective_from TEXT,
    activated_at TEXT,
    archived_at TEXT,
    created_by TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX rate_curves_list_idx ON rate_curves (workspace_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX rate_curves_one_active ON rate_curves (workspace_id, pair)
    WHERE status = 'active';

-- ECB publications imported into a workspace: one row per publication date. imported_at:
-- when it was imported, or last replaced by a correction with other figures.
CREATE TABLE reference_publications (
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    source TEXT NOT NULL CHECK (source IN ('ecb')),
    date TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    rate_count INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, source, date)
);

-- The rates of a publication: units of currency for one EUR, the text as published.
CREATE TABLE reference_rates (
    workspace_id TEXT NOT NULL,
    source TEXT NOT NULL,
    date TEXT NOT NULL,
    currency TEXT NOT NULL,
    rate TEXT NOT NULL,
    PRIMARY KEY (workspace_id, source, date, currency),
    FOREIGN KEY (workspace_id, source, date)
        REFERENCES reference_publications (workspace_id, source, date) ON DELETE CASCADE
);
