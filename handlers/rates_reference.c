/* The rates API's reference rates: the European Central Bank's euro reference-rate file
 * (`eurofxref`, daily, 90-day and historical files share one XML format) imported all or
 * nothing, the rates of a publication day (the last one before a day without), and cross
 * rates through EUR. The only writes of reference_publications and reference_rates.
 *
 * The file is parsed with expat, streaming and namespace-aware: the envelope is
 * gesmes:Envelope, and its Cube elements (eurofxref namespace) nest three deep - the
 * container, one per publication (`time`), one per rate (`currency`, `rate`). A document type
 * declaration stops the parse (the ECB file has none, and it is where entity expansion
 * lives). Rates are kept as the text published and computed on as exact decimals. */
#include "generated/rates_api.h"

#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/rates.h"
#include "runtime/audit.h"
#include "runtime/clock.h"
#include "runtime/format.h"
#include "runtime/log.h"
#include "runtime/storage.h"

#define NS_GESMES "http://www.gesmes.org/xml/2002-08-01"
#define NS_ECB "http://www.ecb.int/vocabulary/2002-08-01/eurofxref"
#define ENVELOPE NS_GESMES "|Envelope"
#define CUBE NS_ECB "|Cube"
#define SOURCE "ecb"
/* More currencies than a ReferenceRateSet or an import's list may name (maxItems). */
#define MAX_CURRENCIES 200

static int db_failed(const char *what)
{
    log_error("reference rates: %s failed: %s", what, storage_errmsg());
    return -1;
}

static const char *today_text(struct req *r)
{
    char day[11];
    rates_today_date(day);
    return arena_strdup(&r->arena, day);
}

static const char *now_text(struct req *r)
{
    char buf[40];
    format_now_rfc3339(buf, sizeof buf);
    return arena_strdup(&r->arena, buf);
}

/* A rate as the spec's Rate admits it: a positive decimal, at most 10 places and 8 integer
 * digits. */
static bool rate_parse(const char *s, struct decimal *out)
{
    static const struct decimal limit = {100000000, 0};
    return s && decimal_parse(s, DECIMAL_MAX_DIGITS, RATES_SCALE, false, out) == 0 &&
           out->units > 0 && decimal_cmp(*out, limit) < 0;
}

/* ---- the file ---------------------------------------------------------------------------- */

struct ecb_rate {
    const char *currency, *rate;
    struct decimal value;
};

struct ecb_pub {
    const char *date;
    struct ecb_rate *rates; /* arena_grow'n */
    size_t n;
};

struct ecb_parse {
    struct req *r;
    XML_Parser p;
    int depth, cubes;  /* open elements; open Cube elements */
    bool envelope;     /* the root was gesmes:Envelope */
    const char *alien; /* why the document is not an ECB file, NULL while it may be */
    struct ecb_pub *pubs;
    size_t n_pubs, n_rates;
};

static void not_ecb(struct ecb_parse *e, const char *why)
{
    if (!e->alien)
        e->alien = why;
}

static const char *attr(const char **atts, const char *name)
{
    for (size_t i = 0; atts[i]; i += 2)
        if (strcmp(atts[i], name) == 0)
            return atts[i + 1];
    return NULL;
}

static void add_rate(struct ecb_parse *e, const char *currency, const char *rate)
{
    struct req *r = e->r;
    struct ecb_pub *pub = &e->pubs[e->n_pubs - 1];
    pub->rates = arena_grow(&r->arena, pub->rates, pub->n, sizeof *pub->rates);
    struct ecb_rate *x = &pub->rates[pub->n++];
    x->currency = arena_strdup(&r->arena, currency);
    x->rate = arena_strdup(&r->arena, rate);
    e->n_rates++;
    if (!format_is_currency(currency) || strcmp(currency, "EUR") == 0)
        verr_add(&r->verr, "", NULL, "unknown_currency", "%s %s: %s", pub->date, currency,
                 strcmp(currency, "EUR") == 0 ? "EUR is what every rate is against"
                                              : "not an active ISO 4217 code");
    if (!rate_parse(rate, &x->value))
        verr_add(&r->verr, "", NULL, "invalid_rate",
                 "%s %s: rate '%s' is not a positive decimal of at most 8 integer digits and "
                 "%d places",
                 pub->date, currency, rate, RATES_SCALE);
    for (size_t i = 0; i + 1 < pub->n; i++)
        if (strcmp(pub->rates[i].currency, currency) == 0) {
            verr_add(&r->verr, "", NULL, "duplicate_currency", "%s %s: the currency is given twice",
                     pub->date, currency);
            break;
        }
}

