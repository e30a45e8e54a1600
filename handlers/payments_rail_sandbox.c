/* The sandbox rail, the way bank sandboxes behave: every payment is accepted, is sent after one
 * step and settles after another, unless its remittance text carries a test value. It keeps no
 * state of its own: every answer follows from the order and the state the worker recorded, so
 * asking twice gives the same answer (payments_rail.h). */
#include "handlers/payments_rail.h"

#include <stdio.h>
#include <string.h>

static int64_t step;

/* The ISO 20022 reason codes the sandbox knows, with their meaning. */
static const struct {
    const char *code, *text;
} reasons[] = {
    {"AC01", "incorrect account number"}, {"AC04", "closed account number"},
    {"AC06", "blocked account"},          {"AG01", "transaction forbidden"},
    {"AM04", "insufficient funds"},       {"MD07", "end customer deceased"},
};

/* 1 when o's remittance text carries test value (e.g. "SANDBOX-FAIL"), with the reason named
 * after it ("SANDBOX-FAIL-AM04") or AC04 in out; else 0. */
static int test_value(const struct rail_order *o, const char *value, struct rail_report *out)
{
    const char *at = o->remittance ? strstr(o->remittance, value) : NULL;
    if (!at)
        return 0;
    size_t i = 1; /* AC04 */
    at += strlen(value);
    for (size_t k = 0; *at == '-' && k < sizeof reasons / sizeof reasons[0]; k++)
        if (strncmp(at + 1, reasons[k].code, 4) == 0)
            i = k;
    snprintf(out->reason_code, sizeof out->reason_code, "%s", reasons[i].code);
    snprintf(out->reason, sizeof out->reason, "%s: %s (sandbox test value %s)", reasons[i].code,
             reasons[i].text, value);
    return 1;
}

static int submit(const struct rail_order *o, int64_t now_ms, struct rail_report *out)
{
    memset(out, 0, sizeof *out);
    out->state = RAIL_PROCESSING;
    /* Derived from the payment id, so a repeated submit names the same order. */
    snprintf(out->reference, sizeof out->reference, "SBX-%s", o->payment_id + 4);
    out->ask_again_at_ms = now_ms + step;
    return 0;
}

static int progress(const struct rail_order *o, enum rail_state known, int64_t now_ms,
                    struct rail_report *out)
{
    memset(out, 0, sizeof *out);
    switch (known) {
    case RAIL_PROCESSING:
        if (test_value(o, "SANDBOX-FAIL", out)) {
            out->state = RAIL_FAILED;
            return 0;
        }
        out->state = RAIL_SENT;
        out->ask_again_at_ms = now_ms + step;
        return 0;
    case RAIL_SENT:
        out->state = RAIL_COMPLETED;
        struct rail_report ret;
        if (test_value(o, "SANDBOX-RETURN", &ret))
            out->ask_again_at_ms = now_ms + step;
        return 0;
    case RAIL_COMPLETED:
        if (test_value(o, "SANDBOX-RETURN", out)) {
            out->state = RAIL_RETURNED;
            return 0;
        }
        out->state = RAIL_COMPLETED;
        return 0;
    case RAIL_FAILED:
    case RAIL_RETURNED:
        out->state = known;
        return 0;
    }
    return -1;
}

const struct rail *rail_sandbox(int64_t step_ms)
{
    static const struct rail sandbox = {"sandbox", submit, progress};
    step = step_ms;
    return &sandbox;
}
