-- Trade flows (handlers/payments_funding.c): the conversion that funds a payment (NULL: none),
-- found by conversion when the conversions API cancels one (payments_hold_funded_by) and when
-- the amounts a conversion already funds are summed; and why a payment is on hold (NULL: it is
-- not), written beside its status by the same state saves.
ALTER TABLE payments ADD COLUMN funding_conversion_id TEXT;
ALTER TABLE payments ADD COLUMN hold_reason TEXT;
CREATE INDEX payments_funding_idx ON payments (workspace_id, funding_conversion_id)
    WHERE funding_conversion_id IS NOT NULL;
