/* The mail outbox and its delivery job (runtime/mail.h). SMTP goes through libcurl: a
 * maintained client that speaks SMTP, STARTTLS and SMTPS with the same GnuTLS the HTTPS side
 * already uses, checks the relay's certificate against the system's trust store, and does the
 * SMTP dot-stuffing; writing an SMTP client here would be more code to get wrong. */
#include "runtime/mail.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/clock.h"
#include "runtime/file.h"
#include "runtime/format.h"
#include "runtime/group_commit.h"
#include "runtime/id.h"
#include "runtime/log.h"
#include "runtime/storage.h"

#define BATCH 10
#define PERIOD_MS 1000
#define BACKOFF_MAX_S 900             /* retries at 1, 2, 4 ... s, then every 15 min */
#define GIVE_UP_AFTER_S (3 * 86400)   /* then the message is marked failed, its body cleared */
#define LINE_MAX_OCTETS 998           /* RFC 5322 §2.1.1 */
#define DEFAULT_FROM "no-reply@treasury.invalid"

static struct {
    bool ready;
    bool relay;       /* an SMTP relay; else the spool */
    bool require_tls; /* smtp:// to a relay that is not on a loopback address: STARTTLS */
    char url[1024];
    char from[256];
    char username[256], password[256]; /* from the environment, never argv */
    char spool[1100];
} cfg;

/* ---- configuration ------------------------------------------------------------------------ */

static bool loopback_host(const char *h)
{
    return strcmp(h, "localhost") == 0 || strncmp(h, "127.", 4) == 0 ||
           strcmp(h, "[::1]") == 0 || strcmp(h, "::1") == 0;
}

/* Checks smtp_url and fills cfg.require_tls. 0 / -1 with err. */
static int parse_url(const char *smtp_url, char *err, size_t errlen)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *user = NULL, *pass = NULL;
    int ret = -1;
    if (!u)
        goto out;
    if (curl_url_set(u, CURLUPART_URL, smtp_url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        snprintf(err, errlen, "--smtp-url \"%s\" is not a URL (smtp://host:port or "
                              "smtps://host:port)", smtp_url);
        goto out;
    }
    if (strcmp(scheme, "smtp") != 0 && strcmp(scheme, "smtps") != 0) {
        snprintf(err, errlen, "--smtp-url must be smtp:// or smtps://, not %s://", scheme);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
        curl_url_get(u, CURLUPART_PASSWORD, &pass, 0) == CURLUE_OK) {
        snprintf(err, errlen, "--smtp-url must not carry credentials (command lines are "
                              "visible to every local user): set TREASURY_SMTP_USERNAME and "
                              "TREASURY_SMTP_PASSWORD instead");
        goto out;
    }
    cfg.require_tls = strcmp(scheme, "smtp") == 0 && !loopback_host(host);
    ret = 0;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(user);
    curl_free(pass);
    curl_url_cleanup(u);
    return ret;
}

static int copy_env(const char *name, char *out, size_t n, char *err, size_t errlen)
{
    const char *v = getenv(name);
    if (!v)
        v = "";
    if (strlen(v) >= n) {
        snprintf(err, errlen, "%s is too long", name);
        return -1;
    }
    snprintf(out, n, "%s", v);
    return 0;
}

