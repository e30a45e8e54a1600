/* Formats and ISO reference data: IBAN, BIC, dates, date-times, uuid, email, uri, currency
 * exponents, countries, RFC 3339 timestamps. */
#include "runtime/format.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tests/unit/unit.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void check_all(bool (*fn)(const char *), const char *const *cases, size_t n, bool want)
{
    for (size_t i = 0; i < n; i++) {
        if (fn(cases[i]) != want)
            fprintf(stderr, "  expected %s for \"%s\"\n", want ? "valid" : "invalid", cases[i]);
        CHECK(fn(cases[i]) == want);
    }
}

/* ---- IBAN -------------------------------------------------------------------------------- */

static void test_iban_accepts_registry_examples_of_every_country(void)
{
    static const char *const ok[] = {
        "GB82WEST12345698765432", "DE89370400440532013000", "AD1200012030200359100100",
        "AE070331234567890123456", "AL47212110090000000235698741", "AT611904300234573201",
        "AZ21NABZ00000000137010001944", "BA391290079401028494", "BE68539007547034",
        "BG80BNBG96611020345678", "BH67BMAG00001299123456", "BI4210000100010000332045181",
        "BR1800360305000010009795493C1", "BY13NBRB3600900000002Z00AB00", "CH9300762011623852957",
        "CR05015202001026284066", "CY17002001280000001200527600", "CZ6508000000192000145399",
        "DK5000400440116243", "DO28BAGR00000001212453611324", "EE382200221020145685",
        "EG380019000500000000263180002", "ES9121000418450200051332", "FI2112345600000785",
        "FO6264600001631634", "FR1420041010050500013M02606", "GB29NWBK60161331926819",
        "GE29NB0000000101904917", "GI75NWBK000000007099453", "GL8964710001000206",
        "GR1601101250000000012300695", "GT82TRAJ01020000001210029690", "HR1210010051863000160",
        "HU42117730161111101800000000", "IE29AIBK93115212345678", "IL620108000000099999999",
        "IS140159260076545510730339", "IT60X0542811101000000123456",
        "JO94CBJO0010000000000131000302", "KW81CBKU0000000000001234560101",
        "KZ86125KZT5004100100", "LB62099900000001001901229114", "LI21088100002324013AA",
        "LT121000011101001000", "LU280019400644750000", "LV80BANK0000435195001",
        "MC5811222000010123456789030", "MD24AG000225100013104168", "ME25505000012345678951",
        "MK07250120000058984", "MR1300020001010000123456753", "MT84MALT011000012345MTLCAST001S",
        "MU17BOMM0101101030300200000MUR", "NL91ABNA0417164300", "NO9386011117947",
        "PK36SCBL0000001123456702", "PL61109010140000071219812874",
        "PS92PALS000000000400123456702", "PT50000201231234567890154",
        "QA58DOHB00001234567890ABCDEFG", "RO49AAAA1B31007593840000", "RS35260005601001611379",
        "SA0380000000608010167519", "SC18SSCB11010000000000001497USD",
        "SE4550000000058398257466", "SI56263300012039086", "SK3112000000198742637541",
        "SM86U0322509800000000270100", "ST68000100010051845310112",
        "SV62CENR00000000000000700025", "TL380080012345678910157", "TN5910006035183598478831",
        "TR330006100519786457841326", "UA213223130000026007233566001", "VA59001123000012345678",
        "VG96VPVG0000012345678901", "XK051212012345678906",
        /* Countries registered more recently, with computed check digits. */
        "DJ3752601815908301661318609", "FK0913909960308246", "HN74281948219935181909378657",
        "IQ369754323194875749118", "LC606252760189555979711471049746", "LY22507529170342366712768",
        "MN144268465632122330", "NI45792440268599528907866661", "OM657603137215901092815",
        "RU2290139624595711777741215472803", "SD1985280841485253", "SO498885393363387500474",
        "YE5039575513137353799075116372", "DE98370400440000000042", "DE02370400440000000024",
    };
    check_all(format_is_iban, ok, N(ok), true);
}

static void test_iban_rejects_bad_check_digits(void)
{
    static const char *const bad[] = {
        "GB82WEST12345698765433", /* last digit changed */
        "DE88370400440532013000", /* check digits off by one */
        "DE89370400440532013001",
        "GB82WEST12345698765423", /* transposed digits */
        "DE01370400440000000042", /* passes mod 97 but 01 is not a check value */
        "DE99370400440000000024", /* 99 == 02 mod 97, still not allowed */
        "DE00370400440532013000",
        "DEXX370400440532013000",
    };
    check_all(format_is_iban, bad, N(bad), false);
}