static void XMLCALL on_start(void *ctx, const XML_Char *name, const XML_Char **atts)
{
    struct ecb_parse *e = ctx;
    e->depth++;
    if (e->depth == 1) {
        e->envelope = strcmp(name, ENVELOPE) == 0;
        if (!e->envelope)
            not_ecb(e, "the root element is not gesmes:Envelope");
        return;
    }
    if (strcmp(name, CUBE) != 0) {
        if (e->cubes > 0)
            not_ecb(e, "a Cube holds an element other than Cube");
        return;
    }
    int level = ++e->cubes;
    if (e->alien)
        return;
    if (e->depth != level + 1) {
        not_ecb(e, "a Cube is not where the ECB file has it (Envelope/Cube/Cube/Cube)");
        return;
    }
    if (level == 2) {
        const char *time = attr(atts, "time");
        if (!time || !format_is_date(time)) {
            not_ecb(e, "a publication's Cube has no time attribute holding a date");
            return;
        }
        e->pubs = arena_grow(&e->r->arena, e->pubs, e->n_pubs, sizeof *e->pubs);
        e->pubs[e->n_pubs++] = (struct ecb_pub){.date = arena_strdup(&e->r->arena, time)};
    } else if (level == 3) {
        const char *currency = attr(atts, "currency"), *rate = attr(atts, "rate");
        if (!currency || !rate) {
            not_ecb(e, "a rate's Cube lacks its currency or rate attribute");
            return;
        }
        add_rate(e, currency, rate);
    } else if (level > 3) {
        not_ecb(e, "Cube elements nest deeper than the ECB file's three");
    }
}

static void XMLCALL on_end(void *ctx, const XML_Char *name)
{
    struct ecb_parse *e = ctx;
    e->depth--;
    if (strcmp(name, CUBE) == 0 && e->cubes > 0)
        e->cubes--;
}

static void XMLCALL on_doctype(void *ctx, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal_subset;
    struct ecb_parse *e = ctx;
    not_ecb(e, "the document has a document type declaration, which the ECB file has not");
    XML_StopParser(e->p, XML_FALSE);
}

static int pub_cmp(const void *a, const void *b)
{
    return strcmp(((const struct ecb_pub *)a)->date, ((const struct ecb_pub *)b)->date);
}

static int rate_cmp(const void *a, const void *b)
{
    return strcmp(((const struct ecb_rate *)a)->currency, ((const struct ecb_rate *)b)->currency);
}

/* Parses body into e (publications by date, each one's rates by currency): 1 an ECB file
 * without violations; 0 answered (400 malformed_xml, 422); -1 failure. */
