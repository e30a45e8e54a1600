-- The ledger API's tables (handlers/ledger*.c): the chart of accounts with the balances
-- postings maintain, journal entries with their draft versions, the immutable postings,
-- per-day balance checkpoints, accounting periods and the posting settings. Refers to the
-- accounts API's workspaces. Amounts are integer minor units; dates are 'YYYY-MM-DD' text,
-- times RFC 3339 UTC text.

-- Ledger accounts. posted_*: the sums of posted lines; draft_*: of draft lines (entries not
-- posted nor discarded) whose account is this one in its currency; lock_version: posted
-- entries that touched it. Only the posting engine (handlers/ledger_post.c) moves these
-- (x-table maintained: a save of the account never writes them). The CHECKs restate the
-- account's constraints on posted balances, so no statement can leave one broken.
CREATE TABLE ledger_accounts (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    code TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    classification TEXT NOT NULL
        CHECK (classification IN ('asset', 'liability', 'equity', 'revenue', 'expense')),
    normal_balance TEXT NOT NULL CHECK (normal_balance IN ('debit', 'credit')),
    currency TEXT NOT NULL,
    currency_exponent INTEGER NOT NULL,
    parent_id TEXT REFERENCES ledger_accounts(id),
    status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
    constraints_debits_must_not_exceed_credits INTEGER,
    constraints_credits_must_not_exceed_debits INTEGER,
    archived_at TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    lock_version INTEGER NOT NULL DEFAULT 0,
    posted_debits INTEGER NOT NULL DEFAULT 0 CHECK (posted_debits >= 0),
    posted_credits INTEGER NOT NULL DEFAULT 0 CHECK (posted_credits >= 0),
    draft_debits INTEGER NOT NULL DEFAULT 0 CHECK (draft_debits >= 0),
    draft_credits INTEGER NOT NULL DEFAULT 0 CHECK (draft_credits >= 0),
    UNIQUE (workspace_id, code),
    CHECK (constraints_debits_must_not_exceed_credits IS NOT 1 OR posted_debits <= posted_credits),
    CHECK (constraints_credits_must_not_exceed_debits IS NOT 1 OR posted_credits <= posted_debits)
);
CREATE INDEX ledger_accounts_list_idx ON ledger_accounts (workspace_id, code, id);
CREATE INDEX ledger_accounts_parent_idx ON ledger_accounts (parent_id);

