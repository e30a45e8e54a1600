/* Exact decimal strings (runtime/decimal.h). */
#include "runtime/decimal.h"

#include <stdio.h>

static const int64_t pow10_table[DECIMAL_MAX_DIGITS + 1] = {
    1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
    10000000000, 100000000000, 1000000000000, 10000000000000, 100000000000000,
    1000000000000000, 10000000000000000, 100000000000000000, 1000000000000000000};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int decimal_parse(const char *s, int max_precision, int max_scale, bool allow_negative,
                  struct decimal *out)
{
    bool negative = false;
    int64_t units = 0;
    int scale = 0, significant = 0;

    if (!s || max_precision < 1 || max_precision > DECIMAL_MAX_DIGITS || max_scale < 0 ||
        max_scale > DECIMAL_MAX_DIGITS)
        return -1;
    if (*s == '-') {
        if (!allow_negative)
            return -1;
        negative = true;
        s++;
    }
    if (!is_digit(*s) || (s[0] == '0' && is_digit(s[1])))
        return -1; /* no digit first, or a leading zero */
    for (bool fraction = false;; s++) {
        if (*s == '.' && !fraction) {
            if (!is_digit(s[1]))
                return -1; /* "1." */
            fraction = true;
            continue;
        }
        if (!is_digit(*s))
            break;
        if (fraction && ++scale > max_scale)
            return -1;
        if (significant > 0 || *s != '0') {
            if (++significant > max_precision)
                return -1;
            units = units * 10 + (*s - '0');
        }
    }
    if (*s != '\0')
        return -1;
    while (scale > 0 && units % 10 == 0) {
        units /= 10;
        scale--;
    }
    if (units == 0)
        scale = 0;
    out->units = negative ? -units : units;
    out->scale = scale;
    return 0;
}

int decimal_cmp(struct decimal a, struct decimal b)
{
    /* The integer parts first (truncated toward zero: each covers a disjoint interval), then
     * the fractions brought to the same scale, which stays below 10^18. */
    int64_t ia = a.units / pow10_table[a.scale], ib = b.units / pow10_table[b.scale];
    if (ia != ib)
        return ia < ib ? -1 : 1;
    int scale = a.scale > b.scale ? a.scale : b.scale;
    int64_t fa = (a.units % pow10_table[a.scale]) * pow10_table[scale - a.scale];
    int64_t fb = (b.units % pow10_table[b.scale]) * pow10_table[scale - b.scale];
    return fa < fb ? -1 : fa > fb ? 1 : 0;
}

char *decimal_format(struct decimal d, char *buf, size_t n)
{
    uint64_t mag = d.units < 0 ? (uint64_t)0 - (uint64_t)d.units : (uint64_t)d.units;
    uint64_t p = (uint64_t)pow10_table[d.scale];

    if (d.scale == 0)
        snprintf(buf, n, "%s%llu", d.units < 0 ? "-" : "", (unsigned long long)mag);
    else
        snprintf(buf, n, "%s%llu.%0*llu", d.units < 0 ? "-" : "", (unsigned long long)(mag / p),
                 d.scale, (unsigned long long)(mag % p));
    return buf;
}