static int parse_file(struct req *r, const char *body, size_t len, struct ecb_parse *e)
{
    memset(e, 0, sizeof *e);
    e->r = r;
    if (len > (size_t)INT32_MAX)
        return -1; /* x-max-body-bytes keeps bodies far below */
    /* UTF-8 whatever the declaration says: the dispatcher has checked the bytes are */
    e->p = XML_ParserCreateNS("UTF-8", '|');
    if (!e->p)
        return -1;
    XML_SetUserData(e->p, e);
    XML_SetElementHandler(e->p, on_start, on_end);
    XML_SetStartDoctypeDeclHandler(e->p, on_doctype);
    enum XML_Status st = XML_Parse(e->p, body, (int)len, XML_TRUE);
    enum XML_Error code = XML_GetErrorCode(e->p);
    unsigned long line = XML_GetCurrentLineNumber(e->p), col = XML_GetCurrentColumnNumber(e->p);
    XML_ParserFree(e->p);
    e->p = NULL;
    if (st != XML_STATUS_OK && code != XML_ERROR_ABORTED) {
        verr_init(&r->verr, &r->arena);
        req_problem(r, 400, "malformed_xml",
                    "The body is not well-formed XML: %s (line %lu, column %lu).",
                    XML_ErrorString(code), line, col + 1);
        return 0;
    }
    if (!e->alien && !e->envelope)
        not_ecb(e, "the root element is not gesmes:Envelope");
    if (!e->alien && e->n_pubs == 0)
        not_ecb(e, "the file holds no publication (Cube with a time attribute)");
    for (size_t i = 0; !e->alien && i < e->n_pubs; i++)
        if (e->pubs[i].n == 0)
            not_ecb(e, arena_printf(&r->arena, "publication %s holds no rate", e->pubs[i].date));
    if (e->alien) {
        verr_init(&r->verr, &r->arena);
        verr_add(&r->verr, "", NULL, "not_ecb_reference_file", "%s", e->alien);
        req_problem_validation(r, 422, "The body is not an ECB euro reference-rate file.");
        return 0;
    }
    qsort(e->pubs, e->n_pubs, sizeof *e->pubs, pub_cmp);
    for (size_t i = 0; i < e->n_pubs; i++) {
        qsort(e->pubs[i].rates, e->pubs[i].n, sizeof *e->pubs[i].rates, rate_cmp);
        if (i > 0 && strcmp(e->pubs[i].date, e->pubs[i - 1].date) == 0 &&
            (i < 2 || strcmp(e->pubs[i].date, e->pubs[i - 2].date) != 0))
            verr_add(&r->verr, "", NULL, "duplicate_date", "%s: the publication date appears twice",
                     e->pubs[i].date);
    }
    if (r->verr.count > 0) {
        req_problem_validation(r, 422, "The file's rates break the rules of an ECB file.");
        return 0;
    }
    return 1;
}

/* ---- storing ----------------------------------------------------------------------------- */

/* Whether the stored rates of date equal pub's (currencies and values): 1 same, 0 differ,
 * -1 failure. */
static int same_figures(struct req *r, const struct ecb_pub *pub)
{
    struct db_stmt *st = storage_prepare("SELECT currency, rate FROM reference_rates WHERE "
                                         "workspace_id = ? AND source = ? AND date = ? "
                                         "ORDER BY currency");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, SOURCE);
    db_bind_text(st, 3, pub->date);
    size_t i = 0;
    int same = 1, rc;
    while ((rc = db_step(st)) == DB_ROW) {
        struct decimal v;
        const char *cur = db_column_text(st, 0), *rate = db_column_text(st, 1);
        if (i >= pub->n || !cur || strcmp(cur, pub->rates[i].currency) != 0 ||
            !rate_parse(rate, &v) || decimal_cmp(v, pub->rates[i].value) != 0)
            same = 0;
        i++;
    }
    db_reset(st);
    if (rc != DB_DONE)
        return db_failed("reading a publication's rates");
    return same && i == pub->n;
}

/* pub's rates as rows of reference_rates, a few at a time. 0 / -1. */
static int insert_rates(struct req *r, const struct ecb_pub *pub)
{
    enum { ROWS = 16 };
    for (size_t at = 0; at < pub->n; at += ROWS) {
        size_t n = pub->n - at < ROWS ? pub->n - at : ROWS;
        char sql[1200];
        int len = snprintf(sql, sizeof sql,
                           "INSERT INTO reference_rates (workspace_id, source, date, currency, "
                           "rate) VALUES ");
        for (size_t i = 0; i < n; i++)
            len += snprintf(sql + len, sizeof sql - (size_t)len, "%s(?, ?, ?, ?, ?)",
                            i ? ", " : "");
        struct db_stmt *st = storage_prepare(sql);
        if (!st)
            return -1;
        for (size_t i = 0; i < n; i++) {
            int b = (int)i * 5;
            db_bind_text(st, b + 1, r->principal.workspace_id);
            db_bind_text(st, b + 2, SOURCE);
            db_bind_text(st, b + 3, pub->date);
            db_bind_text(st, b + 4, pub->rates[at + i].currency);
            db_bind_text(st, b + 5, pub->rates[at + i].rate);
        }
        int rc = db_step(st);
        db_reset(st);
        if (rc != DB_DONE)
            return db_failed("storing rates");
    }
    return 0;
}

