/* Wall-clock time for every decision that depends on it: token issue and expiry, quotas,
 * timestamps, retention. Test builds (-DTREASURY_TEST_CLOCK) add an offset the tests control
 * through <data-dir>/test-clock-offset (8 bytes, little-endian signed seconds), so expiry can be
 * tested by moving time instead of sleeping; release builds have no such hook. */
#ifndef RUNTIME_CLOCK_H
#define RUNTIME_CLOCK_H

#include <stdint.h>

/* Test builds: maps <data_dir>/test-clock-offset (created as 0). Release builds: nothing.
 * 0 / -1. */
int clock_init(const char *data_dir);
int64_t clock_now_ns(void);
int64_t clock_now_ms(void);
int64_t clock_now_s(void);

#endif