static void test_iban_rejects_wrong_length_for_country(void)
{
    static const char *const bad[] = {
        "DE8937040044053201300",   /* 21 for a 22 country */
        "DE893704004405320130000", /* 23 */
        "GB82WEST1234569876543",
        "NO938601111794",
        "BE6853900754703",
    };
    check_all(format_is_iban, bad, N(bad), false);
}

static void test_iban_rejects_unknown_countries_case_and_spaces(void)
{
    static const char *const bad[] = {
        "US64SVBKUS6S3300958879", /* no IBAN in the US */
        "XX89370400440532013000",
        "gb82west12345698765432", /* electronic format is upper case */
        "GB82west12345698765432",
        "GB82 WEST 1234 5698 7654 32",
        "GB82-WEST-1234-5698-7654-32",
        "",
        "GB",
        "GB82",
    };
    check_all(format_is_iban, bad, N(bad), false);
    CHECK(!format_is_iban(NULL));
}

/* ---- BIC --------------------------------------------------------------------------------- */

static void test_bic_accepts_8_and_11_character_codes(void)
{
    static const char *const ok[] = { "DEUTDEFF", "DEUTDEFF500", "NWBKGB2L", "NWBKGB2LXXX",
                                      "BNPAFRPPXXX", "CHASUS33", "BOFAUS3N", "TESTXK22" };
    check_all(format_is_bic, ok, N(ok), true);
}

static void test_bic_rejects_bad_country_length_and_case(void)
{
    static const char *const bad[] = {
        "DEUTZZFF",     /* ZZ is no country */
        "DEUTXXFF",
        "DEUTDEF",      /* 7 */
        "DEUTDEFF5",    /* 9 */
        "DEUTDEFF50",   /* 10 */
        "DEUTDEFF5000", /* 12 */
        "deutdeff",
        "DEUTdeFF",
        "DEUTDEff",
        "DEU1DEFF",     /* bank code is letters only */
        "DEUTDEFF50_",
        "DEUT DEFF",
        "",
    };
    check_all(format_is_bic, bad, N(bad), false);
    CHECK(!format_is_bic(NULL));
}

/* ---- dates ------------------------------------------------------------------------------- */

static void test_date_follows_the_real_calendar(void)
{
    static const char *const ok[] = { "2024-02-29", "2000-02-29", "2023-02-28", "2026-12-31",
                                      "2026-01-01", "1999-04-30", "0001-01-01" };
    static const char *const bad[] = {
        "2023-02-29", "1900-02-29", "2024-02-30", "2026-04-31", "2026-13-01", "2026-00-10",
        "2026-01-00", "2026-01-32", "2026-1-01", "26-01-01", "2026/01/01", "2026-01-01T00:00:00Z",
        "2026-01-01 ", " 2026-01-01", "20260101", "", "2026-0a-01",
    };
    check_all(format_is_date, ok, N(ok), true);
    check_all(format_is_date, bad, N(bad), false);
    CHECK(!format_is_date(NULL));
}

static void test_date_time_follows_rfc_3339(void)
{
    static const char *const ok[] = {
        "2026-11-22T07:39:11Z", "2026-11-22T07:39:11.123Z", "2026-11-22t07:39:11z",
        "2026-11-22T07:39:11.1+01:00", "2026-11-22T07:39:11-05:30", "2026-11-22T23:59:59-00:00",
        "2024-02-29T00:00:00.000000001Z",
        /* Leap seconds where one can fall: 23:59:60 UTC on 30 June or 31 December. */
        "1998-12-31T23:59:60Z", "2016-06-30T23:59:60.5Z", "1998-12-31T15:59:60.123-08:00",
        "1999-01-01T00:59:60+01:00",
    };
    static const char *const bad[] = {
        "2026-11-22T07:39:11",        /* offset required */
        "2026-11-22 07:39:11Z",       /* space is not the RFC 3339 grammar */
        "2026-11-22T7:39:11Z", "2026-11-22T07:39Z", "2026-11-22T24:00:00Z",
        "2026-11-22T07:60:00Z", "2026-11-22T07:39:61Z", "2026-11-22T07:39:11.Z",
        "2026-11-22T07:39:11+0100", "2026-11-22T07:39:11+01", "2026-11-22T07:39:11+24:00",
        "2026-11-22T07:39:11+01:60", "2026-11-22T07:39:11ZZ", "2026-11-22T07:39:11Z ",
        "2023-02-29T00:00:00Z", "2026-11-22", "",
        /* Leap seconds anywhere else. */
        "1998-12-31T23:58:60Z", "1998-12-30T23:59:60Z", "2026-11-22T07:39:60Z",
        "1998-12-31T23:59:60+01:00", "1998-06-30T22:59:60Z",
    };
    check_all(format_is_date_time, ok, N(ok), true);
    check_all(format_is_date_time, bad, N(bad), false);
    CHECK(!format_is_date_time(NULL));
}