/* The dates of r's workspace's publications from first to last, ascending, into *dates. */
static int stored_dates(struct req *r, const char *first, const char *last, const char ***dates,
                        size_t *n)
{
    struct db_stmt *st = storage_prepare("SELECT date FROM reference_publications WHERE "
                                         "workspace_id = ? AND source = ? AND date >= ? AND "
                                         "date <= ? ORDER BY date");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, SOURCE);
    db_bind_text(st, 3, first);
    db_bind_text(st, 4, last);
    *dates = NULL;
    *n = 0;
    int rc;
    while ((rc = db_step(st)) == DB_ROW) {
        *dates = arena_grow(&r->arena, (void *)*dates, *n, sizeof **dates);
        (*dates)[(*n)++] = db_column_dup(&r->arena, st, 0);
    }
    db_reset(st);
    return rc == DB_DONE ? 0 : db_failed("listing stored publications");
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int rates_import_reference_rates(struct req *r,
                                 const struct rates_import_reference_rates_request *in,
                                 struct rates_import_reference_rates_response *out)
{
    struct ecb_parse e;
    int parsed = parse_file(r, in->body, in->body_len, &e);
    if (parsed <= 0)
        return parsed;
    const char *now = now_text(r);
    const char *first = e.pubs[0].date, *last = e.pubs[e.n_pubs - 1].date;
    const char **known;
    size_t n_known, k = 0;
    if (stored_dates(r, first, last, &known, &n_known) != 0)
        return -1;
    int64_t added = 0, replaced = 0, unchanged = 0;
    const char **codes = NULL;
    size_t n_codes = 0;
    for (size_t i = 0; i < e.n_pubs; i++) {
        const struct ecb_pub *pub = &e.pubs[i];
        for (size_t j = 0; j < pub->n; j++)
            if (!n_codes ||
                !bsearch(&pub->rates[j].currency, codes, n_codes, sizeof *codes, str_cmp)) {
                codes = arena_grow(&r->arena, codes, n_codes, sizeof *codes);
                codes[n_codes++] = pub->rates[j].currency;
                qsort(codes, n_codes, sizeof *codes, str_cmp);
            }
        while (k < n_known && strcmp(known[k], pub->date) < 0)
            k++;
        char count[FORMAT_I64_MAX];
        format_i64(count, (int64_t)pub->n);
        if (k < n_known && strcmp(known[k], pub->date) == 0) {
            int same = same_figures(r, pub);
            if (same < 0)
                return -1;
            if (same) {
                unchanged++;
                continue;
            }
            /* an ECB correction: the publication's figures are replaced as a whole */
            const char *v[] = {now, count, r->principal.workspace_id, SOURCE, pub->date};
            if (storage_exec_texts("DELETE FROM reference_rates WHERE workspace_id = ? AND "
                                   "source = ? AND date = ?",
                                   v + 2, 3) != 0 ||
                storage_exec_texts("UPDATE reference_publications SET imported_at = ?, "
                                   "rate_count = CAST(? AS INTEGER) WHERE workspace_id = ? AND "
                                   "source = ? AND date = ?",
                                   v, 5) != 0)
                return -1;
            replaced++;
        } else {
            const char *v[] = {r->principal.workspace_id, SOURCE, pub->date, now, count};
            if (storage_exec_texts("INSERT INTO reference_publications (workspace_id, source, "
                                   "date, imported_at, rate_count) VALUES (?, ?, ?, ?, "
                                   "CAST(? AS INTEGER))",
                                   v, 5) != 0)
                return -1;
            added++;
        }
        if (insert_rates(r, pub) != 0)
            return -1;
    }
    if (n_codes > MAX_CURRENCIES) {
        /* every active ISO 4217 code but EUR is fewer: unreachable, said rather than cut */
        log_error("reference rates: a file quoting %zu currencies", n_codes);
        return -1;
    }
    struct reference_rate_import *res = arena_alloc(&r->arena, sizeof *res);
    res->object = "reference_rate_import";
    res->source = SOURCE;
    res->first_date = first;
    res->last_date = last;
    res->dates = (int64_t)e.n_pubs;
    res->dates_added = added;
    res->dates_replaced = replaced;
    res->dates_unchanged = unchanged;
    res->rates = (int64_t)e.n_rates;
    res->currencies = codes;
    res->currencies_count = n_codes;
    res->imported_at = now;
    const char *detail = arena_printf(
        &r->arena,
        "{\"first_date\":\"%s\",\"last_date\":\"%s\",\"dates\":%zu,\"dates_added\":%lld,"
        "\"dates_replaced\":%lld,\"dates_unchanged\":%lld,\"rates\":%zu}",
        first, last, e.n_pubs, (long long)added, (long long)replaced, (long long)unchanged,
        e.n_rates);
    if (audit_change(r, "reference_rates.imported", "reference_rate_import",
                     arena_printf(&r->arena, "ecb:%s..%s", first, last), NULL, NULL, detail) != 0)
        return -1;
    out->status = 200;
    out->body_200 = res;
    return 0;
}

