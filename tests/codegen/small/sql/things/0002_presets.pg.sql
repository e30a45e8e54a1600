-- PostgreSQL dialect of 0002_presets.sqlite.sql. Preset (things.yaml): a table whose rows the
-- client names (x-table key) and whose workspace the schema does not show (a hidden column).
CREATE TABLE presets (
    workspace_id TEXT NOT NULL,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    version BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, key)
);
