/* TEMPORARY (fx-rates branch): rates_forward is rates_curves.c's (the curves helper's branch).
 * Until that is merged, listRates and getRate link against this definition, which prices
 * nothing (no active curve). DELETE THIS FILE when rates_curves.c is merged. */
#include "handlers/rates.h"

int rates_forward(struct req *r, const char *base, const char *quote, const char *value_date,
                  struct rates_forward *out, const char **reason)
{
    (void)r;
    (void)base;
    (void)quote;
    (void)value_date;
    (void)out;
    *reason = "no_forward_curve";
    return 0;
}
