/* Handlers of the codegen small spec, just enough to drive the generated dispatchers from
 * test_small.c: they record what they were given and answer from fixed data. */
#include "generated/misc_api.h"
#include "generated/things_api.h"

#include <string.h>

#include "tests/codegen/small/handlers.h"

struct small_seen small_seen;

static struct thing *sample_thing(struct req *r, const char *id)
{
    static const char *const tags[] = { "a", "b" };
    struct thing *t = arena_alloc(&r->arena, sizeof *t);

    t->id = id;
    t->name = "widget";
    t->kind = KIND_LARGE;
    t->size = 10;
    t->tags = arena_alloc(&r->arena, sizeof tags);
    memcpy(t->tags, tags, sizeof tags);
    t->tags_count = 2;
    t->created_at = "2025-03-14T09:26:53.589Z";
    t->secret = "never-serialised";
    t->note_is_null = true;
    t->has_note = true;
    return t;
}

int things_list_things(struct req *r, const struct things_list_things_request *in,
                       struct things_list_things_response *out)
{
    small_seen.list = *in;
    small_seen.called++;
    out->status = 200;
    out->body_200 = arena_alloc(&r->arena, sizeof *out->body_200);
    out->body_200->data = sample_thing(r, "thg_0001");
    out->body_200->data_count = 1;
    out->body_200->next_is_null = true;
    out->x_count = 1;
    out->has_x_count = true;
    return 0;
}

int things_create_thing(struct req *r, const struct things_create_thing_request *in,
                        struct things_create_thing_response *out)
{
    small_seen.create_body = in->body;
    small_seen.called++;
    if (strcmp(in->body->name, "taken") == 0) {
        out->status = 409;
        out->body_409 = arena_alloc(&r->arena, sizeof *out->body_409);
        out->body_409->existing_id = "thg_0002";
        return 0;
    }
    if (strcmp(in->body->name, "teapot") == 0) {
        out->status = 418; /* undocumented: the dispatcher must refuse it */
        return 0;
    }
    out->status = 201;
    out->body_201 = sample_thing(r, "thg_0003");
    out->body_201->name = in->body->name;
    out->body_201->kind = in->body->kind;
    out->etag = "\"v1\"";
    out->location = "/v1/things/thg_0003";
    return 0;
}

int things_get_thing(struct req *r, const struct things_get_thing_request *in,
                     struct things_get_thing_response *out)
{
    small_seen.called++;
    small_seen.id = in->id;
    if (strcmp(in->id, "thg_0404") == 0) {
        req_problem(r, 404, "not_found", "No thing %s.", in->id);
        return 0;
    }
    if (strcmp(in->id, "thg_0409") == 0) {
        req_problem(r, 409, "conflict", "Not documented for getThing."); /* drift */
        return 0;
    }
    if (strcmp(in->id, "thg_0500") == 0)
        return -1;
    out->status = 200;
    out->body_200 = sample_thing(r, in->id);
    if (strcmp(in->id, "thg_bad0") == 0)
        out->body_200->size = 7; /* not a multiple of 5: the response check must catch it */
    if (strcmp(in->id, "thg_etag") == 0)
        out->etag = "v1"; /* violates the ETag pattern */
    else
        out->etag = "\"v2\"";
    return 0;
}

int things_replace_thing(struct req *r, const struct things_replace_thing_request *in,
                         struct things_replace_thing_response *out)
{
    small_seen.called++;
    small_seen.replace_body = in->body;
    small_seen.if_match = in->has_if_match ? in->if_match : NULL;
    out->status = 200;
    out->body_200 = in->body;
    out->body_200->id = in->id;
    out->body_200->created_at = "2025-03-14T09:26:53.589Z";
    (void)r;
    return 0;
}

int things_delete_thing(struct req *r, const struct things_delete_thing_request *in,
                        struct things_delete_thing_response *out)
{
    small_seen.called++;
    small_seen.id = in->id;
    (void)r;
    out->status = 204;
    return 0;
}

int things_add_shape(struct req *r, const struct things_add_shape_request *in,
                     struct things_add_shape_response *out)
{
    small_seen.called++;
    small_seen.shape = in->body;
    small_seen.id = in->id;
    out->status = 200;
    if (in->body) {
        struct json_value *v = NULL;
        struct json_error e;
        if (json_parse(&r->arena, "{\"ok\":true}", 11, &v, &e) != 0)
            return -1;
        out->body_200 = v;
    } else {
        req_set_json(r, 200, strdup("{\"empty\":true}"), 14);
    }
    return 0;
}

int misc_get_health(struct req *r, const struct misc_get_health_request *in,
                    struct misc_get_health_response *out)
{
    (void)in;
    small_seen.called++;
    out->status = 200;
    out->body_200 = arena_alloc(&r->arena, sizeof *out->body_200);
    out->body_200->status = "ok";
    return 0;
}

/* A page: greets the visitor cookie; ?name=go redirects and sets it; ?name=bad is an error
 * (a problem, which the runtime renders as a page); ?name=plain answers a page that is not an
 * HTML document (the response check catches it). */
int misc_get_welcome(struct req *r, const struct misc_get_welcome_request *in,
                     struct misc_get_welcome_response *out)
{
    if (in->has_name && strcmp(in->name, "bad") == 0) {
        req_problem(r, 400, "invalid_request", "No such name.");
        return 0;
    }
    if (in->has_name && strcmp(in->name, "go") == 0) {
        out->status = 303;
        out->location = "/v1/welcome";
        out->set_cookie = "visitor=go; Secure; HttpOnly; SameSite=Lax";
        return 0;
    }
    out->status = 200;
    out->body_200 = in->has_name && strcmp(in->name, "plain") == 0
                        ? "Hello"
                        : arena_printf(&r->arena, "<!DOCTYPE html><p>Hello %s</p>",
                                       in->has_visitor ? in->visitor : "stranger");
    return 0;
}

/* An RFC 6749 endpoint: grant_type "ok" gets a token, "used" an invalid_grant problem (the
 * runtime renders it as an RFC 6749 error), "drift" a code the documented error schema does
 * not list (the response check catches it). */
int misc_issue_token(struct req *r, const struct misc_issue_token_request *in,
                     struct misc_issue_token_response *out)
{
    small_seen.called++;
    const char *g = in->body->has_grant_type ? in->body->grant_type : "";
    if (strcmp(g, "used") == 0) {
        req_problem(r, 400, "invalid_grant", "The code \"c\" was used.");
        return 0;
    }
    if (strcmp(g, "drift") == 0) {
        req_problem(r, 400, "unsupported_token_type", "Not documented for issueToken.");
        return 0;
    }
    out->status = 200;
    out->body_200 = arena_alloc(&r->arena, sizeof *out->body_200);
    out->body_200->access_token = "t0k";
    return 0;
}

/* Answers 200 without a body; grant_type "body" sends one anyway (the response check catches
 * it: the 200 is documented x-empty-body). */
int misc_revoke_token(struct req *r, const struct misc_revoke_token_request *in,
                      struct misc_revoke_token_response *out)
{
    small_seen.called++;
    if (in->body->has_grant_type && strcmp(in->body->grant_type, "body") == 0) {
        req_set_json(r, 200, strdup("{}"), 2);
        return 0;
    }
    out->status = 200;
    return 0;
}
