/* TEMPORARY (fx-rates branch): rates_alerts_on_rate is rates_alerts.c's (the alerts helper's
 * branch). Until that is merged, rates_record_live links against this definition, which
 * evaluates nothing. DELETE THIS FILE when rates_alerts.c is merged. */
#include "handlers/rates.h"

int rates_alerts_on_rate(struct req *r, const char *workspace_id, const struct rates_tick *t)
{
    (void)r;
    (void)workspace_id;
    (void)t;
    return 0;
}
