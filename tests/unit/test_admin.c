/* Unit tests for handlers/admin_cli.c: bootstrap and the `admin` subcommands against a real
 * database in a temporary directory, output captured in memory. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "handlers/admin_cli.h"
#include "runtime/log.h"
#include "runtime/password.h"
#include "runtime/storage.h"
#include "runtime/storage_sqlite.h"
#include "tests/unit/unit.h"

#define OUT_MAX 8192

static char dir[64];
static char path[128];
static char out[OUT_MAX];
static char err[OUT_MAX];

static void clear_env(void)
{
    unsetenv("TREASURY_WORKSPACE_NAME");
    unsetenv("TREASURY_ADMIN_EMAIL");
    unsetenv("TREASURY_ADMIN_PASSWORD");
    unsetenv("TREASURY_USER_PASSWORD");
}

static void setup(void)
{
    char why[256] = "";
    clear_env();
    snprintf(dir, sizeof dir, "/tmp/test_admin.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(path, sizeof path, "%s/treasury.db", dir);
    if (storage_open(path, why, sizeof why) != 0) {
        fprintf(stderr, "storage_open: %s\n", why);
        exit(1);
    }
}

static void teardown(void)
{
    char p[160];
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    storage_close();
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
    rmdir(dir);
    clear_env();
}

/* Copies a memstream's text into a fixed buffer the checks can read; fclose() publishes the
 * final buffer and length. */
static void take(char **buf, size_t *len, FILE *f, char *dst)
{
    fclose(f);
    size_t n = *len < OUT_MAX - 1 ? *len : OUT_MAX - 1;
    memcpy(dst, *buf, n);
    dst[n] = '\0';
    free(*buf);
}

/* admin_main with the NULL-terminated arguments after "admin"; stdout/stderr into out/err. */
static int run(const char *first, ...)
{
    char *argv[16];
    int argc = 0;
    va_list ap;
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    argv[argc++] = (char *)(uintptr_t) "admin";
    va_start(ap, first);
    for (const char *a = first; a && argc < 15; a = va_arg(ap, const char *))
        argv[argc++] = (char *)(uintptr_t)a;
    va_end(ap);
    argv[argc] = NULL;
    FILE *o = open_memstream(&obuf, &olen);
    FILE *e = open_memstream(&ebuf, &elen);
    int rc = admin_main(argc, argv, o, e, NULL, NULL);
    take(&obuf, &olen, o, out);
    take(&ebuf, &elen, e, err);
    return rc;
}

static int bootstrap(void)
{
    char *obuf = NULL;
    size_t olen = 0;
    FILE *o = open_memstream(&obuf, &olen);
    int rc = admin_bootstrap(o, err, sizeof err);
    take(&obuf, &olen, o, out);
    return rc;
}

static long long count(const char *sql)
{
    struct db_stmt *st = storage_prepare(sql);
    if (!st || db_step(st) != DB_ROW)
        return -1;
    long long v = db_column_int64(st, 0);
    db_reset(st);
    return v;
}

/* First column of the first row for one text parameter, into buf. */
static const char *lookup(const char *sql, const char *param, char *buf, size_t n)
{
    struct db_stmt *st = storage_prepare(sql);
    if (!st)
        return NULL;
    if (param)
        db_bind_text(st, 1, param);
    if (db_step(st) != DB_ROW) {
        db_reset(st);
        return NULL;
    }
    const char *t = db_column_text(st, 0);
    snprintf(buf, n, "%s", t ? (const char *)t : "");
    db_reset(st);
    return buf;
}

/* The first "wsp_..." id in text. */
static const char *workspace_in(const char *text, char *buf, size_t n)
{
    const char *p = strstr(text, "wsp_");
    if (!p)
        return NULL;
    size_t len = 4 + strspn(p + 4, "0123456789abcdefghjkmnpqrstvwxyzABCDEFGHJKMNPQRSTVWXYZ");
    snprintf(buf, n, "%.*s", (int)len, p);
    return buf;
}

