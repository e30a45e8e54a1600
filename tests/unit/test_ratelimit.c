/* Unit tests for runtime/ratelimit.c: GCRA arithmetic on a fixed clock, exactness under
 * concurrency, refunds, overrides, and the checkpoint/restore that survives a restart. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/ratelimit.h"
#include "runtime/storage.h"
#include "tests/unit/unit.h"

#define S INT64_C(1000000000)
#define T0 (INT64_C(1800000000) * S) /* a fixed "now" on a whole second */

static void test_full_bucket_allows_exactly_the_limit_at_once(void)
{
    struct ratelimit_verdict v;
    ratelimit_reset();
    for (int i = 0; i < 50; i++) {
        ratelimit_check("k", 50, 60, T0, &v);
        CHECK(v.allowed);
        CHECK(v.limit == 50);
        CHECK(v.remaining == 49 - i);
    }
    ratelimit_check("k", 50, 60, T0, &v);
    CHECK(!v.allowed);
    CHECK(v.remaining == 0);
}

static void test_capacity_comes_back_one_request_per_interval(void)
{
    struct ratelimit_verdict v;
    ratelimit_reset();
    for (int i = 0; i < 60; i++)
        ratelimit_check("k", 60, 60, T0, &v); /* one request per second comes back */
    ratelimit_check("k", 60, 60, T0 + S - 1, &v);
    CHECK(!v.allowed);
    ratelimit_check("k", 60, 60, T0 + S, &v);
    CHECK(v.allowed && v.remaining == 0);
    ratelimit_check("k", 60, 60, T0 + S, &v);
    CHECK(!v.allowed);
    /* A minute of quiet fills the bucket again, and never beyond the limit. */
    ratelimit_check("k", 60, 60, T0 + 3600 * S, &v);
    CHECK(v.allowed && v.remaining == 59);
}

static void test_refusal_says_when_to_retry_and_when_the_bucket_is_full(void)
{
    struct ratelimit_verdict v;
    ratelimit_reset();
    for (int i = 0; i < 50; i++)
        ratelimit_check("k", 50, 60, T0, &v);
    CHECK(v.reset_epoch == T0 / S + 60); /* 50 spent: full again in 60 s */
    CHECK(v.reset_seconds == 60);
    ratelimit_check("k", 50, 60, T0, &v);
    CHECK(!v.allowed);
    CHECK(v.retry_after == 2); /* one comes back after 1.2 s, rounded up */
    CHECK(v.reset_seconds == 60);
    ratelimit_check("k", 50, 60, T0 + 1200 * 1000 * 1000, &v);
    CHECK(v.allowed);
}

static void test_remaining_never_rises_faster_than_the_refill(void)
{
    struct ratelimit_verdict v;
    int64_t now = T0, prev_remaining = 10;
    int64_t interval = 6 * S; /* 10 per minute */
    ratelimit_reset();
    srand(7);
    for (int i = 0; i < 2000; i++) {
        int64_t step = (int64_t)(rand() % 3000) * 1000 * 1000; /* 0..3 s */
        now += step;
        ratelimit_check("k", 10, 60, now, &v);
        CHECK(v.remaining >= 0 && v.remaining <= 10);
        CHECK(v.remaining <= prev_remaining + step / interval + 1);
        prev_remaining = v.remaining;
    }
}

static void test_a_clock_stepping_back_blocks_for_at_most_one_period(void)
{
    struct ratelimit_verdict v;
    ratelimit_reset();
    for (int i = 0; i < 10; i++)
        ratelimit_check("k", 10, 60, T0 + 86400 * S, &v); /* spent a day "ahead" */
    ratelimit_check("k", 10, 60, T0, &v); /* the clock is back to now */
    CHECK(!v.allowed && v.retry_after <= 60 && v.reset_seconds <= 60);
    ratelimit_check("k", 10, 60, T0 + 6 * S, &v);
    CHECK(v.allowed);
}

static void test_keys_have_their_own_buckets(void)
{
    struct ratelimit_verdict v;
    ratelimit_reset();
    for (int i = 0; i < 3; i++)
        ratelimit_check("w:a", 3, 60, T0, &v);
    ratelimit_check("w:a", 3, 60, T0, &v);
    CHECK(!v.allowed);
    ratelimit_check("w:b", 3, 60, T0, &v);
    CHECK(v.allowed && v.remaining == 2);
}

struct hammer {
    atomic_int allowed;
    atomic_int go;
};

static void *hammer_thread(void *arg)
{
    struct hammer *h = arg;
    struct ratelimit_verdict v;
    while (!atomic_load(&h->go))
        ;
    for (int i = 0; i < 20; i++) {
        ratelimit_check("w:busy", 50, 60, T0, &v);
        if (v.allowed)
            atomic_fetch_add(&h->allowed, 1);
    }
    return NULL;
}

static void test_exactly_the_limit_under_64_concurrent_threads(void)
{
    pthread_t t[64];
    struct hammer h;
    atomic_init(&h.allowed, 0);
    atomic_init(&h.go, 0);
    ratelimit_reset();
    for (int i = 0; i < 64; i++)
        CHECK(pthread_create(&t[i], NULL, hammer_thread, &h) == 0);
    atomic_store(&h.go, 1);
    for (int i = 0; i < 64; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&h.allowed) == 50);
}