int mail_init(const char *smtp_url, const char *from, const char *data_dir, char *err,
              size_t errlen)
{
    memset(&cfg, 0, sizeof cfg);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "cannot initialise libcurl");
        return -1;
    }
    cfg.relay = smtp_url && *smtp_url;
    if (cfg.relay) {
        if (strlen(smtp_url) >= sizeof cfg.url || parse_url(smtp_url, err, errlen) != 0)
            goto fail;
        snprintf(cfg.url, sizeof cfg.url, "%s", smtp_url);
        if (!from || !*from) {
            snprintf(err, errlen, "--smtp-url needs --mail-from (the sender address the relay "
                                  "accepts)");
            goto fail;
        }
        if (copy_env("TREASURY_SMTP_USERNAME", cfg.username, sizeof cfg.username, err,
                     errlen) != 0 ||
            copy_env("TREASURY_SMTP_PASSWORD", cfg.password, sizeof cfg.password, err,
                     errlen) != 0)
            goto fail;
        if (cfg.password[0] && !cfg.username[0]) {
            snprintf(err, errlen, "TREASURY_SMTP_PASSWORD needs TREASURY_SMTP_USERNAME");
            goto fail;
        }
    }
    if (!from || !*from)
        from = DEFAULT_FROM;
    if (!format_is_email(from) || strlen(from) >= sizeof cfg.from) {
        snprintf(err, errlen, "--mail-from \"%s\" is not an e-mail address", from);
        goto fail;
    }
    snprintf(cfg.from, sizeof cfg.from, "%s", from);
    if (strlen(data_dir) + 6 >= sizeof cfg.spool) {
        snprintf(err, errlen, "the data directory's path is too long for the mail spool");
        goto fail;
    }
    snprintf(cfg.spool, sizeof cfg.spool, "%s/mail", data_dir);
    if (!cfg.relay && mkdir(cfg.spool, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create the mail spool %s: %s", cfg.spool, strerror(errno));
        goto fail;
    }
    cfg.ready = true;
    if (cfg.relay)
        log_info("mail: delivering through %s%s as %s", cfg.url,
                 cfg.require_tls ? " (STARTTLS required)" : "", cfg.from);
    else
        log_info("mail: no --smtp-url: messages are written to %s/<id>.eml", cfg.spool);
    return 0;
fail:
    explicit_bzero(cfg.password, sizeof cfg.password);
    curl_global_cleanup();
    return -1;
}

void mail_shutdown(void)
{
    if (!cfg.ready)
        return;
    explicit_bzero(cfg.password, sizeof cfg.password);
    cfg.ready = false;
    curl_global_cleanup();
}

/* ---- queueing ----------------------------------------------------------------------------- */

static bool one_line(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

/* Body lines (LF or CRLF) of at most LINE_MAX_OCTETS, no other control characters but TAB. */
static bool sendable_body(const char *s)
{
    size_t line = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n') {
            line = 0;
            continue;
        }
        if (c == '\r' && s[1] == '\n')
            continue;
        if ((c < 0x20 && c != '\t') || c == 0x7f || ++line > LINE_MAX_OCTETS)
            return false;
    }
    return true;
}

int mail_enqueue(const char *to, const char *subject, const char *body, char *id, size_t n)
{
    char mid[ID_MAX], now[40];
    if (!format_is_email(to) || !one_line(subject) || strlen(subject) > MAIL_SUBJECT_MAX ||
        strlen(body) > MAIL_BODY_MAX || !sendable_body(body)) {
        log_error("mail: a message that cannot be sent as given was refused");
        return -1;
    }
    if (id_new_buf(mid, sizeof mid, "mail") != 0)
        return -1;
    format_now_rfc3339(now, sizeof now);
    struct db_stmt *st = storage_prepare(
        "INSERT INTO mail_outbox (id, recipient, subject, body, status, next_attempt_ms, "
        "created_at) VALUES (?, ?, ?, ?, 'queued', ?, ?)");
    if (!st)
        return -1;
    db_bind_text(st, 1, mid);
    db_bind_text(st, 2, to);
    db_bind_text(st, 3, subject);
    db_bind_text(st, 4, body);
    db_bind_int64(st, 5, clock_now_ms());
    db_bind_text(st, 6, now);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE) {
        log_error("mail: queueing failed: %s", storage_errmsg());
        return -1;
    }
    if (id)
        snprintf(id, n, "%s", mid);
    return 0;
}

/* ---- the message -------------------------------------------------------------------------- */