/* The password after "generated password for EMAIL: ". */
static const char *generated_password(const char *email, char *buf, size_t n)
{
    char marker[300];
    snprintf(marker, sizeof marker, "generated password for %s: ", email);
    const char *p = strstr(out, marker);
    if (!p)
        return NULL;
    p += strlen(marker);
    snprintf(buf, n, "%.*s", (int)strcspn(p, "\n"), p);
    return buf;
}

static bool password_is(const char *email_norm, const char *password)
{
    char hash[PASSWORD_HASH_MAX];
    if (!lookup("SELECT password_hash FROM users WHERE email_norm = ?", email_norm, hash,
                sizeof hash))
        return false;
    return password_verify(password, hash);
}

static void test_bootstrap_creates_one_workspace_and_owner_with_generated_password(void)
{
    char pw[64], ws[64], buf[64];
    setup();
    CHECK(bootstrap() == 0);
    CHECK(count("SELECT count(*) FROM workspaces") == 1);
    CHECK(count("SELECT count(*) FROM users") == 1);
    CHECK(count("SELECT count(*) FROM members WHERE role = 'owner'") == 1);
    CHECK_STR(lookup("SELECT name FROM workspaces", NULL, buf, sizeof buf), "Default workspace");
    CHECK(workspace_in(out, ws, sizeof ws) != NULL);
    CHECK_STR(lookup("SELECT id FROM workspaces", NULL, buf, sizeof buf), ws);
    CHECK(generated_password("admin@example.com", pw, sizeof pw) != NULL);
    CHECK(strlen(pw) == 20);
    CHECK(password_is("admin@example.com", pw));
    CHECK_STR(lookup("SELECT status FROM users", NULL, buf, sizeof buf), "active");
    teardown();
}

static void test_second_bootstrap_does_nothing(void)
{
    setup();
    CHECK(bootstrap() == 0);
    CHECK(bootstrap() == 0);
    CHECK_STR(out, "");
    CHECK(count("SELECT count(*) FROM workspaces") == 1);
    CHECK(count("SELECT count(*) FROM users") == 1);
    CHECK(!storage_in_tx());
    teardown();
}

static void test_bootstrap_takes_name_email_and_password_from_environment(void)
{
    char buf[128];
    setup();
    setenv("TREASURY_WORKSPACE_NAME", "Acme Treasury", 1);
    setenv("TREASURY_ADMIN_EMAIL", "Root@Acme.Test", 1);
    setenv("TREASURY_ADMIN_PASSWORD", "correct horse battery", 1);
    CHECK(bootstrap() == 0);
    CHECK(strstr(out, "generated password") == NULL);
    CHECK(strstr(out, "correct horse battery") == NULL);
    CHECK_STR(lookup("SELECT name FROM workspaces", NULL, buf, sizeof buf), "Acme Treasury");
    CHECK_STR(
        lookup("SELECT email FROM users WHERE email_norm = ?", "root@acme.test", buf, sizeof buf),
        "Root@Acme.Test");
    CHECK(password_is("root@acme.test", "correct horse battery"));
    teardown();
}

static void test_bootstrap_refuses_a_short_password_and_creates_nothing(void)
{
    setup();
    setenv("TREASURY_ADMIN_PASSWORD", "short", 1);
    CHECK(bootstrap() == -1);
    CHECK(strstr(err, "TREASURY_ADMIN_PASSWORD") != NULL);
    CHECK(count("SELECT count(*) FROM workspaces") == 0);
    CHECK(count("SELECT count(*) FROM users") == 0);
    CHECK(!storage_in_tx());
    teardown();
}

static void test_bootstrap_refuses_a_bad_admin_email(void)
{
    setup();
    setenv("TREASURY_ADMIN_EMAIL", "not-an-email", 1);
    CHECK(bootstrap() == -1);
    CHECK(strstr(err, "TREASURY_ADMIN_EMAIL") != NULL);
    CHECK(count("SELECT count(*) FROM workspaces") == 0);
    teardown();
}

