-- What a payment list shows beside each row without a query per row (handlers/payments.c,
-- page_flags): decided_round, the latest approval round a decision was recorded in (NULL:
-- none; the payment has decisions to show when it equals approval_round), and has_makers, 1
-- once a person other than the creator changed it (payment_makers). Written beside the
-- decision or the maker in the same transaction (pay_note_decision, pay_note_batch_decisions,
-- pay_note_maker); decisions
-- and makers are never deleted, so neither flag is ever cleared. Rows from before are filled
-- here from the tables the flags summarise.
ALTER TABLE payments ADD COLUMN decided_round BIGINT;
ALTER TABLE payments ADD COLUMN has_makers INTEGER NOT NULL DEFAULT 0;
UPDATE payments SET
    decided_round = (SELECT MAX(a.round) FROM payment_approvals a WHERE a.payment_id = payments.id),
    has_makers = CASE WHEN EXISTS (SELECT 1 FROM payment_makers m WHERE m.payment_id = payments.id)
                      THEN 1 ELSE 0 END;
