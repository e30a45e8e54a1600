/* TEMPORARY (issue 23): conversions_funding is implemented on branch fx-conv
 * (handlers/conversions.c); until it is merged, no conversion exists, so every
 * funding_conversion_id answers 422 conversion_not_found. Delete this file at the merge. */
#include "handlers/conversions.h"

int conversions_funding(struct req *r, const char *id, struct conversion_funding *out)
{
    (void)r;
    (void)id;
    (void)out;
    return 0;
}
