/* Unit tests for runtime/revocation.c: membership, expiry, and loading revoked sessions from
 * the database. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/format.h"
#include "runtime/req.h"
#include "runtime/revocation.h"
#include "runtime/storage.h"
#include "tests/unit/unit.h"

static void test_nothing_is_revoked_at_first(void)
{
    revocation_reset();
    CHECK(!revocation_contains("ses_a"));
    CHECK(!revocation_contains(""));
    CHECK(!revocation_contains(NULL));
}

static void test_added_ids_are_revoked_and_others_not(void)
{
    char id[32];
    revocation_reset();
    for (int i = 0; i < 5000; i++) {
        snprintf(id, sizeof id, "ses_%d", i);
        revocation_add(id, 2000000000);
    }
    CHECK(revocation_contains("ses_0") && revocation_contains("ses_4999"));
    CHECK(!revocation_contains("ses_5000") && !revocation_contains("ses_"));
    revocation_add("ses_0", 1); /* an earlier expiry never shortens an entry */
    CHECK(revocation_contains("ses_0"));
}

static void test_too_long_ids_are_ignored(void)
{
    char id[REVOCATION_ID_MAX + 8];
    memset(id, 'x', sizeof id - 1);
    id[sizeof id - 1] = '\0';
    revocation_reset();
    revocation_add(id, 2000000000);
    CHECK(!revocation_contains(id));
}

/* A source as the handlers supply one (handlers_revocations): sessions revoked at a time, kept
 * a token lifetime from then, and a disabled principal kept for good. */
static int64_t source_now;
static int source_calls;

static int test_source(int64_t now_s)
{
    source_calls++;
    struct {
        const char *id;
        int64_t revoked_s;
    } rows[] = {{"ses_recent", source_now - 3600}, {"ses_old", source_now - 3 * 86400}};
    for (size_t i = 0; i < 2; i++) {
        if (rows[i].revoked_s > now_s - REVOCATION_TOKEN_LIFETIME_S)
            revocation_add(rows[i].id, rows[i].revoked_s + REVOCATION_TOKEN_LIFETIME_S);
    }
    revocation_add("sa_disabled", INT64_MAX);
    return 0;
}

static int failing_source(int64_t now_s)
{
    (void)now_s;
    return -1;
}

static void test_load_adds_what_the_source_lists_and_drops_expired_entries(void)
{
    char dir[] = "/tmp/treasury-revocation-XXXXXX", path[64], err[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t.db", dir);
    CHECK(storage_open(path, err, sizeof err) == 0);
    int64_t now = 1800000000;
    source_now = now;
    revocation_set_source(&test_source);
    revocation_reset();
    revocation_add("ses_gone", now - 1); /* its tokens expired a second ago */
    CHECK(revocation_load(now) == 0);
    CHECK(source_calls == 1);
    CHECK(revocation_contains("ses_recent"));
    CHECK(!revocation_contains("ses_old"));
    CHECK(!revocation_contains("ses_gone"));
    CHECK(revocation_contains("sa_disabled"));
    CHECK(!storage_in_tx()); /* the source ran in a read transaction that is over */
    /* Loaded entries expire a token lifetime after their revocation, not after the load. */
    CHECK(revocation_load(now - 3600 + REVOCATION_TOKEN_LIFETIME_S + 1) == 0);
    CHECK(!revocation_contains("ses_recent"));
    CHECK(revocation_contains("sa_disabled"));
    /* A source that fails: reported, and what was known stays. */
    revocation_set_source(&failing_source);
    CHECK(revocation_load(now) == -1);
    CHECK(revocation_contains("sa_disabled"));
    revocation_set_source(NULL);
    storage_close();
    char f[80];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        unlink(f);
    }
    rmdir(dir);
}

static void test_after_commit_revokes_only_once_published(void)
{
    revocation_reset();
    struct req r;
    memset(&r, 0, sizeof r);
    arena_init(&r.arena);
    revocation_after_commit(&r, "ses_queued_one", INT64_MAX);
    revocation_after_commit(&r, "sat_queued_two", INT64_MAX);
    CHECK(!revocation_contains("ses_queued_one")); /* not before the commit */
    struct req other = r;
    other.revocations = NULL;
    revocation_publish(&other); /* another request's list: nothing */
    CHECK(!revocation_contains("ses_queued_one"));
    revocation_publish(&r);
    CHECK(revocation_contains("ses_queued_one") && revocation_contains("sat_queued_two"));
    arena_release(&r.arena);
    revocation_reset();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_nothing_is_revoked_at_first),
        UNIT_TEST(test_added_ids_are_revoked_and_others_not),
        UNIT_TEST(test_too_long_ids_are_ignored),
        UNIT_TEST(test_after_commit_revokes_only_once_published),
        UNIT_TEST(test_load_adds_what_the_source_lists_and_drops_expired_entries),
    };
    return unit_run("revocation", tests, sizeof tests / sizeof tests[0]);
}
