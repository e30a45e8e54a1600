/* Currency pairs and the FX calendar (handlers/rates.h): what rates, curves and conversions all
 * count with. A date is its day number since 1970-01-01 (H. Hinnant's civil-calendar
 * algorithms), so adding days and counting the days between two dates are integer arithmetic.
 * Weekends are not business days; public holidays are not modelled (the spec says so). */
#include "handlers/rates.h"

#include <stdio.h>
#include <string.h>

#include "runtime/clock.h"
#include "runtime/format.h"

bool rates_pair_split(const char *pair, char base[4], char quote[4])
{
    if (!pair || strlen(pair) != 6)
        return false;
    memcpy(base, pair, 3);
    base[3] = '\0';
    memcpy(quote, pair + 3, 3);
    quote[3] = '\0';
    /* format_is_currency takes only upper-case active codes */
    return format_is_currency(base) && format_is_currency(quote) && strcmp(base, quote) != 0;
}

static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

bool rates_date_days(const char *date, int64_t *days)
{
    int y = 0, m = 0, d = 0;
    if (!date || !format_is_date(date) || sscanf(date, "%4d-%2d-%2d", &y, &m, &d) != 3)
        return false;
    *days = days_from_civil(y, m, d);
    return true;
}

void rates_date_of_days(int64_t days, char out[11])
{
    int y, m, d;
    civil_from_days(days, &y, &m, &d);
    char buf[40];
    snprintf(buf, sizeof buf, "%04d-%02d-%02d", y % 10000, m, d);
    memcpy(out, buf, 10);
    out[10] = '\0';
}

int64_t rates_today(void)
{
    int64_t s = clock_now_s();
    return s >= 0 ? s / 86400 : (s - 86399) / 86400;
}

void rates_today_date(char out[11])
{
    rates_date_of_days(rates_today(), out);
}

bool rates_weekend(int64_t day)
{
    int w = (int)((day + 4) % 7); /* 0 Sunday ... 6 Saturday: 1970-01-01 was a Thursday */
    if (w < 0)
        w += 7;
    return w == 0 || w == 6;
}

int64_t rates_add_weekdays(int64_t day, int n)
{
    while (n > 0) {
        day++;
        if (!rates_weekend(day))
            n--;
    }
    return day;
}

int64_t rates_add_months(int64_t day, int n)
{
    static const int len[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, m, d;
    civil_from_days(day, &y, &m, &d);
    int months = y * 12 + (m - 1) + n;
    y = months / 12;
    m = months % 12 + 1;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    int last = len[m - 1] + (m == 2 && leap);
    return days_from_civil(y, m, d > last ? last : d);
}

int64_t rates_spot_day(const char *pair, int64_t trade_day)
{
    bool one_day = pair && (strcmp(pair, "USDCAD") == 0 || strcmp(pair, "CADUSD") == 0);
    return rates_add_weekdays(trade_day, one_day ? 1 : 2);
}

int rates_spot_date(const char *pair, const char *trade_date, char out[11])
{
    int64_t d;
    if (!rates_date_days(trade_date, &d))
        return -1;
    rates_date_of_days(rates_spot_day(pair, d), out);
    return 0;
}