static void test_time_rfc3339_renders_utc_with_milliseconds(void)
{
    char buf[32];
    format_time_rfc3339(0, buf, sizeof buf);
    CHECK_STR(buf, "1970-01-01T00:00:00.000Z");
    format_time_rfc3339(INT64_C(1795333151123), buf, sizeof buf);
    CHECK_STR(buf, "2026-11-22T07:39:11.123Z");
    format_time_rfc3339(INT64_C(951782400000), buf, sizeof buf);
    CHECK_STR(buf, "2000-02-29T00:00:00.000Z");
    format_time_rfc3339(INT64_C(1709251199999), buf, sizeof buf);
    CHECK_STR(buf, "2024-02-29T23:59:59.999Z");
    format_time_rfc3339(-1, buf, sizeof buf);
    CHECK_STR(buf, "1969-12-31T23:59:59.999Z");
    format_time_rfc3339(INT64_C(253402300799999), buf, sizeof buf);
    CHECK_STR(buf, "9999-12-31T23:59:59.999Z");
    format_time_rfc3339(INT64_C(253402300800000), buf, sizeof buf); /* past 9999: five digits */
    CHECK_STR(buf, "10000-01-01T00:00:00.000Z");
    format_time_rfc3339(INT64_C(1795333151123), buf, 11); /* a short buffer truncates */
    CHECK_STR(buf, "2026-11-22");
    /* Digit by digit agrees with the C library's calendar over the years 1 to 9999. */
    uint64_t x = 88172645463325252u;
    int wrong = 0;
    for (int i = 0; i < 5000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t ms = (int64_t)(x % UINT64_C(315537897600000)) - INT64_C(62135596800000);
        time_t secs = (time_t)(ms / 1000 - (ms % 1000 < 0));
        struct tm tm;
        char want[80];
        gmtime_r(&secs, &tm);
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)((ms % 1000 + 1000) % 1000));
        format_time_rfc3339(ms, buf, sizeof buf);
        wrong += strcmp(buf, want) != 0;
    }
    CHECK(wrong == 0);
}

