/* TEMPORARY (fx-rates branch, until main's decimal arithmetic is merged): the three
 * runtime/decimal.h functions the rates files use, so that the branch links and its tests run.
 * Deleted when `git merge main` brings runtime/decimal.c's own. */
#include <stdio.h>
#include <string.h>

#include "runtime/decimal.h"

static __int128 pow10i(int n)
{
    __int128 p = 1;
    while (n-- > 0)
        p *= 10;
    return p;
}

static int norm(__int128 u, int scale, struct decimal *out)
{
    while (scale > 0 && u % 10 == 0) {
        u /= 10;
        scale--;
    }
    if (u > (__int128)999999999999999999 || u < -(__int128)999999999999999999)
        return -1;
    out->units = (int64_t)u;
    out->scale = u == 0 ? 0 : scale;
    return 0;
}

int decimal_add(struct decimal a, struct decimal b, struct decimal *out)
{
    int s = a.scale > b.scale ? a.scale : b.scale;
    return norm((__int128)a.units * pow10i(s - a.scale) + (__int128)b.units * pow10i(s - b.scale),
                s, out);
}

int decimal_div(struct decimal a, struct decimal b, int scale, enum decimal_rounding mode,
                struct decimal *out)
{
    if (b.units == 0)
        return -1;
    /* a/b * 10^scale = a.units * 10^(scale + b.scale - a.scale) / b.units */
    int e = scale + b.scale - a.scale;
    __int128 num = (__int128)a.units, den = (__int128)b.units;
    if (e >= 0)
        num *= pow10i(e);
    else
        den *= pow10i(-e);
    if (den < 0) {
        num = -num;
        den = -den;
    }
    __int128 q = num / den, rem = num % den;
    if (rem != 0) {
        bool neg = rem < 0;
        __int128 r2 = (neg ? -rem : rem) * 2;
        if (mode == DECIMAL_ROUND_DOWN && neg)
            q -= 1;
        else if (mode == DECIMAL_ROUND_UP && !neg)
            q += 1;
        else if (mode == DECIMAL_ROUND_HALF_EVEN &&
                 (r2 > den || (r2 == den && (q % 2 != 0))))
            q += neg ? -1 : 1;
    }
    return norm(q, scale, out);
}

char *decimal_format_fixed(struct decimal d, int scale, char *buf, size_t n)
{
    __int128 u = (__int128)d.units * pow10i(scale - d.scale);
    bool neg = u < 0;
    if (neg)
        u = -u;
    __int128 p = pow10i(scale);
    long long ip = (long long)(u / p), fp = (long long)(u % p);
    if (scale > 0)
        snprintf(buf, n, "%s%lld.%0*lld", neg ? "-" : "", ip, scale, fp);
    else
        snprintf(buf, n, "%s%lld", neg ? "-" : "", ip);
    return buf;
}
