/* Unit tests for runtime/mail.c: what the outbox accepts, the spool's files, the bookkeeping
 * after a delivery, the start-up checks of the relay settings, and two deliverers racing for
 * one message. */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/id.h"
#include "runtime/mail.h"
#include "runtime/storage.h"
#include "tests/unit/unit.h"

static char dir[64], db[128], spool[128];

static void setup(void)
{
    char why[256] = "";
    snprintf(dir, sizeof dir, "/tmp/test_mail.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(db, sizeof db, "%s/treasury.db", dir);
    snprintf(spool, sizeof spool, "%s/mail", dir);
    if (storage_open(db, why, sizeof why) != 0) {
        fprintf(stderr, "storage_open: %s\n", why);
        exit(1);
    }
}

static void teardown(void)
{
    char cmd[200];
    mail_shutdown();
    storage_close();
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    unsetenv("TREASURY_SMTP_USERNAME");
    unsetenv("TREASURY_SMTP_PASSWORD");
}

static int enqueue(const char *to, const char *subject, const char *body, char *id)
{
    CHECK(storage_begin(true) == 0);
    int rc = mail_enqueue(to, subject, body, id, ID_MAX);
    if (rc == 0)
        CHECK(storage_commit() == 0);
    else
        storage_rollback();
    return rc;
}

static long long count(const char *sql)
{
    long long n = -1;
    CHECK(storage_begin(false) == 0);
    struct db_stmt *st = storage_prepare(sql);
    if (st && db_step(st) == DB_ROW)
        n = db_column_int64(st, 0);
    if (st)
        db_reset(st);
    storage_rollback();
    return n;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_the_outbox_refuses_what_cannot_be_sent_as_given(void)
{
    char id[ID_MAX], line[1200];
    setup();
    CHECK(enqueue("not an address", "s", "b", id) == -1);
    CHECK(enqueue("a@example.com", "two\r\nBcc: x@example.com", "b", id) == -1);
    memset(line, 'x', 999);
    line[999] = '\0';
    CHECK(enqueue("a@example.com", "s", line, id) == -1); /* a line over 998 octets */
    line[998] = '\0';
    CHECK(enqueue("a@example.com", "s", line, id) == 0);
    CHECK(id_valid(id, "mail"));
    CHECK(count("SELECT count(*) FROM mail_outbox WHERE status = 'queued'") == 1);
    teardown();
}

static void test_the_spool_gets_one_private_rfc_5322_file_and_the_body_is_cleared(void)
{
    char id[ID_MAX], err[256] = "", path[256];
    setup();
    CHECK(mail_init("", NULL, dir, err, sizeof err) == 0);
    struct stat st;
    CHECK(stat(spool, &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK(enqueue("Dana@Example.com", "Grüße aus Zürich, a subject long enough to need two words",
                  "line one\nsecret-token-123\n", id) == 0);
    CHECK(mail_deliver_due() == 1);
    snprintf(path, sizeof path, "%s/%s.eml", spool, id);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    const char *text = slurp(path);
    CHECK(text && strstr(text, "To: Dana@Example.com\r\n"));
    CHECK(text && strstr(text, "From: no-reply@treasury.invalid\r\n"));
    CHECK(text && strstr(text, "Subject: =?UTF-8?B?"));
    CHECK(text && strstr(text, "?=\r\n =?UTF-8?B?")); /* folded into several encoded words */
    CHECK(text && strstr(text, "Content-Type: text/plain; charset=utf-8\r\n"));
    CHECK(text && strstr(text, "\r\n\r\nline one\r\nsecret-token-123\r\n"));
    CHECK(count("SELECT count(*) FROM mail_outbox WHERE status = 'sent' AND body IS NULL "
                "AND attempts = 1 AND sent_at IS NOT NULL") == 1);
    CHECK(mail_deliver_due() == 0); /* delivered once */
    DIR *d = opendir(spool);
    int files = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        files += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK(files == 1);
    teardown();
}

static void test_a_failed_delivery_is_kept_and_retried_later(void)
{
    char id[ID_MAX], err[256] = "";
    setup();
    CHECK(mail_init("smtp://127.0.0.1:9", "treasury@bank.example", dir, err, sizeof err) == 0);
    CHECK(enqueue("a@example.com", "s", "body", id) == 0);
    CHECK(mail_deliver_due() == 1); /* discard port: refused */
    CHECK(count("SELECT count(*) FROM mail_outbox WHERE status = 'queued' AND attempts = 1 "
                "AND last_error IS NOT NULL AND body = 'body'") == 1);
    CHECK(mail_deliver_due() == 0); /* not due again for a second */
    teardown();
}

static void test_relay_settings_are_checked_at_start(void)
{
    char err[512];
    setup();
    CHECK(mail_init("smtp://u:p@relay.example:587", "t@bank.example", dir, err, sizeof err) ==
          -1);
    CHECK(strstr(err, "credentials") != NULL);
    CHECK(mail_init("https://relay.example", "t@bank.example", dir, err, sizeof err) == -1);
    CHECK(mail_init("smtps://relay.example", NULL, dir, err, sizeof err) == -1);
    CHECK(strstr(err, "--mail-from") != NULL);
    setenv("TREASURY_SMTP_PASSWORD", "pw", 1);
    CHECK(mail_init("smtp://relay.example:587", "t@bank.example", dir, err, sizeof err) == -1);
    CHECK(strstr(err, "TREASURY_SMTP_USERNAME") != NULL);
    setenv("TREASURY_SMTP_USERNAME", "u", 1);
    CHECK(mail_init("smtp://relay.example:587", "t@bank.example", dir, err, sizeof err) == 0);
    mail_shutdown();
    CHECK(mail_init("", "not an address", dir, err, sizeof err) == -1);
    teardown();
}

/* Two deliverers (two instances' jobs, or this one's next round while a slow one still runs)
 * both read one due message before either claims it: the claim (a compare-and-set of its next
 * attempt) lets one send it, and the other leaves it without counting a failure. The spool
 * file of the first delivery is removed before the second deliverer acts, so that a second
 * delivery would put it back. */
static struct job deliverer;
static pthread_barrier_t both_picked, first_delivered;
static int second_found, second_acted;

static void *second_deliverer(void *arg)
{
    (void)arg;
    second_found = deliverer.run();
    pthread_barrier_wait(&both_picked);
    pthread_barrier_wait(&first_delivered);
    second_acted = second_found > 0 ? deliverer.act() : -9;
    return NULL;
}

static void test_two_deliverers_of_one_due_message_deliver_it_once(void)
{
    char id[ID_MAX], err[256] = "", path[256];
    setup();
    CHECK(mail_init("", NULL, dir, err, sizeof err) == 0);
    CHECK(enqueue("a@example.com", "once", "body", id) == 0);
    snprintf(path, sizeof path, "%s/%s.eml", spool, id);
    deliverer = mail_job();
    pthread_barrier_init(&both_picked, NULL, 2);
    pthread_barrier_init(&first_delivered, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, second_deliverer, NULL);
    int found = deliverer.run();
    pthread_barrier_wait(&both_picked);
    CHECK(found == 1 && second_found == 1); /* both read it as due */
    CHECK(deliverer.act() == 0);
    struct stat st;
    CHECK(stat(path, &st) == 0);
    CHECK(unlink(path) == 0);
    pthread_barrier_wait(&first_delivered);
    pthread_join(t, NULL);
    CHECK(second_acted == 0); /* "not ours" is no failure */
    CHECK(stat(path, &st) != 0); /* and it did not deliver it again */
    CHECK(count("SELECT count(*) FROM mail_outbox WHERE status = 'sent' AND attempts = 1") == 1);
    CHECK(mail_deliver_due() == 0);
    pthread_barrier_destroy(&both_picked);
    pthread_barrier_destroy(&first_delivered);
    teardown();
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_the_outbox_refuses_what_cannot_be_sent_as_given),
        UNIT_TEST(test_the_spool_gets_one_private_rfc_5322_file_and_the_body_is_cleared),
        UNIT_TEST(test_a_failed_delivery_is_kept_and_retried_later),
        UNIT_TEST(test_relay_settings_are_checked_at_start),
        UNIT_TEST(test_two_deliverers_of_one_due_message_deliver_it_once),
    };
    return unit_run("mail", tests, sizeof tests / sizeof tests[0]);
}