/* ---- reading ----------------------------------------------------------------------------- */

/* A publication as stored: its date, import time and rates by currency. */
struct publication {
    const char *date, *imported_at;
    struct ecb_rate *rates;
    size_t n;
};

/* r's workspace's latest publication on or before date, with its rates: 1, 0 none, -1. */
static int publication_by(struct req *r, const char *date, struct publication *p)
{
    memset(p, 0, sizeof *p);
    struct db_stmt *st = storage_prepare("SELECT date, imported_at FROM reference_publications "
                                         "WHERE workspace_id = ? AND source = ? AND date <= ? "
                                         "ORDER BY date DESC LIMIT 1");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, SOURCE);
    db_bind_text(st, 3, date);
    int rc = db_step(st);
    if (rc == DB_ROW) {
        p->date = db_column_dup(&r->arena, st, 0);
        p->imported_at = db_column_dup(&r->arena, st, 1);
    }
    db_reset(st);
    if (rc != DB_ROW)
        return rc == DB_DONE ? 0 : db_failed("finding a publication");
    st = storage_prepare("SELECT currency, rate FROM reference_rates WHERE workspace_id = ? AND "
                         "source = ? AND date = ? ORDER BY currency");
    if (!st)
        return -1;
    db_bind_text(st, 1, r->principal.workspace_id);
    db_bind_text(st, 2, SOURCE);
    db_bind_text(st, 3, p->date);
    bool bad = false;
    while ((rc = db_step(st)) == DB_ROW) {
        p->rates = arena_grow(&r->arena, p->rates, p->n, sizeof *p->rates);
        struct ecb_rate *x = &p->rates[p->n++];
        x->currency = db_column_dup(&r->arena, st, 0);
        x->rate = db_column_dup(&r->arena, st, 1);
        bad = bad || !rate_parse(x->rate, &x->value);
    }
    db_reset(st);
    if (rc != DB_DONE)
        return db_failed("reading a publication's rates");
    if (bad) {
        log_error("reference rates: publication %s holds a rate this server cannot read", p->date);
        return -1;
    }
    return 1;
}

static const struct ecb_rate *rate_of(const struct publication *p, const char *currency)
{
    struct ecb_rate key = {.currency = currency};
    return p->n ? bsearch(&key, p->rates, p->n, sizeof *p->rates, rate_cmp) : NULL;
}

/* The rate of base in quote from p (through EUR), into *out: 1, 0 not in p, -1 overflow. */
static int cross(const struct publication *p, const char *base, const char *quote,
                 struct decimal *out)
{
    static const struct decimal one = {1, 0};
    bool eur_base = strcmp(base, "EUR") == 0, eur_quote = strcmp(quote, "EUR") == 0;
    const struct ecb_rate *b = eur_base ? NULL : rate_of(p, base);
    const struct ecb_rate *q = eur_quote ? NULL : rate_of(p, quote);
    if ((!eur_base && !b) || (!eur_quote && !q) || strcmp(base, quote) == 0)
        return 0;
    if (eur_base) {
        *out = q->value;
        return 1;
    }
    return decimal_div(eur_quote ? one : q->value, b->value, RATES_SCALE,
                       DECIMAL_ROUND_HALF_EVEN, out) == 0
               ? 1
               : -1;
}

