/* libFuzzer: the text formats the server checks or parses (runtime/format.c, base64url.c,
 * pkce.c, decimal.c). The first byte picks the function, the rest is the text. Properties:
 * never crashes; what base64url decodes re-encodes to the same text; a parsed timestamp formats
 * and parses back to itself; a parsed decimal prints canonically and parses back equal. */
#include <stdlib.h>
#include <string.h>

#include "runtime/base64url.h"
#include "runtime/decimal.h"
#include "runtime/format.h"
#include "runtime/pkce.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    int64_t ms = 0;
    switch (data[0] % 15) {
    case 0: (void)format_is_date(s); break;
    case 1: (void)format_is_date_time(s); break;
    case 2: (void)format_is_uuid(s); break;
    case 3: (void)format_is_email(s); break;
    case 4: (void)format_is_uri(s); break;
    case 5: (void)format_is_currency(s); (void)format_currency_exponent(s); break;
    case 6: (void)format_is_country(s); break;
    case 7: (void)format_is_iban(s); break;
    case 8: (void)format_is_bic(s); break;
    case 9:
        if (format_time_parse_any(s, &ms) && ms > -62135596800000 && ms < 253402300800000) {
            char buf[40];
            int64_t back = 0;
            format_time_rfc3339(ms, buf, sizeof buf);
            if (!format_time_parse(buf, &back) || back != ms)
                abort();
        }
        break;
    case 10: {
        unsigned char out[512];
        size_t len = 0, n = strlen(s);
        if (n <= 600 && base64url_decode(s, n, out, sizeof out, &len) == 0) {
            char *enc = malloc(len / 3 * 4 + 8);
            if (!enc)
                break;
            base64url_encode(out, len, enc);
            if (strcmp(enc, s) != 0)
                abort();
            free(enc);
        }
        break;
    }
    case 11: (void)pkce_verifier_ok(s); (void)pkce_challenge_ok(s); break;
    case 12:
        if (pkce_verifier_ok(s) && pkce_s256_matches(s, s))
            abort(); /* a verifier is never its own S256 challenge (43 vs base64 of a digest) */
        break;
    case 13: {
        struct decimal d, back;
        char text[DECIMAL_TEXT_MAX];
        if (decimal_parse(s, DECIMAL_MAX_DIGITS, DECIMAL_MAX_DIGITS, true, &d) == 0) {
            decimal_format(d, text, sizeof text);
            if (decimal_parse(text, DECIMAL_MAX_DIGITS, DECIMAL_MAX_DIGITS, true, &back) != 0 ||
                back.units != d.units || back.scale != d.scale || decimal_cmp(d, back) != 0)
                abort();
        }
        break;
    }
    default: (void)format_time_parse(s, &ms); break;
    }
    free(s);
    return 0;
}