static void test_create_workspace_with_a_new_owner(void)
{
    char ws[64], pw[64], buf[64];
    setup();
    CHECK(run("create-workspace", "--name", "Operations", "--owner-email", "Ops@Example.com",
              NULL) == 0);
    CHECK(workspace_in(out, ws, sizeof ws) != NULL);
    CHECK_STR(lookup("SELECT name FROM workspaces WHERE id = ?", ws, buf, sizeof buf),
              "Operations");
    CHECK(generated_password("Ops@Example.com", pw, sizeof pw) != NULL);
    CHECK(password_is("ops@example.com", pw));
    CHECK_STR(lookup("SELECT role FROM members WHERE workspace_id = ?", ws, buf, sizeof buf),
              "owner");
    teardown();
}

/* A stand-in for the handlers' invitations (handlers/admin_cli.h admin_invite_fn). */
static char invited[3][128];
static int invitations;

static int fake_invite(const char *workspace_id, const char *email, const char *role,
                       const char *base_url, const char *request_id, char *id, size_t n,
                       char *why, size_t whylen)
{
    (void)base_url;
    (void)request_id;
    (void)why;
    (void)whylen;
    snprintf(invited[0], sizeof invited[0], "%s", workspace_id);
    snprintf(invited[1], sizeof invited[1], "%s", email);
    snprintf(invited[2], sizeof invited[2], "%s", role);
    snprintf(id, n, "inv_01hv3k0000000000000000000%c", (char)('a' + invitations++));
    return 0;
}

static void test_create_workspace_invites_an_existing_user_instead_of_making_them_owner(void)
{
    char ws[64];
    setup();
    CHECK(bootstrap() == 0);
    /* Without invitations, an existing account is refused and nothing is created. */
    admin_set_inviter(NULL, NULL);
    CHECK(run("create-workspace", "--name=Second", "--owner-email=ADMIN@example.com", NULL) == 1);
    CHECK(strstr(err, "already has an account") != NULL);
    CHECK(count("SELECT count(*) FROM workspaces") == 1);
    admin_set_inviter(&fake_invite, "https://treasury.example");
    CHECK(run("create-workspace", "--name=Second", "--owner-email=ADMIN@example.com", NULL) == 0);
    CHECK(strstr(out, "generated password") == NULL);
    CHECK(strstr(out, "already has an account") != NULL && strstr(out, "inv_") != NULL);
    CHECK(workspace_in(out, ws, sizeof ws) != NULL);
    CHECK_STR(invited[0], ws);
    CHECK_STR(invited[1], "ADMIN@example.com");
    CHECK_STR(invited[2], "owner");
    CHECK(count("SELECT count(*) FROM users") == 1);
    CHECK(count("SELECT count(*) FROM workspaces") == 2);
    CHECK(count("SELECT count(*) FROM members") == 1); /* not attached */
    admin_set_inviter(NULL, NULL);
    teardown();
}

static void test_create_user_refuses_an_existing_account_and_invite_user_invites_it(void)
{
    char first[64], second[64];
    setup();
    CHECK(bootstrap() == 0);
    CHECK(workspace_in(out, first, sizeof first) != NULL);
    CHECK(run("create-workspace", "--name=Second", "--owner-email=other@example.com", NULL) == 0);
    CHECK(workspace_in(out, second, sizeof second) != NULL);
    CHECK(run("create-user", "--workspace", second, "--email", "Admin@Example.com", "--role",
              "viewer", NULL) == 1);
    CHECK(strstr(err, "already has an account") != NULL && strstr(err, "invite-user") != NULL);
    CHECK(count("SELECT count(*) FROM members") == 2);
    admin_set_inviter(&fake_invite, "https://treasury.example");
    CHECK(run("invite-user", "--workspace", second, "--email", "Admin@Example.com", "--role",
              "viewer", NULL) == 0);
    CHECK(strstr(out, "inv_") != NULL && strstr(out, "after signing in") != NULL);
    CHECK_STR(invited[0], second);
    CHECK_STR(invited[2], "viewer");
    CHECK(count("SELECT count(*) FROM members") == 2); /* still only invited */
    CHECK(run("invite-user", "--workspace", first, "--email", "admin@example.com", "--role",
              "viewer", NULL) == 1);
    CHECK(strstr(err, "already a member") != NULL);
    admin_set_inviter(NULL, NULL);
    teardown();
}

