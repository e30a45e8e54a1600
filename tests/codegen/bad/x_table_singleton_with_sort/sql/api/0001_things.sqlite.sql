CREATE TABLE things (
    workspace_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
);