static void test_time_parse_reads_back_what_rfc3339_renders(void)
{
    static const int64_t instants[] = {0, INT64_C(1795333151123), INT64_C(951782400000),
                                       INT64_C(1709251199999), INT64_C(253402300799999), -1};
    char buf[32];
    int64_t ms = 42;
    for (size_t i = 0; i < sizeof instants / sizeof *instants; i++) {
        format_time_rfc3339(instants[i], buf, sizeof buf);
        CHECK(format_time_parse(buf, &ms) && ms == instants[i]);
    }
    static const char *const bad[] = {"", "2025-03-14", "2025-03-14T09:26:53Z",
                                      "2025-03-14T09:26:53.589+01:00", "2025-02-30T00:00:00.000Z",
                                      "2025-03-14T09:26:53.589Zx", "2025-03-14 09:26:53.589Z"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(!format_time_parse(bad[i], &ms));
    CHECK(!format_time_parse(NULL, &ms));
}

static void test_time_parse_any_normalises_offsets_and_fractions(void)
{
    int64_t ms = 0;
    CHECK(format_time_parse_any("2025-03-14T10:26:53.589+01:00", &ms) && ms == INT64_C(1741944413589));
    CHECK(format_time_parse_any("2025-03-14T09:26:53.5894Z", &ms) && ms == INT64_C(1741944413589));
    CHECK(format_time_parse_any("2025-03-14T04:56:53-04:30", &ms) && ms == INT64_C(1741944413000));
    CHECK(format_time_parse_any("2025-03-14t09:26:53z", &ms) || !format_is_date_time("2025-03-14t09:26:53z"));
    CHECK(!format_time_parse_any("2025-03-14", &ms));
    CHECK(!format_time_parse_any("yesterday", &ms));
}

static void test_now_rfc3339_is_a_valid_utc_date_time(void)
{
    char buf[32];
    format_now_rfc3339(buf, sizeof buf);
    CHECK(strlen(buf) == 24);
    CHECK(buf[23] == 'Z' && buf[19] == '.');
    CHECK(format_is_date_time(buf));
    CHECK(strncmp(buf, "2026", 4) >= 0);
}

/* ---- uuid, email, uri -------------------------------------------------------------------- */

static void test_uuid_accepts_any_version_in_8_4_4_4_12_form(void)
{
    static const char *const ok[] = { "123e4567-e89b-12d3-a456-426614174000",
                                      "00000000-0000-0000-0000-000000000000",
                                      "F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6",
                                      "018f3c6a-7b2e-7cc1-9d4f-1a2b3c4d5e6f" };
    static const char *const bad[] = { "123e4567e89b12d3a456426614174000",
                                       "123e4567-e89b-12d3-a456-42661417400",
                                       "123e4567-e89b-12d3-a456-4266141740000",
                                       "123e4567-e89b-12d3-a456_426614174000",
                                       "g23e4567-e89b-12d3-a456-426614174000",
                                       "{123e4567-e89b-12d3-a456-426614174000}", "" };
    check_all(format_is_uuid, ok, N(ok), true);
    check_all(format_is_uuid, bad, N(bad), false);
}

static void test_email_is_pragmatic_addr_spec(void)
{
    static const char *const ok[] = { "a@example.com", "first.last+tag@sub.example.co.uk",
                                      "o'brien@example.ie", "x_y-z@ex-ample.org", "1@2.io" };
    static const char *const bad[] = { "", "a", "a@", "@example.com", "a@example",
                                       "a@@example.com", "a@b@example.com", ".a@example.com",
                                       "a.@example.com", "a..b@example.com", "a b@example.com",
                                       "a@exa mple.com", "a@-example.com", "a@example-.com",
                                       "a@example..com", "a@.example.com", "a@example.com.",
                                       "a@1.2.3.4", "\"a\"@example.com", "a@[127.0.0.1]",
                                       "a(b)@example.com", "j\xc3\xb6rg@example.com" };
    check_all(format_is_email, ok, N(ok), true);
    check_all(format_is_email, bad, N(bad), false);
}

static void test_email_length_limits(void)
{
    char buf[400];
    memset(buf, 'a', 64);
    strcpy(buf + 64, "@example.com");
    CHECK(format_is_email(buf));
    memset(buf, 'a', 65);
    strcpy(buf + 65, "@example.com");
    CHECK(!format_is_email(buf));
    /* 254 in all: 64 + '@' + labels of 63 and a final short one. */
    size_t n = 0;
    memset(buf, 'a', 64);
    n = 64;
    buf[n++] = '@';
    for (int i = 0; i < 2; i++) {
        memset(buf + n, 'b', 63);
        n += 63;
        buf[n++] = '.';
    }
    memset(buf + n, 'c', 254 - n);
    n = 254;
    buf[n] = '\0';
    CHECK(format_is_email(buf));
    buf[n++] = 'c';
    buf[n] = '\0';
    CHECK(!format_is_email(buf));
    /* A 64-character label is too long. */
    memset(buf, 0, sizeof buf);
    strcpy(buf, "a@");
    memset(buf + 2, 'b', 64);
    strcpy(buf + 66, ".com");
    CHECK(!format_is_email(buf));
}

static void test_uri_must_be_absolute_without_spaces(void)
{
    static const char *const ok[] = { "https://example.com/a?b=c#d", "urn:isbn:0451450523",
                                      "mailto:a@example.com", "http://[::1]:8080/",
                                      "https://example.com/%20x", "a+b-c.d:", "file:///etc/hosts" };
    static const char *const bad[] = { "", "example.com/path", "/relative", "//host/path",
                                       "1http://x", "ht tp://x", "http://exa mple.com",
                                       "http://example.com/\x01", "http://example.com/%2",
                                       "http://example.com/%zz", "http://x/#a#b", "http://x/<a>",
                                       "http://x/\"", "http://x/\xc3\xa9", ":nothing" };
    check_all(format_is_uri, ok, N(ok), true);
    check_all(format_is_uri, bad, N(bad), false);
}

/* ---- currencies and countries ------------------------------------------------------------ */

static void test_currency_exponents_follow_iso_4217(void)
{
    CHECK(format_currency_exponent("USD") == 2);
    CHECK(format_currency_exponent("EUR") == 2);
    CHECK(format_currency_exponent("GBP") == 2);
    CHECK(format_currency_exponent("JPY") == 0);
    CHECK(format_currency_exponent("KRW") == 0);
    CHECK(format_currency_exponent("VND") == 0);
    CHECK(format_currency_exponent("CLP") == 0);
    CHECK(format_currency_exponent("ISK") == 0);
    CHECK(format_currency_exponent("UGX") == 0);
    CHECK(format_currency_exponent("XOF") == 0);
    CHECK(format_currency_exponent("BHD") == 3);
    CHECK(format_currency_exponent("KWD") == 3);
    CHECK(format_currency_exponent("JOD") == 3);
    CHECK(format_currency_exponent("OMR") == 3);
    CHECK(format_currency_exponent("TND") == 3);
    CHECK(format_currency_exponent("IQD") == 3);
    CHECK(format_currency_exponent("LYD") == 3);
    CHECK(format_currency_exponent("CLF") == 4);
    CHECK(format_currency_exponent("UYW") == 4);
    CHECK(format_currency_exponent("XYZ") == -1);
    CHECK(format_currency_exponent("usd") == -1);
    CHECK(format_currency_exponent("USDX") == -1);
    CHECK(format_currency_exponent("") == -1);
    CHECK(format_currency_exponent(NULL) == -1);
}

static void test_currency_accepts_active_codes_only(void)
{
    static const char *const ok[] = { "USD", "EUR", "CHF", "CNY", "XCG", "ZWG", "SLE", "VES",
                                      "VED", "MRU", "STN", "AED", "ZMW" };
    static const char *const bad[] = { "XYZ", "usd", "Usd", "US", "USDD", "", "HRK", "DEM",
                                       "XAU", "XXX", "XTS", "ZWL", "BGN", "VEF", "MRO" };
    check_all(format_is_currency, ok, N(ok), true);
    check_all(format_is_currency, bad, N(bad), false);
}

static void test_country_is_an_assigned_iso_3166_code(void)
{
    static const char *const ok[] = { "DE", "US", "GB", "JP", "AQ", "AX", "BQ", "CW", "SS",
                                      "SX", "ZW", "AD", "PS", "VA" };
    static const char *const bad[] = { "XK", "UK", "EU", "ZZ", "de", "D", "DEU", "", "AA",
                                       "YU", "AN" };
    check_all(format_is_country, ok, N(ok), true);
    check_all(format_is_country, bad, N(bad), false);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_time_parse_reads_back_what_rfc3339_renders),
        UNIT_TEST(test_time_parse_any_normalises_offsets_and_fractions),
        UNIT_TEST(test_iban_accepts_registry_examples_of_every_country),
        UNIT_TEST(test_iban_rejects_bad_check_digits),
        UNIT_TEST(test_iban_rejects_wrong_length_for_country),
        UNIT_TEST(test_iban_rejects_unknown_countries_case_and_spaces),
        UNIT_TEST(test_bic_accepts_8_and_11_character_codes),
        UNIT_TEST(test_bic_rejects_bad_country_length_and_case),
        UNIT_TEST(test_date_follows_the_real_calendar),
        UNIT_TEST(test_date_time_follows_rfc_3339),
        UNIT_TEST(test_time_rfc3339_renders_utc_with_milliseconds),
        UNIT_TEST(test_now_rfc3339_is_a_valid_utc_date_time),
        UNIT_TEST(test_uuid_accepts_any_version_in_8_4_4_4_12_form),
        UNIT_TEST(test_email_is_pragmatic_addr_spec),
        UNIT_TEST(test_email_length_limits),
        UNIT_TEST(test_uri_must_be_absolute_without_spaces),
        UNIT_TEST(test_currency_exponents_follow_iso_4217),
        UNIT_TEST(test_currency_accepts_active_codes_only),
        UNIT_TEST(test_country_is_an_assigned_iso_3166_code),
    };
    return unit_run("format", tests, sizeof tests / sizeof tests[0]);
}