static void test_create_user_adds_a_viewer_with_the_environment_password(void)
{
    char ws[64], buf[64];
    setup();
    CHECK(bootstrap() == 0);
    CHECK(workspace_in(out, ws, sizeof ws) != NULL);
    setenv("TREASURY_USER_PASSWORD", "viewer password 1", 1);
    CHECK(run("create-user", "--workspace", ws, "--email", "viewer@example.com", "--role", "viewer",
              NULL) == 0);
    CHECK(strstr(out, "generated password") == NULL);
    CHECK(password_is("viewer@example.com", "viewer password 1"));
    CHECK_STR(lookup("SELECT m.role FROM members m JOIN users u ON u.id = m.user_id "
                     "WHERE u.email_norm = ?",
                     "viewer@example.com", buf, sizeof buf),
              "viewer");
    teardown();
}

static void test_create_user_generates_and_prints_a_password_once(void)
{
    char ws[64], pw[64];
    setup();
    CHECK(bootstrap() == 0);
    CHECK(workspace_in(out, ws, sizeof ws) != NULL);
    CHECK(run("create-user", "--workspace", ws, "--email", "new@example.com", "--role", "owner",
              NULL) == 0);
    CHECK(generated_password("new@example.com", pw, sizeof pw) != NULL);
    CHECK(password_is("new@example.com", pw));
    teardown();
}

static void test_create_user_refuses_a_duplicate_membership(void)
{
    char ws[64];
    setup();
    CHECK(bootstrap() == 0);
    CHECK(workspace_in(out, ws, sizeof ws) != NULL);
    CHECK(run("create-user", "--workspace", ws, "--email", "v@example.com", "--role", "viewer",
              NULL) == 0);
    CHECK(run("create-user", "--workspace", ws, "--email", "V@EXAMPLE.COM", "--role", "owner",
              NULL) == 1);
    CHECK(strstr(err, "already a member") != NULL);
    CHECK(count("SELECT count(*) FROM members") == 2);
    CHECK(count("SELECT count(*) FROM members WHERE role = 'viewer'") == 1);
    CHECK(!storage_in_tx());
    teardown();
}

static void test_create_user_rejects_a_bad_email(void)
{
    char ws[64];
    setup();
    CHECK(bootstrap() == 0);
    CHECK(workspace_in(out, ws, sizeof ws) != NULL);
    CHECK(run("create-user", "--workspace", ws, "--email", "nobody-at-example", "--role", "viewer",
              NULL) == 2);
    CHECK(strstr(err, "not a valid email") != NULL);
    CHECK(count("SELECT count(*) FROM users") == 1);
    teardown();
}

static void test_create_user_rejects_an_unknown_role_or_workspace(void)
{
    setup();
    CHECK(bootstrap() == 0);
    CHECK(run("create-user", "--workspace", "wsp_01hv3k0000000000000000000z", "--email",
              "a@example.com", "--role", "viewer", NULL) == 1);
    CHECK(strstr(err, "no workspace") != NULL);
    CHECK(run("create-user", "--workspace", "nope", "--email", "a@example.com", "--role", "viewer",
              NULL) == 2);
    CHECK(run("create-user", "--workspace", "wsp_01hv3k0000000000000000000z", "--email",
              "a@example.com", "--role", "superuser", NULL) == 2);
    CHECK(strstr(err, "neither a built-in role") != NULL);
    CHECK(count("SELECT count(*) FROM users") == 1);
    teardown();
}

