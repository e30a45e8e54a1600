/* A settlement rail: the bank or network connection approved payments are paid through. The
 * settlement worker (payments_settlement.c) hands a payment over once, then asks for news
 * whenever the rail said to ask again; all it remembers between calls is the payment's status,
 * the rail's reference and the time of the next question, committed with each step.
 *
 * A crash can fall between a rail call and the commit of its result, so the worker may ask the
 * same question twice: submit() must be idempotent on the payment id (a real rail passes it as
 * its idempotency key / end-to-end id), and progress() must answer from the rail's state, not
 * from how often it was asked. That keeps every payment paid once and every event written
 * once. */
#ifndef HANDLERS_PAYMENTS_RAIL_H
#define HANDLERS_PAYMENTS_RAIL_H

#include <stdint.h>

/* Where the rail says a payment is. */
enum rail_state {
    RAIL_PROCESSING = 1, /* accepted, being executed */
    RAIL_SENT,           /* left the bank for the beneficiary's bank */
    RAIL_COMPLETED,      /* settled */
    RAIL_FAILED,         /* rejected before it was sent */
    RAIL_RETURNED        /* came back after settlement */
};

struct rail_order {
    const char *payment_id;
    const char *workspace_id;
    int64_t amount; /* minor units */
    const char *currency;
    const char *type;       /* the payment's scheme: sepa, wire, ... */
    const char *remittance; /* NULL when none */
    const char *reference;  /* the rail's reference from submit(), NULL before */
};

struct rail_report {
    enum rail_state state;
    char reference[64]; /* submit() fills it */
    char reason_code[5]; /* ISO 20022 reason code when failed or returned */
    char reason[160];
    int64_t ask_again_at_ms; /* when to call progress() next; 0: never (a final answer) */
};

struct rail {
    const char *name;
    /* Hands o to the rail. 0, or -1 when the rail cannot be reached (tried again later). */
    int (*submit)(const struct rail_order *o, int64_t now_ms, struct rail_report *out);
    /* Where o is now, given the state the worker last recorded. 0 / -1 as submit. */
    int (*progress)(const struct rail_order *o, enum rail_state known, int64_t now_ms,
                    struct rail_report *out);
};

/* The embedded sandbox rail: each step takes step_ms; test values in the remittance text make
 * it fail or return a payment (see the Payment schema in openapi/payments.yaml). */
const struct rail *rail_sandbox(int64_t step_ms);

#endif
