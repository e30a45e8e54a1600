-- Whether a client wrote a workspace's ledger settings (PUT /ledger/settings): until then the
-- settings are the defaults the server extends when a payment settles in a currency or from an
-- originating account it has no account for (handlers/ledger_settings.c); once a client wrote
-- them they rule as written. Rows from before were written by clients (no payment wrote any).
ALTER TABLE ledger_settings ADD COLUMN client_written INTEGER NOT NULL DEFAULT 1;
