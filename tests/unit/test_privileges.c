/* runtime/privileges.c with runtime/storage.c's watch: answers are cached per (workspace,
 * subject, client), a committed change to a watched table empties the cache, a rolled-back
 * one or a change to another table does not, and failures are never cached. */
#include "runtime/privileges.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/storage.h"
#include "tests/unit/unit.h"

static char dir[64], path[96];
static int lookups;
static int answer = 1;
static uint64_t answer_bits = 0x5;

static int lookup(const char *wid, const char *sub, const char *client_id, uint64_t *allowed)
{
    lookups++;
    /* The lookup runs inside a read transaction the cache opened. */
    CHECK(storage_in_tx());
    *allowed = answer_bits ^ (strcmp(sub, "usr_b") == 0 ? 0x2 : 0) ^
               (client_id ? 0x8 : 0) ^ (strcmp(wid, "wsp_2") == 0 ? 0x10 : 0);
    return answer;
}

static void exec_in_tx(const char *sql, bool commit)
{
    CHECK(storage_begin(true) == 0);
    struct db_stmt *st = storage_prepare(sql);
    CHECK(st != NULL);
    if (st) {
        CHECK(db_step(st) == DB_DONE);
        db_reset(st);
    }
    if (commit)
        CHECK(storage_commit() == 0);
    else
        storage_rollback();
}

static void setup(void)
{
    char err[256] = "";
    snprintf(dir, sizeof dir, "/tmp/test_privileges.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(path, sizeof path, "%s/treasury.db", dir);
    if (storage_open(path, err, sizeof err) != 0) {
        fprintf(stderr, "storage_open: %s\n", err);
        exit(1);
    }
    static const char *const tables[] = {"roles_t"};
    CHECK(storage_watch(tables, 1, &privileges_changed) == 0);
    exec_in_tx("CREATE TABLE roles_t (k TEXT PRIMARY KEY, v TEXT)", true);
    exec_in_tx("CREATE TABLE other_t (k TEXT PRIMARY KEY, v TEXT)", true);
    privileges_init(&lookup);
}

static void teardown(void)
{
    storage_close();
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    char p[128];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
    rmdir(dir);
}

static void test_a_second_ask_is_answered_from_the_cache(void)
{
    uint64_t a = 0, b = 0;
    privileges_changed();
    int before = lookups;
    CHECK(privileges_current("wsp_1", "usr_a", NULL, &a) == 1);
    CHECK(privileges_current("wsp_1", "usr_a", NULL, &b) == 1);
    CHECK(a == 0x5 && b == 0x5);
    CHECK(lookups == before + 1);
    CHECK(!storage_in_tx()); /* the cache ended the read transaction it opened */
}

static void test_each_principal_workspace_and_client_has_its_own_answer(void)
{
    uint64_t a = 0, b = 0, c = 0, d = 0;
    privileges_changed();
    CHECK(privileges_current("wsp_1", "usr_a", NULL, &a) == 1);
    CHECK(privileges_current("wsp_1", "usr_b", NULL, &b) == 1);
    CHECK(privileges_current("wsp_1", "usr_a", "cli_x", &c) == 1);
    CHECK(privileges_current("wsp_2", "usr_a", NULL, &d) == 1);
    CHECK(a == 0x5 && b == 0x7 && c == 0xd && d == 0x15);
    /* Concatenations that collide as one string do not collide as keys. */
    CHECK(privileges_current("wsp_1usr", "_a", NULL, &a) == 1);
    int before = lookups;
    CHECK(privileges_current("wsp_1", "usr_a", NULL, &a) == 1 && a == 0x5);
    CHECK(lookups == before);
}

static void test_a_committed_change_to_a_watched_table_empties_the_cache(void)
{
    uint64_t a = 0;
    CHECK(privileges_current("wsp_1", "usr_a", NULL, &a) == 1);
    answer_bits = 0x1; /* what the tables say after the change */
    int before = lookups;
    exec_in_tx("INSERT INTO roles_t VALUES ('treasurer', 'payments:read')", true);
    CHECK(privileges_current("wsp_1", "usr_a", NULL, &a) == 1);
    CHECK(a == 0x1 && lookups == before + 1);
    answer_bits = 0x5;
    privileges_changed();
}

static void test_a_rolled_back_change_or_another_table_keeps_the_cache(void)
{
    uint64_t a = 0;
    CHECK(privileges_current("wsp_1", "usr_a", NULL, &a) == 1);
    int before = lookups;
    exec_in_tx("INSERT INTO roles_t VALUES ('rolled_back', 'x')", false);
    exec_in_tx("INSERT INTO other_t VALUES ('k', 'v')", true);
    CHECK(privileges_current("wsp_1", "usr_a", NULL, &a) == 1);
    CHECK(lookups == before);
    /* Nor does a later commit of another table inherit the rolled-back change. */
    exec_in_tx("INSERT INTO other_t VALUES ('k2', 'v')", true);
    CHECK(privileges_current("wsp_1", "usr_a", NULL, &a) == 1);
    CHECK(lookups == before);
}

static void test_no_standing_is_cached_and_failures_are_not(void)
{
    uint64_t a = 7;
    privileges_changed();
    answer = 0;
    CHECK(privileges_current("wsp_1", "usr_gone", NULL, &a) == 0);
    int before = lookups;
    CHECK(privileges_current("wsp_1", "usr_gone", NULL, &a) == 0);
    CHECK(lookups == before);
    answer = -1;
    CHECK(privileges_current("wsp_1", "usr_err", NULL, &a) == -1);
    answer = 1;
    CHECK(privileges_current("wsp_1", "usr_err", NULL, &a) == 1);
    CHECK(lookups == before + 2);
}

static void test_ids_too_long_to_cache_are_looked_up_every_time(void)
{
    char long_sub[PRIVILEGES_ID_MAX + 8];
    memset(long_sub, 'u', sizeof long_sub - 1);
    long_sub[sizeof long_sub - 1] = '\0';
    uint64_t a = 0;
    int before = lookups;
    CHECK(privileges_current("wsp_1", long_sub, NULL, &a) == 1);
    CHECK(privileges_current("wsp_1", long_sub, NULL, &a) == 1);
    CHECK(lookups == before + 2);
}

int main(void)
{
    setup();
    static const struct unit_test tests[] = {
        UNIT_TEST(test_a_second_ask_is_answered_from_the_cache),
        UNIT_TEST(test_each_principal_workspace_and_client_has_its_own_answer),
        UNIT_TEST(test_a_committed_change_to_a_watched_table_empties_the_cache),
        UNIT_TEST(test_a_rolled_back_change_or_another_table_keeps_the_cache),
        UNIT_TEST(test_no_standing_is_cached_and_failures_are_not),
        UNIT_TEST(test_ids_too_long_to_cache_are_looked_up_every_time),
    };
    int rc = unit_run("privileges", tests, sizeof tests / sizeof tests[0]);
    teardown();
    return rc;
}
