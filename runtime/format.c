/* String formats the spec can name (`format:`), checked exactly, and the ISO reference data
 * behind them: ISO 4217 currencies with minor units, ISO 3166-1 countries, IBAN lengths. */
#include "runtime/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/clock.h"

/* ---- reference data ---------------------------------------------------------------------- */

struct currency {
    char code[4];
    int exponent;
};

/* ISO 4217 List One as in force in November 2026, every code that has a minor unit, sorted.
 * Left out on purpose: codes without a minor unit (XAU XAG XPD XPT XBA..XBD XDR XSU XUA XTS
 * XXX), which cannot carry an integer amount, and withdrawn codes: HRK (euro 2023), SLL
 * (replaced by SLE), ZWL (replaced by ZWG, 2024), ANG (replaced by XCG, 2025), BGN (euro
 * 2026). Review this table whenever an ISO 4217 amendment lands. */
static const struct currency currencies[] = {
    { "AED", 2 }, { "AFN", 2 }, { "ALL", 2 }, { "AMD", 2 }, { "AOA", 2 }, { "ARS", 2 },
    { "AUD", 2 }, { "AWG", 2 }, { "AZN", 2 }, { "BAM", 2 }, { "BBD", 2 }, { "BDT", 2 },
    { "BHD", 3 }, { "BIF", 0 }, { "BMD", 2 }, { "BND", 2 }, { "BOB", 2 }, { "BOV", 2 },
    { "BRL", 2 }, { "BSD", 2 }, { "BTN", 2 }, { "BWP", 2 }, { "BYN", 2 }, { "BZD", 2 },
    { "CAD", 2 }, { "CDF", 2 }, { "CHE", 2 }, { "CHF", 2 }, { "CHW", 2 }, { "CLF", 4 },
    { "CLP", 0 }, { "CNY", 2 }, { "COP", 2 }, { "COU", 2 }, { "CRC", 2 }, { "CUC", 2 },
    { "CUP", 2 }, { "CVE", 2 }, { "CZK", 2 }, { "DJF", 0 }, { "DKK", 2 }, { "DOP", 2 },
    { "DZD", 2 }, { "EGP", 2 }, { "ERN", 2 }, { "ETB", 2 }, { "EUR", 2 }, { "FJD", 2 },
    { "FKP", 2 }, { "GBP", 2 }, { "GEL", 2 }, { "GHS", 2 }, { "GIP", 2 }, { "GMD", 2 },
    { "GNF", 0 }, { "GTQ", 2 }, { "GYD", 2 }, { "HKD", 2 }, { "HNL", 2 }, { "HTG", 2 },
    { "HUF", 2 }, { "IDR", 2 }, { "ILS", 2 }, { "INR", 2 }, { "IQD", 3 }, { "IRR", 2 },
    { "ISK", 0 }, { "JMD", 2 }, { "JOD", 3 }, { "JPY", 0 }, { "KES", 2 }, { "KGS", 2 },
    { "KHR", 2 }, { "KMF", 0 }, { "KPW", 2 }, { "KRW", 0 }, { "KWD", 3 }, { "KYD", 2 },
    { "KZT", 2 }, { "LAK", 2 }, { "LBP", 2 }, { "LKR", 2 }, { "LRD", 2 }, { "LSL", 2 },
    { "LYD", 3 }, { "MAD", 2 }, { "MDL", 2 }, { "MGA", 2 }, { "MKD", 2 }, { "MMK", 2 },
    { "MNT", 2 }, { "MOP", 2 }, { "MRU", 2 }, { "MUR", 2 }, { "MVR", 2 }, { "MWK", 2 },
    { "MXN", 2 }, { "MXV", 2 }, { "MYR", 2 }, { "MZN", 2 }, { "NAD", 2 }, { "NGN", 2 },
    { "NIO", 2 }, { "NOK", 2 }, { "NPR", 2 }, { "NZD", 2 }, { "OMR", 3 }, { "PAB", 2 },
    { "PEN", 2 }, { "PGK", 2 }, { "PHP", 2 }, { "PKR", 2 }, { "PLN", 2 }, { "PYG", 0 },
    { "QAR", 2 }, { "RON", 2 }, { "RSD", 2 }, { "RUB", 2 }, { "RWF", 0 }, { "SAR", 2 },
    { "SBD", 2 }, { "SCR", 2 }, { "SDG", 2 }, { "SEK", 2 }, { "SGD", 2 }, { "SHP", 2 },
    { "SLE", 2 }, { "SOS", 2 }, { "SRD", 2 }, { "SSP", 2 }, { "STN", 2 }, { "SVC", 2 },
    { "SYP", 2 }, { "SZL", 2 }, { "THB", 2 }, { "TJS", 2 }, { "TMT", 2 }, { "TND", 3 },
    { "TOP", 2 }, { "TRY", 2 }, { "TTD", 2 }, { "TWD", 2 }, { "TZS", 2 }, { "UAH", 2 },
    { "UGX", 0 }, { "USD", 2 }, { "USN", 2 }, { "UYI", 0 }, { "UYU", 2 }, { "UYW", 4 },
    { "UZS", 2 }, { "VED", 2 }, { "VES", 2 }, { "VND", 0 }, { "VUV", 0 }, { "WST", 2 },
    { "XAF", 0 }, { "XCD", 2 }, { "XCG", 2 }, { "XOF", 0 }, { "XPF", 0 }, { "YER", 2 },
    { "ZAR", 2 }, { "ZMW", 2 }, { "ZWG", 2 },
};