struct buf {
    char *p;
    size_t len, cap;
    bool failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* The subject as is when ASCII, else RFC 2047 encoded words (base64) of at most 45 octets of
 * whole UTF-8 characters each, folded onto continuation lines. */
static void put_subject(struct buf *b, const char *s)
{
    bool ascii = true;
    for (const char *p = s; *p; p++)
        ascii = ascii && (unsigned char)*p < 0x80;
    if (ascii) {
        puts_(b, s);
        return;
    }
    size_t len = strlen(s), at = 0;
    while (at < len) {
        size_t take = len - at < 45 ? len - at : 45;
        while (take < len - at && ((unsigned char)s[at + take] & 0xc0) == 0x80)
            take--; /* never split a character */
        unsigned char enc[64];
        int n = EVP_EncodeBlock(enc, (const unsigned char *)s + at, (int)take);
        if (at)
            puts_(b, "\r\n ");
        puts_(b, "=?UTF-8?B?");
        put(b, (const char *)enc, (size_t)n);
        puts_(b, "?=");
        at += take;
    }
}

struct message {
    char id[ID_MAX];
    char *to, *subject, *body;
    int64_t attempts;
    int64_t created_ms;
    int64_t due_ms; /* next_attempt_ms as read: the claim compares it */
};

static void message_free(struct message *m)
{
    free(m->to);
    free(m->subject);
    if (m->body)
        explicit_bzero(m->body, strlen(m->body));
    free(m->body);
}

/* The RFC 5322 text of m, CRLF line ends; malloc'd, NULL when out of memory. */
static char *render(const struct message *m)
{
    struct buf b = {0};
    char date[64];
    time_t t = (time_t)(m->created_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", &tm);
    puts_(&b, "Date: ");
    puts_(&b, date);
    puts_(&b, "\r\nFrom: ");
    puts_(&b, cfg.from);
    puts_(&b, "\r\nTo: ");
    puts_(&b, m->to);
    puts_(&b, "\r\nSubject: ");
    put_subject(&b, m->subject);
    puts_(&b, "\r\nMessage-ID: <");
    puts_(&b, m->id);
    puts_(&b, "@");
    puts_(&b, strchr(cfg.from, '@') + 1);
    puts_(&b, ">\r\nMIME-Version: 1.0\r\n"
              "Content-Type: text/plain; charset=utf-8\r\n"
              "Content-Transfer-Encoding: 8bit\r\n"
              "Auto-Submitted: auto-generated\r\n\r\n");
    for (const char *p = m->body; *p; p++) {
        if (*p == '\n' && (p == m->body || p[-1] != '\r'))
            puts_(&b, "\r");
        put(&b, p, 1);
    }
    if (b.len < 2 || strcmp(b.p + b.len - 2, "\r\n") != 0)
        puts_(&b, "\r\n");
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- delivery ----------------------------------------------------------------------------- */

/* <spool>/<id>.eml, written aside, synced and renamed into place, the directory synced
 * (runtime/file.h): a reader sees whole messages only, and a crash loses no delivered one. */
static int deliver_spool(const struct message *m, const char *text, char *why, size_t n)
{
    char name[ID_MAX + 8];
    snprintf(name, sizeof name, "%s.eml", m->id);
    return file_replace(cfg.spool, name, text, strlen(text), 0600, why, n);
}

struct upload {
    const char *text;
    size_t len, at;
};

static size_t read_upload(char *out, size_t size, size_t nmemb, void *arg)
{
    struct upload *u = arg;
    size_t n = size * nmemb;
    if (n > u->len - u->at)
        n = u->len - u->at;
    memcpy(out, u->text + u->at, n);
    u->at += n;
    return n;
}

static int deliver_smtp(const struct message *m, const char *text, char *why, size_t n)
{
    char errbuf[CURL_ERROR_SIZE] = "", from[300], to[300];
    struct upload up = {text, strlen(text), 0};
    struct curl_slist *rcpt = NULL;
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(why, n, "cannot start a libcurl transfer");
        return -1;
    }
    snprintf(from, sizeof from, "<%s>", cfg.from);
    snprintf(to, sizeof to, "<%s>", m->to);
    rcpt = curl_slist_append(NULL, to);
    curl_easy_setopt(c, CURLOPT_URL, cfg.url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_USE_SSL, cfg.require_tls ? (long)CURLUSESSL_ALL
                                                         : (long)CURLUSESSL_NONE);
    if (cfg.username[0]) {
        curl_easy_setopt(c, CURLOPT_USERNAME, cfg.username);
        curl_easy_setopt(c, CURLOPT_PASSWORD, cfg.password);
    }
    curl_easy_setopt(c, CURLOPT_MAIL_FROM, from);
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_upload);
    curl_easy_setopt(c, CURLOPT_READDATA, &up);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)up.len);
    CURLcode rc = rcpt ? curl_easy_perform(c) : CURLE_OUT_OF_MEMORY;
    if (rc != CURLE_OK)
        snprintf(why, n, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
    curl_slist_free_all(rcpt);
    curl_easy_cleanup(c);
    return rc == CURLE_OK ? 0 : -1;
}

