/* The payments API: a payment's timeline (GET /v1/payments/{id}/events), the domain events
 * (runtime/outbox.c) its changes wrote, oldest first. */
#include "generated/payments_api.h"

#include <stddef.h>
#include <string.h>

#include "handlers/payments.h"
#include "runtime/json.h"
#include "runtime/outbox.h"
#include "runtime/pagination.h"
#include "runtime/resource.h"
#include "runtime/storage.h"

/* An event and its sequence number (the timeline's cursor key, not part of the envelope). */
struct event_item {
    struct event e;
    const char *seq;
};

static int event_row(struct req *r, struct db_stmt *st, void *item)
{
    struct event_item *it = item;
    struct event *e = &it->e;
    struct json_value *v = NULL;
    struct json_error err;
    const char *data = db_column_dup(&r->arena, st, 4);
    if (!data || json_parse(&r->arena, data, strlen(data), &v, &err) != 0 ||
        !json_get(v, "object"))
        return -1;
    e->id = db_column_dup(&r->arena, st, 0);
    e->object = "event";
    e->type = db_column_dup(&r->arena, st, 1);
    e->created_at = db_column_dup(&r->arena, st, 2);
    e->api_version = OUTBOX_API_VERSION;
    e->workspace_id = db_column_dup(&r->arena, st, 3);
    e->data = arena_alloc(&r->arena, sizeof *e->data);
    e->data->object = json_get(v, "object");
    e->request = arena_alloc(&r->arena, sizeof *e->request);
    e->request->id = db_column_dup(&r->arena, st, 5);
    e->request->idempotency_key = db_column_dup(&r->arena, st, 6);
    e->request->has_idempotency_key = e->request->idempotency_key != NULL;
    it->seq = db_column_dup(&r->arena, st, 7);
    return 0;
}

int payments_list_payment_events(struct req *r,
                                 const struct payments_list_payment_events_request *in,
                                 struct payments_list_payment_events_response *out)
{
    struct payment_row *x = arena_alloc(&r->arena, sizeof *x);
    int found = pay_load(r, in->id, NULL, x);
    if (found <= 0)
        return found;
    struct page pg;
    if (page_begin(r, &pg, arena_printf(&r->arena, "events&p=%s", x->obj.id), in->limit,
                   in->has_cursor ? in->cursor : NULL) != 0)
        return 0;
    /* Oldest first: the cursor's key is the last event's sequence number. The text copy of seq
     * has a name of its own: PostgreSQL would name it seq, and ORDER BY seq would then sort
     * the text ("10" before "9"). */
    struct db_stmt *st = storage_prepare(
        "SELECT id, type, created_at, workspace_id, data, request_id, idempotency_key, "
        "CAST(seq AS TEXT) AS seq_text FROM events WHERE resource_id = ?1 AND workspace_id = ?2 "
        "AND (CAST(?3 AS TEXT) IS NULL OR seq > CAST(?3 AS BIGINT)) ORDER BY seq LIMIT ?4");
    if (!st)
        return -1;
    db_bind_text(st, 1, x->obj.id);
    db_bind_text(st, 2, r->principal.workspace_id);
    db_bind_text(st, 3, pg.after_key);
    db_bind_int64(st, 4, in->limit + 1);
    struct resource_page rp;
    if (resource_page_fill(r, &pg, st, sizeof(struct event_item), event_row,
                           offsetof(struct event_item, seq),
                           offsetof(struct event_item, e) + offsetof(struct event, id), &rp) != 0)
        return -1;
    /* the items carry their sequence number beside the event: the page holds the events */
    const struct event_item *items = rp.items;
    struct event *events = arena_alloc(&r->arena, (rp.count ? rp.count : 1) * sizeof *events);
    for (size_t i = 0; i < rp.count; i++)
        events[i] = items[i].e;
    rp.items = events;
    struct event_page *page = arena_alloc(&r->arena, sizeof *page);
    RESOURCE_PAGE_SET(page, rp);
    out->status = 200;
    out->body_200 = page;
    return 0;
}