/* ISO 3166-1 alpha-2, the 249 officially assigned codes, sorted. User-assigned codes such as
 * XK (Kosovo) are not countries here; IBAN and BIC accept XK separately. */
static const char countries[][3] = {
    "AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX",
    "AZ", "BA", "BB", "BD", "BE", "BF", "BG", "BH", "BI", "BJ", "BL", "BM", "BN", "BO", "BQ",
    "BR", "BS", "BT", "BV", "BW", "BY", "BZ", "CA", "CC", "CD", "CF", "CG", "CH", "CI", "CK",
    "CL", "CM", "CN", "CO", "CR", "CU", "CV", "CW", "CX", "CY", "CZ", "DE", "DJ", "DK", "DM",
    "DO", "DZ", "EC", "EE", "EG", "EH", "ER", "ES", "ET", "FI", "FJ", "FK", "FM", "FO", "FR",
    "GA", "GB", "GD", "GE", "GF", "GG", "GH", "GI", "GL", "GM", "GN", "GP", "GQ", "GR", "GS",
    "GT", "GU", "GW", "GY", "HK", "HM", "HN", "HR", "HT", "HU", "ID", "IE", "IL", "IM", "IN",
    "IO", "IQ", "IR", "IS", "IT", "JE", "JM", "JO", "JP", "KE", "KG", "KH", "KI", "KM", "KN",
    "KP", "KR", "KW", "KY", "KZ", "LA", "LB", "LC", "LI", "LK", "LR", "LS", "LT", "LU", "LV",
    "LY", "MA", "MC", "MD", "ME", "MF", "MG", "MH", "MK", "ML", "MM", "MN", "MO", "MP", "MQ",
    "MR", "MS", "MT", "MU", "MV", "MW", "MX", "MY", "MZ", "NA", "NC", "NE", "NF", "NG", "NI",
    "NL", "NO", "NP", "NR", "NU", "NZ", "OM", "PA", "PE", "PF", "PG", "PH", "PK", "PL", "PM",
    "PN", "PR", "PS", "PT", "PW", "PY", "QA", "RE", "RO", "RS", "RU", "RW", "SA", "SB", "SC",
    "SD", "SE", "SG", "SH", "SI", "SJ", "SK", "SL", "SM", "SN", "SO", "SR", "SS", "ST", "SV",
    "SX", "SY", "SZ", "TC", "TD", "TF", "TG", "TH", "TJ", "TK", "TL", "TM", "TN", "TO", "TR",
    "TT", "TV", "TW", "TZ", "UA", "UG", "UM", "US", "UY", "UZ", "VA", "VC", "VE", "VG", "VI",
    "VN", "VU", "WF", "WS", "YE", "YT", "ZA", "ZM", "ZW",
};

struct iban_country {
    char code[3];
    int length;
};