/* malloc'd, unlike db_column_dup: a message outlives the transaction that loaded it and the
 * worker has no request arena; "" for NULL, which its columns (NOT NULL) never are. */
static char *dup_column(struct db_stmt *st, int col)
{
    const char *t = db_column_text(st, col);
    return strdup(t ? (const char *)t : "");
}

/* Up to BATCH due messages into ms; their number, -1 on failure. */
static int load_due(struct message *ms, int64_t now_ms)
{
    if (storage_begin(false) != 0)
        return -1;
    struct db_stmt *st = storage_prepare(
        "SELECT id, recipient, subject, body, attempts, created_at, next_attempt_ms "
        "FROM mail_outbox "
        "WHERE status = 'queued' AND next_attempt_ms <= ? ORDER BY next_attempt_ms LIMIT ?");
    if (!st) {
        storage_rollback();
        return -1;
    }
    db_bind_int64(st, 1, now_ms);
    db_bind_int64(st, 2, BATCH);
    int n = 0, rc;
    while ((rc = db_step(st)) == DB_ROW && n < BATCH) {
        struct message *m = &ms[n];
        memset(m, 0, sizeof *m);
        const char *id = db_column_text(st, 0);
        snprintf(m->id, sizeof m->id, "%s", id ? (const char *)id : "");
        m->to = dup_column(st, 1);
        m->subject = dup_column(st, 2);
        m->body = dup_column(st, 3);
        m->attempts = db_column_int64(st, 4);
        m->due_ms = db_column_int64(st, 6);
        const char *created = db_column_text(st, 5);
        m->created_ms = now_ms;
        if (created)
            format_time_parse((const char *)created, &m->created_ms);
        n++;
        if (!m->to || !m->subject || !m->body) {
            rc = DB_ERR;
            break;
        }
    }
    db_reset(st);
    storage_rollback();
    if (rc != DB_ROW && rc != DB_DONE) {
        log_error("mail: reading the outbox failed (%d)", rc);
        for (int i = 0; i < n; i++)
            message_free(&ms[i]);
        return -1;
    }
    return n;
}

/* Several instances (or a slow previous round) may have read the same due message: whoever
 * moves its next attempt from the time read to CLAIM_MS ahead, in a transaction of its own,
 * sends it; the others leave it. Should the sender die before recording the outcome, the
 * message is due again once the claim runs out (e-mail is at least once: SMTP cannot take part
 * in our transaction). 1 claimed, 0 not ours, -1 failure. */
#define CLAIM_MS (10 * 60 * 1000)

static int claim(const struct message *m, int64_t now_ms)
{
    if (storage_begin(true) != 0)
        return -1;
    struct db_stmt *st = storage_prepare(
        "UPDATE mail_outbox SET next_attempt_ms = ? WHERE id = ? AND status = 'queued' AND "
        "next_attempt_ms = ?");
    if (!st) {
        storage_rollback();
        return -1;
    }
    db_bind_int64(st, 1, now_ms + CLAIM_MS);
    db_bind_text(st, 2, m->id);
    db_bind_int64(st, 3, m->due_ms);
    int rc = db_step(st);
    int64_t changed = storage_changes();
    db_reset(st);
    if (rc != DB_DONE || storage_commit() != 0) {
        storage_rollback();
        /* Another instance claiming it at the same moment made ours fail: not ours. */
        return storage_should_retry() ? 0 : -1;
    }
    return changed == 1;
}

