-- The conversions API's tables (handlers/conversions*.c): FX quotes and the conversions
-- executed from them. Refers to the accounts API's workspaces. Amounts are integer minor
-- units; rates exact decimal text as the API shows them (never a float); dates 'YYYY-MM-DD'
-- text, times RFC 3339 UTC text of one fixed shape (so that text order is time order).

-- Quotes: a price locked until expires_at, consumed by at most one conversion (the UPDATE
-- that consumes it tests status = 'active': handlers/conversions_quotes.c).
CREATE TABLE fx_quotes (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    sell_currency TEXT NOT NULL,
    buy_currency TEXT NOT NULL,
    fixed_side TEXT NOT NULL CHECK (fixed_side IN ('sell', 'buy')),
    sell_amount BIGINT NOT NULL CHECK (sell_amount > 0),
    buy_amount BIGINT NOT NULL CHECK (buy_amount > 0),
    rate TEXT NOT NULL,
    mid_rate TEXT NOT NULL,
    spread_bps BIGINT NOT NULL,
    rate_source TEXT NOT NULL,
    value_date TEXT NOT NULL,
    product TEXT NOT NULL CHECK (product IN ('spot', 'forward')),
    ttl_seconds BIGINT NOT NULL,
    expires_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'expired', 'consumed')),
    conversion_id TEXT,
    created_by TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    version BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    CHECK ((status = 'consumed') = (conversion_id IS NOT NULL))
);
CREATE INDEX fx_quotes_list_idx ON fx_quotes (workspace_id, created_at, id);

-- Conversions. One conversion per quote (the UNIQUE index, behind the consuming UPDATE). The settlement job reads the
-- scheduled and overdue ones whose cut-off has come (fx_conversions_due_idx).
CREATE TABLE fx_conversions (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    quote_id TEXT NOT NULL REFERENCES fx_quotes(id),
    short_reference TEXT NOT NULL,
    sell_currency TEXT NOT NULL,
    sell_amount BIGINT NOT NULL CHECK (sell_amount > 0),
    buy_currency TEXT NOT NULL,
    buy_amount BIGINT NOT NULL CHECK (buy_amount > 0),
    client_rate TEXT NOT NULL,
    mid_rate TEXT NOT NULL,
    spread_bps BIGINT NOT NULL,
    product TEXT NOT NULL CHECK (product IN ('spot', 'forward')),
    value_date TEXT NOT NULL,
    settlement_cutoff_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('scheduled', 'settled', 'overdue', 'cancelled')),
    settled_at TEXT,
    cancelled_at TEXT,
    ledger_transaction_id TEXT,
    created_by TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    version BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    CHECK ((status = 'settled') = (ledger_transaction_id IS NOT NULL))
);
CREATE UNIQUE INDEX fx_conversions_quote_idx ON fx_conversions (quote_id);
CREATE INDEX fx_conversions_list_idx ON fx_conversions (workspace_id, created_at, id);
-- the list's currency filter (sold or bought: handlers/conversions.c)
CREATE INDEX fx_conversions_sell_idx ON fx_conversions (workspace_id, sell_currency);
CREATE INDEX fx_conversions_buy_idx ON fx_conversions (workspace_id, buy_currency);
CREATE INDEX fx_conversions_due_idx ON fx_conversions (settlement_cutoff_at)
    WHERE status IN ('scheduled', 'overdue');