/* SWIFT IBAN Registry: every country with a registered IBAN and its total length, sorted. */
static const struct iban_country iban_countries[] = {
    { "AD", 24 }, { "AE", 23 }, { "AL", 28 }, { "AT", 20 }, { "AZ", 28 }, { "BA", 20 },
    { "BE", 16 }, { "BG", 22 }, { "BH", 22 }, { "BI", 27 }, { "BR", 29 }, { "BY", 28 },
    { "CH", 21 }, { "CR", 22 }, { "CY", 28 }, { "CZ", 24 }, { "DE", 22 }, { "DJ", 27 },
    { "DK", 18 }, { "DO", 28 }, { "EE", 20 }, { "EG", 29 }, { "ES", 24 }, { "FI", 18 },
    { "FK", 18 }, { "FO", 18 }, { "FR", 27 }, { "GB", 22 }, { "GE", 22 }, { "GI", 23 },
    { "GL", 18 }, { "GR", 27 }, { "GT", 28 }, { "HN", 28 }, { "HR", 21 }, { "HU", 28 },
    { "IE", 22 }, { "IL", 23 }, { "IQ", 23 }, { "IS", 26 }, { "IT", 27 }, { "JO", 30 },
    { "KW", 30 }, { "KZ", 20 }, { "LB", 28 }, { "LC", 32 }, { "LI", 21 }, { "LT", 20 },
    { "LU", 20 }, { "LV", 21 }, { "LY", 25 }, { "MC", 27 }, { "MD", 24 }, { "ME", 22 },
    { "MK", 19 }, { "MN", 20 }, { "MR", 27 }, { "MT", 31 }, { "MU", 30 }, { "NI", 28 },
    { "NL", 18 }, { "NO", 15 }, { "OM", 23 }, { "PK", 24 }, { "PL", 28 }, { "PS", 29 },
    { "PT", 25 }, { "QA", 29 }, { "RO", 24 }, { "RS", 22 }, { "RU", 33 }, { "SA", 24 },
    { "SC", 31 }, { "SD", 18 }, { "SE", 24 }, { "SI", 19 }, { "SK", 24 }, { "SM", 27 },
    { "SO", 23 }, { "ST", 25 }, { "SV", 28 }, { "TL", 23 }, { "TN", 24 }, { "TR", 26 },
    { "UA", 29 }, { "VA", 22 }, { "VG", 24 }, { "XK", 20 }, { "YE", 30 },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int cmp_code(const void *key, const void *elem)
{
    /* Every table row starts with its NUL-terminated code. */
    return strcmp(key, elem);
}

static bool is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return is_upper(c) || (c >= 'a' && c <= 'z');
}

static bool is_hex(char c)
{
    return format_hex_digit(c) >= 0;
}

/* True when s is exactly n upper-case letters. */
static bool upper_code(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_upper(s[i]))
            return false;
    return s[n] == '\0';
}

static const struct currency *currency_find(const char *code)
{
    if (!code || !upper_code(code, 3))
        return NULL;
    return bsearch(code, currencies, COUNT(currencies), sizeof currencies[0], cmp_code);
}

bool format_is_currency(const char *s)
{
    return currency_find(s) != NULL;
}

int format_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int format_currency_exponent(const char *code)
{
    const struct currency *c = currency_find(code);
    return c ? c->exponent : -1;
}

bool format_is_country(const char *s)
{
    if (!s || !upper_code(s, 2))
        return false;
    return bsearch(s, countries, COUNT(countries), sizeof countries[0], cmp_code) != NULL;
}

/* ---- dates and times --------------------------------------------------------------------- */

static bool is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
    static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* n digits at s as a number, or -1 if any is not a digit. */
static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit(s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* full-date = 4DIGIT "-" 2DIGIT "-" 2DIGIT at s (not necessarily terminated there). */
static bool parse_date(const char *s, int *y, int *m, int *d)
{
    if (strnlen(s, 10) < 10 || s[4] != '-' || s[7] != '-')
        return false;
    *y = digits(s, 4);
    *m = digits(s + 5, 2);
    *d = digits(s + 8, 2);
    if (*y < 0 || *m < 1 || *m > 12 || *d < 1)
        return false;
    return *d <= days_in_month(*y, *m);
}

bool format_is_date(const char *s)
{
    int y, m, d;
    return s && parse_date(s, &y, &m, &d) && s[10] == '\0';
}

/* RFC 3339 date-time: 'T' or 't' between date and time, optional fraction, 'Z'/'z' or a
 * numeric offset. Second 60 is accepted only where a leap second can fall: 23:59:60 UTC on
 * the last day of June or December (after applying the offset); a positive or negative leap
 * second cannot be ruled out from the string alone, so both of those days are allowed. */
bool format_is_date_time(const char *s)
{
    int y, mo, d;
    if (!s || !parse_date(s, &y, &mo, &d))
        return false;
    const char *p = s + 10;
    if (*p != 'T' && *p != 't')
        return false;
    p++;
    if (strnlen(p, 8) < 8 || p[2] != ':' || p[5] != ':')
        return false;
    int h = digits(p, 2), mi = digits(p + 3, 2), sec = digits(p + 6, 2);
    if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60)
        return false;
    p += 8;
    if (*p == '.') {
        p++;
        if (!is_digit(*p))
            return false;
        while (is_digit(*p))
            p++;
    }
    int offset = 0; /* minutes east of UTC */
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        p++;
        if (strnlen(p, 5) < 5 || p[2] != ':')
            return false;
        int oh = digits(p, 2), om = digits(p + 3, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return false;
        offset = sign * (oh * 60 + om);
        p += 5;
    } else {
        return false;
    }
    if (*p != '\0')
        return false;
    if (sec == 60) {
        int utc = h * 60 + mi - offset; /* minutes into the local date, in UTC */
        int shift = utc < 0 ? -1 : utc >= 24 * 60 ? 1 : 0;
        utc -= shift * 24 * 60;
        if (utc != 23 * 60 + 59)
            return false;
        /* Move the date by the day the offset crossed. */
        d += shift;
        if (d < 1) {
            if (--mo < 1) {
                mo = 12;
                y--;
            }
            d = days_in_month(y, mo);
        } else if (d > days_in_month(y, mo)) {
            d = 1;
            if (++mo > 12) {
                mo = 1;
                y++;
            }
        }
        if (!((mo == 6 && d == 30) || (mo == 12 && d == 31)))
            return false;
    }
    return true;
}

/* Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's civil_from_days). */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

void format_time_rfc3339(int64_t unix_ms, char *buf, size_t n)
{
    /* Floor division, so instants before 1970 land on the right second. */
    int64_t secs = unix_ms / 1000, ms = unix_ms % 1000;
    if (ms < 0) {
        ms += 1000;
        secs--;
    }
    int64_t days = secs / 86400, rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999 || n < 25) {
        snprintf(buf, n, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", (long long)y, m, d,
                 (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), (int)ms);
        return;
    }
    /* The common case digit by digit: this runs several times per write request. */
    int v[] = {(int)y / 100, (int)y % 100, m, d, (int)(rem / 3600), (int)(rem / 60 % 60),
               (int)(rem % 60)};
    static const char seps[] = "\0\0--T::"; /* before each pair of digits */
    char *o = buf;
    for (int i = 0; i < 7; i++) {
        if (seps[i])
            *o++ = seps[i];
        *o++ = (char)('0' + v[i] / 10);
        *o++ = (char)('0' + v[i] % 10);
    }
    *o++ = '.';
    *o++ = (char)('0' + ms / 100);
    *o++ = (char)('0' + ms / 10 % 10);
    *o++ = (char)('0' + ms % 10);
    *o++ = 'Z';
    *o = '\0';
}

/* Howard Hinnant's days_from_civil, the inverse of civil_from_days above. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool format_time_parse(const char *s, int64_t *unix_ms)
{
    int y, mo, d, h, mi, sec, ms, used = 0;
    if (!s || strlen(s) != 24 ||
        sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &y, &mo, &d, &h, &mi, &sec, &ms, &used) != 7 ||
        used != 24 || !format_is_date_time(s))
        return false;
    *unix_ms = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) * 1000) + ms;
    return true;
}

bool format_time_parse_any(const char *s, int64_t *unix_ms)
{
    int y, mo, d, h, mi, sec, used = 0;
    if (!format_is_date_time(s) ||
        sscanf(s, "%4d-%2d-%2d%*1[Tt]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6)
        return false;
    const char *p = s + used;
    int64_t ms = 0, scale = 100;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++) {
            ms += (*p - '0') * scale;
            scale /= 10;
        }
    }
    int64_t offset_s = 0;
    if (*p == '+' || *p == '-') {
        int oh = 0, om = 0;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
            return false;
        offset_s = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
    }
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset_s;
    *unix_ms = secs * 1000 + ms;
    return true;
}

size_t format_i64(char buf[FORMAT_I64_MAX], int64_t v)
{
    char tmp[FORMAT_I64_MAX];
    char *end = tmp + sizeof tmp, *p = end;
    /* Digits of the magnitude as unsigned, so INT64_MIN needs no special case. */
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    size_t n = (size_t)(end - p);
    memcpy(buf, p, n);
    buf[n] = '\0';
    return n;
}

void format_now_rfc3339(char *buf, size_t n)
{
    format_time_rfc3339(clock_now_ms(), buf, n);
}

/* ---- identifiers ------------------------------------------------------------------------- */

bool format_is_uuid(const char *s)
{
    if (!s)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !is_hex(s[i]))
            return false;
    }
    return s[36] == '\0';
}

static bool is_atext(char c)
{
    return is_alpha(c) || is_digit(c) || (c && strchr("!#$%&'*+/=?^_`{|}~-", c));
}

/* Host name: dot-separated labels of letters, digits and inner hyphens, at most 63 each,
 * at least two labels, and a top-level label that is not all digits. */