/* Records the outcome of one attempt. 0 / -1. */
static int record(const struct message *m, bool sent, const char *why, int64_t now_ms)
{
    char now[40];
    format_time_rfc3339(now_ms, now, sizeof now);
    int64_t attempts = m->attempts + 1;
    bool give_up = !sent && now_ms - m->created_ms >= (int64_t)GIVE_UP_AFTER_S * 1000;
    int64_t delay_s = attempts >= 11 ? BACKOFF_MAX_S : (int64_t)1 << (attempts - 1);
    if (delay_s > BACKOFF_MAX_S)
        delay_s = BACKOFF_MAX_S;
    if (storage_begin(true) != 0)
        return -1;
    struct db_stmt *st = storage_prepare(
        "UPDATE mail_outbox SET status = ?1, attempts = ?2, last_error = ?3, "
        "next_attempt_ms = ?4, sent_at = ?5, body = CASE WHEN ?1 = 'queued' THEN body END "
        "WHERE id = ?6 AND status = 'queued'");
    if (!st) {
        storage_rollback();
        return -1;
    }
    db_bind_text(st, 1, sent ? "sent" : give_up ? "failed" : "queued");
    db_bind_int64(st, 2, attempts);
    if (sent)
        db_bind_null(st, 3);
    else
        db_bind_text(st, 3, why);
    db_bind_int64(st, 4, now_ms + delay_s * 1000);
    if (sent)
        db_bind_text(st, 5, now);
    else
        db_bind_null(st, 5);
    db_bind_text(st, 6, m->id);
    int rc = db_step(st);
    db_reset(st);
    if (rc != DB_DONE || storage_commit() != 0) {
        log_error("mail: recording the delivery of %s failed", m->id);
        storage_rollback();
        return -1;
    }
    if (sent)
        log_info("mail: %s delivered (%s, attempt %lld)", m->id, cfg.relay ? "relay" : "spool",
                 (long long)attempts);
    else if (give_up)
        log_error("mail: %s not delivered after %lld attempts; given up: %s", m->id,
                  (long long)attempts, why);
    else
        log_warn("mail: %s not delivered (attempt %lld), retrying in %lld s: %s", m->id,
                 (long long)attempts, (long long)delay_s, why);
    return 0;
}

/* The round's messages, loaded by pick_due and delivered (and freed) by deliver_picked on the
 * same thread: the job runner's (one thread runs the job's rounds, runtime/job_runner.h), or a
 * test's. Each thread's round is its own, so that two threads are two deliverers, as two
 * instances are (tests/unit/test_mail.c races them). */
static _Thread_local struct message picked[BATCH];
static _Thread_local int picked_n;
static _Thread_local int64_t picked_at_ms;

/* The job's run: the due messages, read only. How many, or -1. */
static int pick_due(void)
{
    if (!cfg.ready)
        return 0;
    picked_at_ms = clock_now_ms();
    picked_n = load_due(picked, picked_at_ms);
    return picked_n;
}

/* The job's act, once the messages are durable (a message a crash could still take back, such
 * as an invitation's, is never sent): each claimed, sent and its outcome recorded. 0 / -1. */
static int deliver_picked(void)
{
    struct message *ms = picked;
    int64_t now_ms = picked_at_ms;
    int n = picked_n, failed = 0;
    picked_n = 0;
    for (int i = 0; i < n; i++) {
        int mine = claim(&ms[i], now_ms);
        if (mine <= 0) {
            failed |= mine < 0;
            message_free(&ms[i]);
            continue;
        }
        char why[CURL_ERROR_SIZE + 64] = "out of memory";
        char *text = render(&ms[i]);
        int rc = !text ? -1
                 : cfg.relay ? deliver_smtp(&ms[i], text, why, sizeof why)
                             : deliver_spool(&ms[i], text, why, sizeof why);
        if (text) {
            explicit_bzero(text, strlen(text));
            free(text);
        }
        if (record(&ms[i], rc == 0, why, clock_now_ms()) != 0)
            failed = 1;
        message_free(&ms[i]);
    }
    return failed ? -1 : 0;
}

int mail_deliver_due(void)
{
    int n = pick_due();
    if (n <= 0)
        return n;
    group_commit_wait_durable(group_commit_visible()); /* as the job runner does */
    return deliver_picked() == 0 ? n : -1;
}

struct job mail_job(void)
{
    struct job j = {.name = "mail", .run = pick_due, .act = deliver_picked, .batch = BATCH,
                    .period_ms = PERIOD_MS};
    return j;
}