static void test_create_user_accepts_a_custom_role_of_the_workspace(void)
{
    char ws[64], sql[256];
    setup();
    CHECK(bootstrap() == 0);
    CHECK(workspace_in(out, ws, sizeof ws) != NULL);
    snprintf(sql, sizeof sql,
             "INSERT INTO roles (workspace_id, key, name, scopes, version, created_at, "
             "updated_at) VALUES ('%s', 'fx_desk', 'FX desk', 'rates:read', 1, 'x', 'x')",
             ws);
    CHECK(sqlite3_exec(storage_sqlite_db(), sql, NULL, NULL, NULL) == DB_OK);
    setenv("TREASURY_USER_PASSWORD", "fx desk password 1", 1);
    CHECK(run("create-user", "--workspace", ws, "--email", "fx@example.com", "--role", "fx_desk",
              NULL) == 0);
    CHECK(count("SELECT count(*) FROM members WHERE role = 'fx_desk'") == 1);
    CHECK(!storage_in_tx());
    teardown();
}

static void test_create_workspace_rejects_bad_names(void)
{
    char long_name[160];
    setup();
    memset(long_name, 'x', 141);
    long_name[141] = '\0';
    CHECK(run("create-workspace", "--name", long_name, "--owner-email", "a@example.com", NULL) ==
          2);
    CHECK(run("create-workspace", "--name", "", "--owner-email", "a@example.com", NULL) == 2);
    CHECK(run("create-workspace", "--name", "tab\there", "--owner-email", "a@example.com", NULL) ==
          2);
    long_name[140] = '\0';
    CHECK(run("create-workspace", "--name", long_name, "--owner-email", "a@example.com", NULL) ==
          0);
    CHECK(count("SELECT count(*) FROM workspaces") == 1);
    teardown();
}

static void test_list_workspaces_prints_a_table_and_json(void)
{
    char ws[64];
    setup();
    CHECK(bootstrap() == 0);
    CHECK(workspace_in(out, ws, sizeof ws) != NULL);
    setenv("TREASURY_USER_PASSWORD", "viewer password 1", 1);
    CHECK(run("create-user", "--workspace", ws, "--email", "v@example.com", "--role", "viewer",
              NULL) == 0);
    CHECK(run("list-workspaces", NULL) == 0);
    CHECK(strncmp(out, "ID", 2) == 0);
    CHECK(strstr(out, "NAME") != NULL && strstr(out, "CREATED_AT") != NULL &&
          strstr(out, "MEMBERS") != NULL);
    CHECK(strstr(out, ws) != NULL);
    CHECK(strstr(out, "Default workspace") != NULL);
    CHECK(strstr(out, "  2        default\n") != NULL);
    CHECK(run("list-workspaces", "--json", NULL) == 0);
    CHECK(out[0] == '[');
    CHECK(strstr(out, ws) != NULL);
    CHECK(strstr(out, "\"name\":\"Default workspace\"") != NULL);
    CHECK(strstr(out, "\"members\":2") != NULL);
    CHECK(strstr(out, "\"rate_limit_per_minute\":null") != NULL);
    CHECK(!storage_in_tx());
    teardown();
}