-- Accounting periods of whole days (both ends inclusive); they never overlap
-- (handlers/ledger_periods.c checks it in the workspace's write transaction).
CREATE TABLE ledger_periods (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    name TEXT NOT NULL,
    fiscal_year INTEGER NOT NULL,
    start_date TEXT NOT NULL,
    end_date TEXT NOT NULL CHECK (end_date >= start_date),
    status TEXT NOT NULL CHECK (status IN ('future', 'open', 'closing', 'closed', 'locked')),
    opened_at TEXT,
    soft_closed_at TEXT,
    closed_at TEXT,
    closed_by TEXT,
    locked_at TEXT,
    locked_by TEXT,
    reopened_at TEXT,
    reopened_by TEXT,
    reopen_count INTEGER,
    metadata TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (workspace_id, name)
);
CREATE INDEX ledger_periods_list_idx ON ledger_periods (workspace_id, start_date DESC, id DESC);

-- Journal entries. lines: the JSON array the API shows (for a draft, as last written);
-- posted lines are also rows of ledger_postings. draft_version: the number of the latest
-- row of journal_entry_versions.
CREATE TABLE journal_entries (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    description TEXT NOT NULL,
    effective_date TEXT NOT NULL,
    effective_at TEXT,
    status TEXT NOT NULL CHECK (status IN ('draft', 'posted', 'discarded')),
    lines TEXT NOT NULL,
    external_id TEXT,
    source TEXT NOT NULL
        CHECK (source IN ('manual', 'payment', 'conversion', 'bank_feed', 'system')),
    source_id TEXT,
    reverses_entry_id TEXT REFERENCES journal_entries(id),
    reversed_by_entry_id TEXT REFERENCES journal_entries(id),
    created_by TEXT NOT NULL,
    posted_at TEXT,
    posted_by TEXT,
    discarded_at TEXT,
    draft_version INTEGER NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX journal_entries_list_idx
    ON journal_entries (workspace_id, effective_date DESC, id DESC);
CREATE INDEX journal_entries_source_idx ON journal_entries (workspace_id, source, source_id);
CREATE INDEX journal_entries_drafts_idx
    ON journal_entries (workspace_id, effective_date) WHERE status = 'draft';
-- one posted entry per external_id; an entry is reversed once
CREATE UNIQUE INDEX journal_entries_external_id_idx
    ON journal_entries (workspace_id, external_id)
    WHERE status = 'posted' AND external_id IS NOT NULL;
CREATE UNIQUE INDEX journal_entries_reverses_idx
    ON journal_entries (reverses_entry_id) WHERE reverses_entry_id IS NOT NULL;

-- A posted or discarded entry is final: no statement changes what it says (only a reversal
-- names itself in reversed_by_entry_id, once, and the version and updated_at move with it),
-- and no entry is ever deleted.
CREATE TRIGGER journal_entries_final BEFORE UPDATE ON journal_entries
WHEN OLD.status <> 'draft' AND (
    NEW.status IS NOT OLD.status OR NEW.lines IS NOT OLD.lines OR
    NEW.description IS NOT OLD.description OR NEW.effective_date IS NOT OLD.effective_date OR
    NEW.effective_at IS NOT OLD.effective_at OR NEW.external_id IS NOT OLD.external_id OR
    NEW.source IS NOT OLD.source OR NEW.source_id IS NOT OLD.source_id OR
    NEW.reverses_entry_id IS NOT OLD.reverses_entry_id OR
    (OLD.reversed_by_entry_id IS NOT NULL AND
     NEW.reversed_by_entry_id IS NOT OLD.reversed_by_entry_id) OR
    NEW.posted_at IS NOT OLD.posted_at OR NEW.posted_by IS NOT OLD.posted_by OR
    NEW.metadata IS NOT OLD.metadata OR NEW.workspace_id IS NOT OLD.workspace_id OR
    NEW.draft_version IS NOT OLD.draft_version)
BEGIN
    SELECT RAISE(ABORT, 'journal entry is final');
END;
CREATE TRIGGER journal_entries_kept BEFORE DELETE ON journal_entries
BEGIN
    SELECT RAISE(ABORT, 'journal entries are never deleted');
END;

-- Every state a draft had (GET /ledger/journals/{id}/versions), from number 0.
CREATE TABLE journal_entry_versions (
    journal_entry_id TEXT NOT NULL REFERENCES journal_entries(id),
    number INTEGER NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    description TEXT NOT NULL,
    effective_date TEXT NOT NULL,
    effective_at TEXT,
    lines TEXT NOT NULL,
    external_id TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (journal_entry_id, number)
);

-- The posted lines, one row each, written once when the entry posts and never changed:
-- what a balance is recomputed from (tests), and what the journal CSV and reports read.
CREATE TABLE ledger_postings (
    journal_entry_id TEXT NOT NULL REFERENCES journal_entries(id),
    line INTEGER NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    ledger_account_id TEXT NOT NULL REFERENCES ledger_accounts(id),
    direction TEXT NOT NULL CHECK (direction IN ('debit', 'credit')),
    amount INTEGER NOT NULL CHECK (amount > 0),
    currency TEXT NOT NULL,
    effective_date TEXT NOT NULL,
    posted_at TEXT NOT NULL,
    PRIMARY KEY (journal_entry_id, line)
);
CREATE INDEX ledger_postings_account_idx
    ON ledger_postings (workspace_id, ledger_account_id, effective_date);
CREATE TRIGGER ledger_postings_immutable BEFORE UPDATE ON ledger_postings
BEGIN
    SELECT RAISE(ABORT, 'postings are immutable');
END;
CREATE TRIGGER ledger_postings_kept BEFORE DELETE ON ledger_postings
BEGIN
    SELECT RAISE(ABORT, 'postings are never deleted');
END;

-- Balance checkpoints: an account's posted debits and credits, cumulative, at the end of
-- each day it moved (from its first posting on). A balance as of day D is the row with the
-- latest day <= D: the trial balance as of a date reads one row per account, whatever the
-- number of lines. A posting dated D adds its amounts to the row of D (made from the latest
-- earlier one) and to every later row.
CREATE TABLE ledger_balance_days (
    ledger_account_id TEXT NOT NULL REFERENCES ledger_accounts(id),
    day TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    posted_debits INTEGER NOT NULL CHECK (posted_debits >= 0),
    posted_credits INTEGER NOT NULL CHECK (posted_credits >= 0),
    PRIMARY KEY (ledger_account_id, day)
);

-- The workspace's posting settings (GET/PUT /ledger/settings), one row once written.
CREATE TABLE ledger_settings (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id),
    payment_posting TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
