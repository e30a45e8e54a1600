/* Exact decimal strings (runtime/decimal.h). */
#include "runtime/decimal.h"

#include <stdio.h>
#include <string.h>

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

/* ---- Arithmetic ----------------------------------------------------------------------------
 * Magnitudes in unsigned 128-bit integers (a GCC/Clang extension, hence __extension__: ISO C
 * has no 128-bit type) with the sign kept apart, so no intermediate can wrap: every product
 * and scaling is checked against the bound first. */

__extension__ typedef unsigned __int128 u128;

/* 10^38 < 2^128: the largest power of ten a u128 holds. */
#define POW10_U128_MAX 38

static u128 pow10_u128(int e)
{
    u128 p = 1;
    while (e-- > 0)
        p *= 10;
    return p;
}

static u128 magnitude(int64_t v)
{
    return v < 0 ? (u128)((uint64_t)0 - (uint64_t)v) : (u128)(uint64_t)v;
}

/* m * 10^e without overflow: 0 / -1. */
static int scale_up(u128 m, int e, u128 *out)
{
    if (e > POW10_U128_MAX)
        return m == 0 ? (*out = 0, 0) : -1;
    u128 p = pow10_u128(e);
    if (m != 0 && m > ~(u128)0 / p)
        return -1;
    *out = m * p;
    return 0;
}

/* n / d (d > 0) of a value whose sign is negative, rounded by mode: the magnitude of the
 * rounded signed quotient. Floor and ceiling swap for a negative value. */
static u128 divide_rounded(u128 n, u128 d, bool negative, enum decimal_rounding mode)
{
    u128 q = n / d, rem = n % d;
    if (rem == 0)
        return q;
    switch (mode) {
    case DECIMAL_ROUND_DOWN:
        return negative ? q + 1 : q;
    case DECIMAL_ROUND_UP:
        return negative ? q : q + 1;
    case DECIMAL_ROUND_HALF_EVEN:
    default: {
        u128 twice = rem * 2; /* rem < d, and d <= 10^38 leaves room to double */
        if (twice > d || (twice == d && (q & 1) == 1))
            return q + 1;
        return q;
    }
    }
}

/* The signed decimal (m, negative) / 10^scale, normalised: 0 / -1 past 18 digits. */
static int make_decimal(u128 m, bool negative, int scale, struct decimal *out)
{
    while (scale > 0 && m % 10 == 0) {
        m /= 10;
        scale--;
    }
    if (m > (u128)pow10_table[DECIMAL_MAX_DIGITS] - 1)
        return -1;
    out->units = m == 0 ? 0 : negative ? -(int64_t)m : (int64_t)m;
    out->scale = m == 0 ? 0 : scale;
    return 0;
}

/* (value of m with sign negative) / 10^from_scale, rounded to to_scale decimals: the
 * magnitude at to_scale. */
static int rescale(u128 m, bool negative, int from_scale, int to_scale,
                   enum decimal_rounding mode, u128 *out)
{
    if (to_scale >= from_scale)
        return scale_up(m, to_scale - from_scale, out);
    int e = from_scale - to_scale;
    if (e > POW10_U128_MAX)
        return -1; /* scales here stay at or below 36 */
    *out = divide_rounded(m, pow10_u128(e), negative, mode);
    return 0;
}

static int add_signed(struct decimal a, struct decimal b, bool subtract, struct decimal *out)
{
    int scale = a.scale > b.scale ? a.scale : b.scale;
    u128 ma, mb;
    if (scale_up(magnitude(a.units), scale - a.scale, &ma) != 0 ||
        scale_up(magnitude(b.units), scale - b.scale, &mb) != 0)
        return -1;
    bool na = a.units < 0, nb = (b.units < 0) != subtract;
    if (na == nb) /* both below 10^36: the sum fits */
        return make_decimal(ma + mb, na, scale, out);
    if (ma >= mb)
        return make_decimal(ma - mb, na, scale, out);
    return make_decimal(mb - ma, nb, scale, out);
}

int decimal_add(struct decimal a, struct decimal b, struct decimal *out)
{
    return add_signed(a, b, false, out);
}

