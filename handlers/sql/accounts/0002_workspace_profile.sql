-- The workspace profile and treasury settings (PATCH /v1/workspace, handlers/workspace.c; the
-- writes are accounts_directory.c's). Every column NULL until set: a NULL profile member is
-- absent from the answers, a NULL treasury setting is its documented default (so `null` in a
-- merge patch resets it, and a default is never frozen into rows). The slug is unique across
-- the service (NULLs are not equal: any number of workspaces have none).
ALTER TABLE workspaces ADD COLUMN slug TEXT;
ALTER TABLE workspaces ADD COLUMN base_currency TEXT;
ALTER TABLE workspaces ADD COLUMN timezone TEXT;
ALTER TABLE workspaces ADD COLUMN fiscal_year_start_month INTEGER
    CHECK (fiscal_year_start_month IS NULL OR fiscal_year_start_month BETWEEN 1 AND 12);
ALTER TABLE workspaces ADD COLUMN treasury_fx_quote_ttl_seconds INTEGER;
ALTER TABLE workspaces ADD COLUMN treasury_fx_spread_bps INTEGER;
ALTER TABLE workspaces ADD COLUMN treasury_transfer_signatures_required INTEGER;
ALTER TABLE workspaces ADD COLUMN treasury_transfer_authorisation_hours INTEGER;
ALTER TABLE workspaces ADD COLUMN treasury_require_mfa INTEGER;
ALTER TABLE workspaces ADD COLUMN treasury_idempotency_retention_hours INTEGER;
CREATE UNIQUE INDEX workspaces_slug ON workspaces (slug);
