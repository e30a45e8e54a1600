-- The rates API's live rates (handlers/rates_live.c, rates_market.c): each pair's current live
-- rate, the OHLC bars its history is answered from, and the sandbox market's walk. Rates are
-- exact decimal text, stored as given or computed (never a float); times RFC 3339 UTC text,
-- dates 'YYYY-MM-DD'. workspace_id NULL is the sandbox market's, which every workspace sees
-- beside its own pushed rates (rates.h).

-- The current live rate of a pair, one per workspace (and one for the market): a rate
-- recorded replaces it unless its as_of is earlier. The unique index says "one per
-- workspace" for the market's NULL too.
CREATE TABLE fx_live_rates (
    workspace_id TEXT REFERENCES workspaces(id),
    pair TEXT NOT NULL,
    bid TEXT NOT NULL,
    ask TEXT NOT NULL,
    mid TEXT NOT NULL,
    source TEXT NOT NULL,
    as_of TEXT NOT NULL,
    value_date TEXT NOT NULL
);
CREATE UNIQUE INDEX fx_live_rates_key ON fx_live_rates (COALESCE(workspace_id, ''), pair);
CREATE INDEX fx_live_rates_pair_idx ON fx_live_rates (pair);

-- History: open, high, low and close of bid, ask and mid per bucket ('1m', '1h', '1d',
-- start aligned on UTC), kept as each rate is recorded (upserted), so that a history is a
-- range of bars and never a scan of raw rates. open/close are the rates of the earliest and
-- latest as_of in the bucket (first_as_of, last_as_of: rates may arrive out of order).
-- 1m bars are pruned after 35 days (rates_live.c), the others kept.
CREATE TABLE fx_rate_bars (
    id INTEGER PRIMARY KEY,
    workspace_id TEXT REFERENCES workspaces(id),
    pair TEXT NOT NULL,
    bucket TEXT NOT NULL CHECK (bucket IN ('1m', '1h', '1d')),
    start TEXT NOT NULL,
    first_as_of TEXT NOT NULL,
    last_as_of TEXT NOT NULL,
    bid_open TEXT NOT NULL,
    bid_high TEXT NOT NULL,
    bid_low TEXT NOT NULL,
    bid_close TEXT NOT NULL,
    ask_open TEXT NOT NULL,
    ask_high TEXT NOT NULL,
    ask_low TEXT NOT NULL,
    ask_close TEXT NOT NULL,
    mid_open TEXT NOT NULL,
    mid_high TEXT NOT NULL,
    mid_low TEXT NOT NULL,
    mid_close TEXT NOT NULL,
    samples INTEGER NOT NULL CHECK (samples >= 1)
);
CREATE UNIQUE INDEX fx_rate_bars_key
    ON fx_rate_bars (COALESCE(workspace_id, ''), pair, bucket, start);
CREATE INDEX fx_rate_bars_prune_idx ON fx_rate_bars (bucket, start);

-- The sandbox market's walk (handlers/rates_market.c): per pair, the seed it was started
-- with, the last tick recorded and its mid as integer units of the pair's tick size, so that
-- the next tick follows from it (tick n is a function of seed, pair and n alone).
CREATE TABLE fx_market_walks (
    pair TEXT PRIMARY KEY,
    seed INTEGER NOT NULL,
    tick INTEGER NOT NULL,
    mid_units INTEGER NOT NULL
);
