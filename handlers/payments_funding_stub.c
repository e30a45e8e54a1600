/* TEMPORARY (issue 23): payments_hold_funded_by is implemented on branch fx-wsp
 * (handlers/payments_funding.c); this stub lets the conversions branch link until then. The
 * lead deletes this file at merge. */
#include "handlers/payments_funding.h"

int payments_hold_funded_by(struct req *r, const char *conversion_id)
{
    (void)r;
    (void)conversion_id;
    return 0;
}
