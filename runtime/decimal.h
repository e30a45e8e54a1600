/* Exact decimal strings (`x-format: decimal` in the spec: rates, signed ratios): parsed into an
 * integer and a scale, compared exactly, printed back in a canonical form. Never a double. */
#ifndef RUNTIME_DECIMAL_H
#define RUNTIME_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most significant digits a decimal may have: 10^18 - 1 still fits an int64_t. */
#define DECIMAL_MAX_DIGITS 18
/* Bytes decimal_format() needs at most: sign, 18 digits, a point, a leading "0." and NUL. */
#define DECIMAL_TEXT_MAX 24

/* value = units / 10^scale. Normalised: no trailing zero in the fraction (scale is as small as
 * the value allows), zero is {0, 0}. */
struct decimal {
    int64_t units;
    int scale; /* 0 … DECIMAL_MAX_DIGITS */
};

/* Parses s, which must be `-?(0|[1-9][0-9]*)([.][0-9]+)?` exactly: no exponent, no `+`, no
 * spaces, no leading zeros, no bare point; `-` only when allow_negative. At most max_scale
 * digits after the point (as written, trailing zeros included) and at most max_precision
 * significant digits (from the first non-zero digit to the last digit written); max_precision
 * and max_scale at most DECIMAL_MAX_DIGITS. 0 and the normalised value in *out ("-0.0" is
 * zero), or -1. */
int decimal_parse(const char *s, int max_precision, int max_scale, bool allow_negative,
                  struct decimal *out);
/* -1, 0 or 1 as a < b, a == b, a > b; exact for any two normalised values, no overflow. */
int decimal_cmp(struct decimal a, struct decimal b);
/* Canonical text ("1.5" for "1.50", "0" for "-0.00", "-0.25"), NUL-terminated, into buf of n
 * bytes (DECIMAL_TEXT_MAX is always enough); returns buf. */
char *decimal_format(struct decimal d, char *buf, size_t n);

/* ---- Arithmetic: exact, rounded once, to a stated scale ------------------------------------
 * Every operation works on the exact value (128-bit intermediates) and rounds only the final
 * result, by the caller's rule; a result that does not fit (more than DECIMAL_MAX_DIGITS
 * significant digits, or an amount past int64_t) is -1, never a wrapped value. */

enum decimal_rounding {
    DECIMAL_ROUND_DOWN,      /* toward negative infinity (floor) */
    DECIMAL_ROUND_UP,        /* toward positive infinity (ceiling) */
    DECIMAL_ROUND_HALF_EVEN, /* to nearest, a tie to the even digit (banker's rounding) */
};

/* a + b and a - b, exact: 0 and *out (normalised), or -1. */
int decimal_add(struct decimal a, struct decimal b, struct decimal *out);
int decimal_sub(struct decimal a, struct decimal b, struct decimal *out);
/* a * b and a / b (b not zero) rounded by mode to at most scale decimals (0 ... 18): 0 and
 * *out (normalised), or -1. */
int decimal_mul(struct decimal a, struct decimal b, int scale, enum decimal_rounding mode,
                struct decimal *out);
int decimal_div(struct decimal a, struct decimal b, int scale, enum decimal_rounding mode,
                struct decimal *out);
/* Money through a rate: amount (minor units of a currency of minor-unit exponent from_exp,
 * 0 ... 4) times rate (decimal_amount_mul) or divided by rate (decimal_amount_div, rate > 0),
 * as minor units of a currency of exponent to_exp, rounded by mode: 0 and *out, or -1. So
 * 100000000 EUR cents (exponent 2) at 1.0837078750 to USD (2) rounded down is 108370787. */
int decimal_amount_mul(int64_t amount, int from_exp, struct decimal rate, int to_exp,
                       enum decimal_rounding mode, int64_t *out);
int decimal_amount_div(int64_t amount, int from_exp, struct decimal rate, int to_exp,
                       enum decimal_rounding mode, int64_t *out);
/* d as text with exactly scale decimals (trailing zeros kept: "1.0842500000" for scale 10),
 * d's own scale at most scale, into buf of n bytes (DECIMAL_TEXT_MAX is enough); returns buf. */
char *decimal_format_fixed(struct decimal d, int scale, char *buf, size_t n);

#endif