int decimal_sub(struct decimal a, struct decimal b, struct decimal *out)
{
    return add_signed(a, b, true, out);
}

int decimal_mul(struct decimal a, struct decimal b, int scale, enum decimal_rounding mode,
                struct decimal *out)
{
    if (scale < 0 || scale > DECIMAL_MAX_DIGITS)
        return -1;
    /* both magnitudes below 10^18: the product below 10^36, exact in a u128 */
    u128 m = magnitude(a.units) * magnitude(b.units), r;
    bool negative = (a.units < 0) != (b.units < 0);
    if (rescale(m, negative, a.scale + b.scale, scale, mode, &r) != 0)
        return -1;
    return make_decimal(r, negative, scale, out);
}

int decimal_div(struct decimal a, struct decimal b, int scale, enum decimal_rounding mode,
                struct decimal *out)
{
    if (scale < 0 || scale > DECIMAL_MAX_DIGITS || b.units == 0)
        return -1;
    /* a / b at scale s: |a| * 10^(s + b.scale - a.scale) / |b|, rounded once */
    bool negative = (a.units < 0) != (b.units < 0);
    u128 n = magnitude(a.units), d = magnitude(b.units);
    int e = scale + b.scale - a.scale;
    if (e >= 0) {
        if (scale_up(n, e, &n) != 0)
            return -1;
    } else {
        if (scale_up(d, -e, &d) != 0)
            return -1;
    }
    return make_decimal(divide_rounded(n, d, negative, mode), negative, scale, out);
}

/* amount (exponent from_exp) and a factor of (num / 10^num_scale) or its inverse, in minor
 * units of to_exp: the shared body of decimal_amount_mul and decimal_amount_div. */
static int amount_through(int64_t amount, int from_exp, struct decimal rate, int to_exp,
                          bool divide, enum decimal_rounding mode, int64_t *out)
{
    if (from_exp < 0 || from_exp > 4 || to_exp < 0 || to_exp > 4 || (divide && rate.units <= 0))
        return -1;
    bool negative = (amount < 0) != (rate.units < 0);
    u128 a = magnitude(amount), k = magnitude(rate.units), n, d;
    /* value in to-minor units: amount / 10^from * rate * 10^to, or amount / 10^from / rate
     * * 10^to, as the fraction n / d */
    if (!divide) {
        n = a * k; /* < 2^63 * 10^18 < 10^38 */
        int e = to_exp - from_exp - rate.scale;
        d = 1;
        if (e >= 0 ? scale_up(n, e, &n) != 0 : scale_up(1, -e, &d) != 0)
            return -1;
    } else {
        int e = to_exp - from_exp + rate.scale;
        n = a;
        d = k;
        if (e >= 0 ? scale_up(n, e, &n) != 0 : scale_up(d, -e, &d) != 0)
            return -1;
    }
    u128 q = divide_rounded(n, d, negative, mode);
    if (q > (u128)INT64_MAX)
        return -1;
    *out = negative ? -(int64_t)q : (int64_t)q;
    return 0;
}

int decimal_amount_mul(int64_t amount, int from_exp, struct decimal rate, int to_exp,
                       enum decimal_rounding mode, int64_t *out)
{
    return amount_through(amount, from_exp, rate, to_exp, false, mode, out);
}

int decimal_amount_div(int64_t amount, int from_exp, struct decimal rate, int to_exp,
                       enum decimal_rounding mode, int64_t *out)
{
    return amount_through(amount, from_exp, rate, to_exp, true, mode, out);
}

char *decimal_format_fixed(struct decimal d, int scale, char *buf, size_t n)
{
    if (scale < d.scale || scale > DECIMAL_MAX_DIGITS)
        return decimal_format(d, buf, n); /* cannot widen: its own form */
    decimal_format(d, buf, n);
    size_t len = strlen(buf);
    if (scale > 0 && d.scale == 0 && len + 1 < n)
        buf[len++] = '.';
    for (int i = d.scale; i < scale && len + 1 < n; i++)
        buf[len++] = '0';
    buf[len] = '\0';
    return buf;
}