static void test_refund_gives_one_request_back(void)
{
    struct ratelimit_verdict v;
    ratelimit_reset();
    for (int i = 0; i < 5; i++)
        ratelimit_check("login-fail:x", 5, 900, T0, &v);
    ratelimit_check("login-fail:x", 5, 900, T0, &v);
    CHECK(!v.allowed);
    ratelimit_refund("login-fail:x", 5, 900, T0);
    ratelimit_check("login-fail:x", 5, 900, T0, &v);
    CHECK(v.allowed);
    ratelimit_refund("never-seen", 5, 900, T0); /* harmless */
}

static void test_override_replaces_the_limit_until_a_reload_drops_it(void)
{
    struct ratelimit_verdict v;
    ratelimit_reset();
    ratelimit_overrides_begin();
    ratelimit_set_override("w:vip", 2);
    ratelimit_overrides_end();
    ratelimit_check("w:vip", 1000, 60, T0, &v);
    CHECK(v.limit == 2 && v.remaining == 1);
    ratelimit_check("w:vip", 1000, 60, T0, &v);
    ratelimit_check("w:vip", 1000, 60, T0, &v);
    CHECK(!v.allowed);
    ratelimit_overrides_begin(); /* a reload that no longer lists it */
    ratelimit_overrides_end();
    /* Back on the caller's limit; what was spent stays spent (a full minute's worth), and
     * capacity returns at the new rate: one every 60 ms. */
    ratelimit_check("w:vip", 1000, 60, T0, &v);
    CHECK(!v.allowed && v.limit == 1000);
    ratelimit_check("w:vip", 1000, 60, T0 + 60 * 1000 * 1000, &v);
    CHECK(v.allowed && v.limit == 1000);
}

static void test_a_key_too_long_to_store_is_refused(void)
{
    struct ratelimit_verdict v;
    char key[RATELIMIT_KEY_MAX + 2];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    ratelimit_check(key, 1000, 60, T0, &v);
    CHECK(!v.allowed);
}

static void test_many_keys_evict_full_buckets_not_spent_ones(void)
{
    struct ratelimit_verdict v;
    char key[32];
    ratelimit_reset();
    for (int i = 0; i < 3; i++)
        ratelimit_check("w:spent", 3, 60, T0, &v);
    /* 50k other keys (more than the table holds), each full again 1 ms after its request,
     * arriving 1 ms apart: they replace each other, never the spent bucket. */
    for (int i = 0; i < 50000; i++) {
        snprintf(key, sizeof key, "ip:%d", i);
        ratelimit_check(key, 60000, 60, T0 + (int64_t)i * 1000 * 1000, &v);
        CHECK(v.allowed);
    }
    ratelimit_check("w:spent", 3, 60, T0 + 1, &v);
    CHECK(!v.allowed);
}

static void test_checkpoint_and_restore_keep_a_spent_quota_across_a_restart(void)
{
    struct ratelimit_verdict v;
    char dir[] = "/tmp/treasury-ratelimit-XXXXXX", path[64], err[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t.db", dir);
    CHECK(storage_open(path, err, sizeof err) == 0);
    int64_t now = ratelimit_now_ns();
    ratelimit_reset();
    for (int i = 0; i < 5; i++)
        ratelimit_check("w:restart", 5, 60, now, &v);
    ratelimit_check("w:full", 5, 60, now - 3600 * S, &v); /* long full again: not kept */
    CHECK(ratelimit_checkpoint(now) == 0);
    CHECK(ratelimit_checkpoint(now) == 0); /* nothing dirty: no-op */
    ratelimit_reset(); /* the restart */
    CHECK(ratelimit_restore(now) == 0);
    ratelimit_check("w:restart", 5, 60, now, &v);
    CHECK(!v.allowed);
    ratelimit_check("w:full", 5, 60, now, &v);
    CHECK(v.allowed && v.remaining == 4);
    storage_close();
    unlink(path);
    char wal[80];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
    rmdir(dir);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_full_bucket_allows_exactly_the_limit_at_once),
        UNIT_TEST(test_capacity_comes_back_one_request_per_interval),
        UNIT_TEST(test_refusal_says_when_to_retry_and_when_the_bucket_is_full),
        UNIT_TEST(test_remaining_never_rises_faster_than_the_refill),
        UNIT_TEST(test_a_clock_stepping_back_blocks_for_at_most_one_period),
        UNIT_TEST(test_keys_have_their_own_buckets),
        UNIT_TEST(test_exactly_the_limit_under_64_concurrent_threads),
        UNIT_TEST(test_refund_gives_one_request_back),
        UNIT_TEST(test_override_replaces_the_limit_until_a_reload_drops_it),
        UNIT_TEST(test_a_key_too_long_to_store_is_refused),
        UNIT_TEST(test_many_keys_evict_full_buckets_not_spent_ones),
        UNIT_TEST(test_checkpoint_and_restore_keep_a_spent_quota_across_a_restart),
    };
    return unit_run("ratelimit", tests, sizeof tests / sizeof tests[0]);
}
