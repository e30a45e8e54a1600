-- When the sandbox market last ticked each pair (handlers/rates_market.c), in Unix ms by the
-- clock of the instance that ticked it: several instances on one PostgreSQL database each run
-- the market's job, and a round skips a pair ticked less than nine tenths of an interval ago,
-- so that the pair ticks once per interval whatever the number of instances. 0: never (walks
-- from before were ticked at an unknown time; the next round ticks them).
ALTER TABLE fx_market_walks ADD COLUMN ticked_ms BIGINT NOT NULL DEFAULT 0;
