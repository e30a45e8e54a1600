-- Which accounts each draft has a line on (as last written: a draft posted or discarded keeps
-- its rows), kept by handlers/ledger_journals.c whenever a draft's lines are written: the
-- journal list's ledger_account_id filter reads it beside ledger_postings (the posted lines)
-- through their indexes, instead of scanning every entry's lines.
CREATE TABLE journal_entry_accounts (
    ledger_account_id TEXT NOT NULL, -- a draft's line may name an account that is not there
    journal_entry_id TEXT NOT NULL REFERENCES journal_entries(id),
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    PRIMARY KEY (ledger_account_id, journal_entry_id)
);
CREATE INDEX journal_entry_accounts_entry_idx ON journal_entry_accounts (journal_entry_id);
-- The entries written before: their lines (a JSON array of objects with ledger_account_id).
INSERT INTO journal_entry_accounts (ledger_account_id, journal_entry_id, workspace_id)
SELECT DISTINCT l.value ->> 'ledger_account_id', e.id, e.workspace_id
FROM journal_entries e, json_array_elements(e.lines::json) l;
