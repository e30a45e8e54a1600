-- Several instances on one database behaving as one service (runtime/instances.h). SQLite runs
-- one instance and never reads these, but both engines keep one schema.

-- Every session, token or subject id a handler revokes, until when the revocation must hold
-- (Unix seconds: when whatever it revokes would have expired anyway), written in the revoking
-- transaction so that the next request to any instance finds it. Pruned once it has passed.
CREATE TABLE revocations (
    id TEXT PRIMARY KEY,
    until_s INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX revocations_until_idx ON revocations (until_s);

-- Counters the instances compare: 'watched' moves inside every commit that changed a table
-- storage_watch() registered, so an instance that sees it move empties its privilege cache.
CREATE TABLE storage_generations (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO storage_generations (name, value) VALUES ('watched', 0);

-- A key's bucket shared by the instances (runtime/ratelimit.c): how many requests the last
-- lease took from it.
ALTER TABLE ratelimit_state ADD COLUMN granted INTEGER NOT NULL DEFAULT 0;
