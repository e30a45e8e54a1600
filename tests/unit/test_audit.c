/* Unit tests for runtime/audit.c: records chain by hash, and any change to a stored record,
 * a removed record or a reordering breaks the chain at that record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/audit.h"
#include "runtime/storage.h"
#include "runtime/storage_sqlite.h"
#include "tests/unit/unit.h"

static char dir[] = "/tmp/treasury-audit-XXXXXX", path[80];

static struct req *fake_req(void)
{
    static struct req r;
    memset(&r, 0, sizeof r);
    arena_init(&r.arena);
    r.principal.workspace_id = "wsp_1";
    r.principal.user_id = "usr_1";
    r.request_id = "req_1";
    return &r;
}

static void setup(void)
{
    char err[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t.db", dir);
    CHECK(storage_open(path, err, sizeof err) == 0);
    CHECK(sqlite3_exec(storage_sqlite_db(),
                       "INSERT INTO workspaces (id, name, created_at, updated_at) "
                       "VALUES ('wsp_1', 'w', 'x', 'x'), ('wsp_2', 'v', 'x', 'x')",
                       NULL, NULL, NULL) == DB_OK);
}

static void teardown(void)
{
    char f[100];
    const char *suffix[] = {"", "-wal", "-shm"};
    storage_close();
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        unlink(f);
    }
    rmdir(dir);
    memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

static void write_three(struct req *r)
{
    CHECK(storage_begin(true) == 0);
    CHECK(audit_record(r, "payment.created", "payment", "pay_1", NULL, "approved", NULL) == 0);
    CHECK(audit_record(r, "payment.denied", "payment", "pay_1", "approved", "denied",
                       "because \"reasons\"") == 0);
    CHECK(audit_record(r, "payment.created", "payment", "pay_2", NULL, "approved", NULL) == 0);
    CHECK(storage_commit() == 0);
}

static int64_t verify(const char *wid)
{
    int64_t broken = -1;
    CHECK(storage_begin(false) == 0);
    CHECK(audit_verify(wid, &broken) == 0);
    storage_rollback();
    return broken;
}

static void test_an_untouched_chain_verifies(void)
{
    struct req *r = fake_req();
    setup();
    write_three(r);
    CHECK(verify("wsp_1") == 0);
    CHECK(verify("wsp_2") == 0); /* empty */
    r->principal.workspace_id = "wsp_2"; /* each workspace has its own chain from seq 1 */
    write_three(r);
    CHECK(verify("wsp_2") == 0);
    arena_release(&r->arena);
    teardown();
}

static void test_tampering_breaks_the_chain_where_it_happened(void)
{
    struct req *r = fake_req();
    setup();
    write_three(r);
    sqlite3_exec(storage_sqlite_db(), "UPDATE audit_events SET after_status = 'approved' WHERE seq = 2",
                 NULL, NULL, NULL);
    CHECK(verify("wsp_1") == 2);
    sqlite3_exec(storage_sqlite_db(), "UPDATE audit_events SET after_status = 'denied' WHERE seq = 2",
                 NULL, NULL, NULL);
    CHECK(verify("wsp_1") == 0);
    sqlite3_exec(storage_sqlite_db(), "UPDATE audit_events SET detail = NULL WHERE seq = 2", NULL, NULL,
                 NULL);
    CHECK(verify("wsp_1") == 2);
    sqlite3_exec(storage_sqlite_db(), "DELETE FROM audit_events WHERE seq = 2", NULL, NULL, NULL);
    CHECK(verify("wsp_1") == 3);
    arena_release(&r->arena);
    teardown();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_an_untouched_chain_verifies),
        UNIT_TEST(test_tampering_breaks_the_chain_where_it_happened),
    };
    return unit_run("audit", tests, sizeof tests / sizeof tests[0]);
}
