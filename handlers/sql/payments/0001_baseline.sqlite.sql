-- The payments API's tables (handlers/payments*.c), as the nineteen migrations of the single
-- list that came before per-component migrations left them. Refers to the accounts API's
-- workspaces.

-- Beneficiaries: where money goes. requested_by: who asked for the approval (no
-- self-approval); approval_round: which round of approvals the current details are in
-- (beneficiary_makers).
CREATE TABLE beneficiaries (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    name TEXT NOT NULL,
    account_holder_name TEXT NOT NULL,
    scheme TEXT NOT NULL,
    identification TEXT NOT NULL,
    bank_bic TEXT,
    bank_routing_number TEXT,
    bank_name TEXT,
    bank_country TEXT,
    currency TEXT NOT NULL,
    country TEXT NOT NULL,
    beneficiary_type TEXT NOT NULL,
    counterparty_id TEXT,
    external_id TEXT,
    email TEXT,
    status TEXT NOT NULL,
    verification_status TEXT NOT NULL,
    approval_status TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    requested_by TEXT,
    approval_round INTEGER NOT NULL DEFAULT 1,
    UNIQUE (workspace_id, external_id)
);
CREATE INDEX beneficiaries_list_idx
    ON beneficiaries (workspace_id, created_at DESC, id DESC);

-- Batches of payments (handlers/payments_batches.c): decided as a whole (batch_approvals, per
-- approval round); their items are payments with batch_id and their place in the batch.
-- created_for: the maker's acting person, as payments have it.
CREATE TABLE payment_batches (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    status TEXT NOT NULL CHECK (status IN ('pending_approval', 'approved', 'denied', 'cancelled')),
    item_count INTEGER NOT NULL CHECK (item_count BETWEEN 1 AND 1000),
    approvals_required INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    external_id TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    approval_round INTEGER NOT NULL DEFAULT 1,
    created_for TEXT,
    UNIQUE (workspace_id, external_id)
);

-- Payments, with their approvals (per approval round). The settlement worker
-- (handlers/payments_settlement.c) reads next_step_at: when a payment is next due for a step
-- (Unix ms; NULL when nothing is pending), and writes the rail's reference and the ISO 20022
-- reason code of a failure or return. Maker-checker (handlers/payments_makers.c):
-- created_for is the acting person of the creator (a service account acts for the user who
-- created it); beneficiary_round is the approval round of the beneficiary when the payment's
-- own approval round started (NULL: not known, rows from before it was recorded; 0: matches
-- none), so approvals given before the beneficiary's details changed no longer count.
-- No index on status: listing filters by workspace first.
CREATE TABLE payments (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    amount INTEGER NOT NULL CHECK (amount > 0 AND amount <= 9007199254740991),
    currency TEXT NOT NULL,
    type TEXT NOT NULL,
    priority TEXT NOT NULL,
    originating_account TEXT NOT NULL,
    beneficiary_id TEXT NOT NULL REFERENCES beneficiaries(id),
    effective_date TEXT NOT NULL,
    remittance_information TEXT,
    external_id TEXT,
    status TEXT NOT NULL,
    approvals_required INTEGER NOT NULL,
    failure_reason TEXT,
    created_by TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    approval_round INTEGER NOT NULL DEFAULT 1,
    next_step_at INTEGER,
    rail_reference TEXT,
    failure_code TEXT,
    batch_id TEXT REFERENCES payment_batches(id),
    batch_position INTEGER,
    created_for TEXT,
    beneficiary_round INTEGER,
    UNIQUE (workspace_id, external_id)
);
CREATE INDEX payments_list_idx ON payments (workspace_id, created_at DESC, id DESC);
CREATE INDEX payments_due_idx ON payments (next_step_at) WHERE next_step_at IS NOT NULL;
CREATE INDEX payments_batch_idx ON payments (batch_id, batch_position) WHERE batch_id IS NOT NULL;
CREATE INDEX payments_velocity_idx ON payments (beneficiary_id, created_for, created_at);

CREATE TABLE payment_approvals (
    payment_id TEXT NOT NULL REFERENCES payments(id),
    round INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('approved', 'denied')),
    reason TEXT,
    decided_at TEXT NOT NULL,
    PRIMARY KEY (payment_id, round, user_id)
);

CREATE TABLE batch_approvals (
    batch_id TEXT NOT NULL REFERENCES payment_batches(id),
    round INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('approved', 'denied')),
    reason TEXT,
    decided_at TEXT NOT NULL,
    PRIMARY KEY (batch_id, round, user_id)
);

-- A workspace's approval policy (tiers as JSON text) and the velocity window of its
-- maker-checker rules.
CREATE TABLE approval_policies (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id),
    tiers TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    velocity_window_hours INTEGER NOT NULL DEFAULT 24
);

-- Maker-checker: every person who made a payment (its creator's acting person, and every
-- other person who changed a field approvals depend on; fields: a bit mask, bit 0 amount,
-- 1 currency, 2 beneficiary_id, 3 originating_account, 4 type, 5 priority, 6 effective_date,
-- 7 remittance_information; via: the service account they acted through), and a
-- beneficiary's makers per approval round (fields: bit 0 created it, 1 name,
-- 2 account_holder_name, 3 account_identification, 4 bank, 5 currency, 6 country).
CREATE TABLE payment_makers (
    payment_id TEXT NOT NULL REFERENCES payments(id),
    person_id TEXT NOT NULL,
    via TEXT,
    fields INTEGER NOT NULL,
    first_at TEXT NOT NULL,
    last_at TEXT NOT NULL,
    PRIMARY KEY (payment_id, person_id)
) WITHOUT ROWID;

CREATE TABLE beneficiary_makers (
    beneficiary_id TEXT NOT NULL REFERENCES beneficiaries(id),
    round INTEGER NOT NULL,
    person_id TEXT NOT NULL,
    via TEXT,
    fields INTEGER NOT NULL,
    made_at TEXT NOT NULL,
    PRIMARY KEY (beneficiary_id, round, person_id)
) WITHOUT ROWID;