static void test_set_rate_limit_gives_a_workspace_its_own_quota_and_back(void)
{
    char ws[64];
    setup();
    CHECK(bootstrap() == 0);
    CHECK(workspace_in(out, ws, sizeof ws) != NULL);
    CHECK(run("set-rate-limit", "--workspace", ws, "--per-minute", "5000", NULL) == 0);
    CHECK(strstr(out, "5000 requests per minute") != NULL);
    CHECK(count("SELECT rate_limit_per_minute FROM workspaces") == 5000);
    CHECK(run("list-workspaces", NULL) == 0);
    CHECK(strstr(out, "5000/min") != NULL);
    CHECK(run("set-rate-limit", "--workspace", ws, "--per-minute", "default", NULL) == 0);
    CHECK(count("SELECT count(*) FROM workspaces WHERE rate_limit_per_minute IS NULL") == 1);
    CHECK(run("set-rate-limit", "--workspace", ws, "--per-minute", "0", NULL) == 2);
    CHECK(run("set-rate-limit", "--workspace", ws, "--per-minute", "1000000001", NULL) == 2);
    CHECK(run("set-rate-limit", "--workspace", ws, "--per-minute", "12x", NULL) == 2);
    CHECK(run("set-rate-limit", "--workspace", "acme", "--per-minute", "10", NULL) == 2);
    CHECK(run("set-rate-limit", "--workspace", "wsp_00000000000000000000000000", "--per-minute",
              "10", NULL) == 1);
    CHECK(strstr(err, "no workspace") != NULL);
    CHECK(count("SELECT count(*) FROM workspaces WHERE rate_limit_per_minute IS NULL") == 1);
    CHECK(!storage_in_tx());
    teardown();
}

static void test_usage_errors_exit_2_and_help_exits_0(void)
{
    setup();
    CHECK(run(NULL) == 2);
    CHECK(strstr(err, "usage:") != NULL);
    CHECK(run("frobnicate", NULL) == 2);
    CHECK(strstr(err, "unknown command") != NULL);
    CHECK(run("create-workspace", "--name", "X", NULL) == 2);
    CHECK(strstr(err, "--owner-email is required") != NULL);
    CHECK(run("create-workspace", "--name", "X", "--owner-email", "a@example.com", "--colour",
              "red", NULL) == 2);
    CHECK(strstr(err, "unknown option") != NULL);
    CHECK(run("create-workspace", "--name", "X", "--name", "Y", "--owner-email", "a@example.com",
              NULL) == 2);
    CHECK(run("create-workspace", "--name", NULL) == 2);
    CHECK(run("list-workspaces", "extra", NULL) == 2);
    CHECK(run("--help", NULL) == 0);
    CHECK(strstr(out, "create-workspace") != NULL);
    CHECK(run("create-user", "--help", NULL) == 0);
    CHECK(strstr(out, "--role ROLE") != NULL);
    CHECK(run("list-workspaces", "--help", NULL) == 0);
    CHECK(count("SELECT count(*) FROM workspaces") == 0);
    teardown();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_bootstrap_creates_one_workspace_and_owner_with_generated_password),
        UNIT_TEST(test_second_bootstrap_does_nothing),
        UNIT_TEST(test_bootstrap_takes_name_email_and_password_from_environment),
        UNIT_TEST(test_bootstrap_refuses_a_short_password_and_creates_nothing),
        UNIT_TEST(test_bootstrap_refuses_a_bad_admin_email),
        UNIT_TEST(test_create_workspace_with_a_new_owner),
        UNIT_TEST(test_create_workspace_invites_an_existing_user_instead_of_making_them_owner),
        UNIT_TEST(test_create_user_refuses_an_existing_account_and_invite_user_invites_it),
        UNIT_TEST(test_create_user_adds_a_viewer_with_the_environment_password),
        UNIT_TEST(test_create_user_generates_and_prints_a_password_once),
        UNIT_TEST(test_create_user_refuses_a_duplicate_membership),
        UNIT_TEST(test_create_user_rejects_a_bad_email),
        UNIT_TEST(test_create_user_rejects_an_unknown_role_or_workspace),
        UNIT_TEST(test_create_user_accepts_a_custom_role_of_the_workspace),
        UNIT_TEST(test_create_workspace_rejects_bad_names),
        UNIT_TEST(test_list_workspaces_prints_a_table_and_json),
        UNIT_TEST(test_set_rate_limit_gives_a_workspace_its_own_quota_and_back),
        UNIT_TEST(test_usage_errors_exit_2_and_help_exits_0),
    };
    log_init(LOG_FORMAT_TEXT);
    password_set_cost(10);
    return unit_run("admin", tests, sizeof tests / sizeof tests[0]);
}
