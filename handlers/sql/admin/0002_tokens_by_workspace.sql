-- A service account's tokens are listed through runtime/resource.c (resource_list), which
-- scopes every list by the workspace first and applies the account as a filter: this index
-- reads the workspace's tokens newest first, as service_account_tokens_list_idx reads one
-- account's (still what disabling an account's tokens looks up).
CREATE INDEX service_account_tokens_workspace_idx
    ON service_account_tokens (workspace_id, created_at DESC, id DESC);
