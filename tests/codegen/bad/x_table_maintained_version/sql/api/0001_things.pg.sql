CREATE TABLE things (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    created_at TEXT NOT NULL
);