int rates_get_reference_rates(struct req *r, const struct rates_get_reference_rates_request *in,
                              struct rates_get_reference_rates_response *out)
{
    const char *asked = in->has_date ? in->date : today_text(r);
    const char *base = in->has_base_currency ? in->base_currency : "EUR";
    struct publication p;
    int found = publication_by(r, asked, &p);
    if (found < 0)
        return -1;
    if (!found) {
        req_problem(r, 404, "not_found", "No ECB reference rates were published on or before %s.",
                    asked);
        return 0;
    }
    bool eur = strcmp(base, "EUR") == 0;
    if (!eur && !rate_of(&p, base)) {
        req_problem(r, 404, "not_found",
                    "The ECB publication of %s has no rate for %s, so no rates against it.",
                    p.date, base);
        return 0;
    }
    /* the quote currencies: the publication's and EUR, less the base, by code */
    struct reference_rate *rates = arena_alloc(&r->arena, (p.n + 1) * sizeof *rates);
    size_t n = 0;
    for (size_t i = 0; i <= p.n; i++) {
        const char *q = i < p.n ? p.rates[i].currency : "EUR";
        if (strcmp(q, base) == 0 || (i == p.n && eur))
            continue;
        bool wanted = !in->has_currency;
        for (size_t j = 0; !wanted && j < in->currency_count; j++)
            wanted = strcmp(in->currency[j], q) == 0;
        if (!wanted)
            continue;
        if (eur) {
            rates[n++] = (struct reference_rate){.currency = q, .rate = p.rates[i].rate};
            continue;
        }
        struct decimal v;
        if (cross(&p, base, q, &v) != 1)
            return -1;
        if (v.units <= 0)
            continue; /* below 0.5e-10: no Rate says it; none the ECB publishes comes near */
        char buf[DECIMAL_TEXT_MAX];
        rates[n++] = (struct reference_rate){
            .currency = q,
            .rate = arena_strdup(&r->arena, decimal_format_fixed(v, RATES_SCALE, buf, sizeof buf))};
    }
    if (!eur) /* EUR went last: put it in its place by code */
        for (size_t i = n; i > 1 && strcmp(rates[i - 1].currency, rates[i - 2].currency) < 0; i--) {
            struct reference_rate t = rates[i - 1];
            rates[i - 1] = rates[i - 2];
            rates[i - 2] = t;
        }
    struct reference_rate_set *set = arena_alloc(&r->arena, sizeof *set);
    set->object = "reference_rate_set";
    set->workspace_id = r->principal.workspace_id;
    set->source = SOURCE;
    set->date = p.date;
    set->requested_date = asked;
    set->base_currency = base;
    set->rates = rates;
    set->rates_count = n;
    set->imported_at = p.imported_at;
    out->status = 200;
    out->body_200 = set;
    return 0;
}

/* ---- what the live rates read (handlers/rates.h) ----------------------------------------- */

int rates_reference_latest(struct req *r, const char *base, const char *quote, const char *date,
                           struct rates_price *out)
{
    struct publication p;
    int found = publication_by(r, date ? date : today_text(r), &p);
    if (found <= 0)
        return found;
    struct decimal v;
    int got = cross(&p, base, quote, &v);
    if (got <= 0)
        return got;
    if (v.units <= 0)
        return 0;
    out->mid = v;
    out->source = SOURCE;
    out->as_of = p.imported_at;
    out->value_date = p.date;
    if (strcmp(base, "EUR") == 0) { /* the file's figure, exactly as published */
        out->text = rate_of(&p, quote)->rate;
    } else {
        char buf[DECIMAL_TEXT_MAX];
        out->text = arena_strdup(&r->arena, decimal_format_fixed(v, RATES_SCALE, buf, sizeof buf));
    }
    return 1;
}

int rates_reference_currencies(struct req *r, const char *date, const char **pub_date,
                               const char ***codes, size_t *n)
{
    struct publication p;
    int found = publication_by(r, date ? date : today_text(r), &p);
    if (found <= 0)
        return found;
    *pub_date = p.date;
    *codes = arena_alloc(&r->arena, (p.n ? p.n : 1) * sizeof **codes);
    for (size_t i = 0; i < p.n; i++)
        (*codes)[i] = p.rates[i].currency;
    *n = p.n;
    return 1;
}