static bool domain_ok(const char *s, size_t len)
{
    if (len == 0 || len > 253)
        return false;
    size_t labels = 0, i = 0;
    bool all_digits = true;
    while (i <= len) {
        size_t start = i;
        all_digits = true;
        while (i < len && s[i] != '.') {
            char c = s[i];
            if (!is_alpha(c) && !is_digit(c) && c != '-')
                return false;
            if (!is_digit(c))
                all_digits = false;
            i++;
        }
        size_t n = i - start;
        if (n == 0 || n > 63 || s[start] == '-' || s[i - 1] == '-')
            return false;
        labels++;
        i++; /* past the '.' or the end */
    }
    return labels >= 2 && !all_digits;
}

/* Pragmatic RFC 5321 Mailbox: dot-atom local part (no quoted strings, no comments), ASCII
 * host name (no address literals), 64 / 254 length limits. */
bool format_is_email(const char *s)
{
    if (!s)
        return false;
    size_t len = strnlen(s, 256);
    if (len > 254)
        return false;
    const char *at = strrchr(s, '@');
    if (!at)
        return false;
    size_t local = (size_t)(at - s);
    if (local == 0 || local > 64 || s[0] == '.' || s[local - 1] == '.')
        return false;
    for (size_t i = 0; i < local; i++) {
        if (s[i] == '.') {
            if (s[i + 1] == '.')
                return false;
        } else if (!is_atext(s[i])) {
            return false;
        }
    }
    return domain_ok(at + 1, len - local - 1);
}

/* Absolute RFC 3986 URI: scheme ":" and then only characters a URI may hold (unreserved,
 * reserved, and '%' with two hex digits), at most one '#'. No spaces, controls or non-ASCII:
 * IRIs must be percent-encoded first. */
bool format_is_uri(const char *s)
{
    if (!s || !is_alpha(s[0]))
        return false;
    const char *p = s + 1;
    while (is_alpha(*p) || is_digit(*p) || *p == '+' || *p == '-' || *p == '.')
        p++;
    if (*p != ':')
        return false;
    p++;
    bool fragment = false;
    for (; *p; p++) {
        char c = *p;
        if (c == '%') {
            if (!is_hex(p[1]) || !is_hex(p[2]))
                return false;
            p += 2;
        } else if (c == '#') {
            if (fragment)
                return false;
            fragment = true;
        } else if (!(is_alpha(c) || is_digit(c) || strchr("-._~:/?[]@!$&'()*+,;=", c))) {
            return false;
        }
    }
    return true;
}

/* ---- banking ----------------------------------------------------------------------------- */

static bool is_alnum_upper(char c)
{
    return is_upper(c) || is_digit(c);
}

/* ISO 13616 electronic format: upper case, no spaces, registry length, check digits 02..98,
 * and the ISO 7064 MOD 97-10 remainder of 1, computed digit by digit (no bignum). */
bool format_is_iban(const char *s)
{
    if (!s || !is_upper(s[0]) || !is_upper(s[1]))
        return false;
    char cc[3] = { s[0], s[1], '\0' };
    const struct iban_country *c =
        bsearch(cc, iban_countries, COUNT(iban_countries), sizeof iban_countries[0], cmp_code);
    if (!c || strnlen(s, 35) != (size_t)c->length)
        return false;
    int check = digits(s + 2, 2);
    if (check < 2 || check > 98)
        return false;
    unsigned r = 0;
    for (int i = 0; i < c->length; i++) {
        char ch = s[(i + 4) % c->length]; /* BBAN first, then country and check digits */
        if (!is_alnum_upper(ch))
            return false;
        if (is_digit(ch))
            r = (r * 10 + (unsigned)(ch - '0')) % 97;
        else
            r = (r * 100 + (unsigned)(ch - 'A' + 10)) % 97;
    }
    return r == 1;
}

/* ISO 9362: 4-letter party prefix, ISO 3166 country (or XK), 2 alphanumerics of location
 * and, for 11 characters, 3 alphanumerics of branch. Upper case only. */
bool format_is_bic(const char *s)
{
    if (!s)
        return false;
    size_t len = strnlen(s, 12);
    if (len != 8 && len != 11)
        return false;
    for (int i = 0; i < 6; i++)
        if (!is_upper(s[i]))
            return false;
    char cc[3] = { s[4], s[5], '\0' };
    if (!format_is_country(cc) && strcmp(cc, "XK") != 0)
        return false;
    for (size_t i = 6; i < len; i++)
        if (!is_alnum_upper(s[i]))
            return false;
    return true;
}

char *format_uri_component(struct arena *a, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = arena_alloc(a, strlen(s) * 3 + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}
