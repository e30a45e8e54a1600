CREATE TABLE things (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    tags TEXT,
    created_at TEXT NOT NULL
);
