/* A job's round of steps on the group-commit writer (runtime/job_steps.h). */
#include "runtime/job_steps.h"

#include <stdio.h>
#include <string.h>

#include "runtime/arena.h"
#include "runtime/id.h"
#include "runtime/log.h"
#include "runtime/storage.h"
#include "runtime/verr.h"

/* On the writer, in its transaction: claims the row and does the work. Returns true when an
 * unguarded run left writes that must be undone (the writer then runs it again). */
static bool step_run(void *ctx, bool guarded)
{
    struct job_step *st = ctx;
    struct req *r = &st->r;
    arena_release(&r->arena); /* a second run starts from nothing */
    memset(r, 0, sizeof *r);
    arena_init(&r->arena);
    verr_init(&r->verr, &r->arena); /* a refused ledger posting collects violations here */
    r->principal.workspace_id = st->ws;
    r->principal.user_id = "system";
    r->request_id = id_new(&r->arena, "req");
    st->ok = false;
    st->moved = NULL;
    if ((guarded ? storage_savepoint() : storage_unguarded_begin()) != 0)
        return false;
    /* Another instance's worker may have picked the same row: whoever holds it acts; the
     * other leaves it (the work reloads it, so a step taken meanwhile shows). */
    int claimed = storage_claim(st->of->table, "id", st->id);
    int rc = claimed <= 0 ? claimed : st->of->work(st);
    int end = guarded ? storage_savepoint_end(rc == 0) : storage_unguarded_end(rc == 0);
    if (end > 0)
        return true;
    st->ok = rc == 0 && end == 0;
    return false;
}

static void step_done(void *ctx, enum group_commit_outcome outcome)
{
    struct job_step *st = ctx;
    struct job_steps *s = st->of;
    if (!st->ok || outcome != GROUP_COMMIT_COMMITTED) {
        st->ok = false;
        log_error("%s: the step of %s failed; it stays due", s->name, st->id);
    } else if (st->moved) {
        log_info("%s: %s %s", s->name, st->id, st->moved);
    }
    arena_release(&st->r.arena);
    pthread_mutex_lock(&s->mu);
    if (--s->left == 0)
        pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void job_steps_reset(struct job_steps *s)
{
    s->n = 0;
}

struct job_step *job_steps_add(struct job_steps *s, const char *id, const char *ws, int64_t now)
{
    if (s->n >= s->cap)
        return NULL;
    struct job_step *st = &s->steps[s->n++];
    memset(st, 0, sizeof *st);
    snprintf(st->id, sizeof st->id, "%s", id);
    snprintf(st->ws, sizeof st->ws, "%s", ws);
    st->now = now;
    st->of = s;
    st->item.run = step_run;
    st->item.done = step_done;
    st->item.ctx = st;
    st->item.serial_key = st->ws; /* the workspace whose audit chain the step extends */
    return st;
}

int job_steps_run(struct job_steps *s)
{
    int n = s->n, failed = 0;
    pthread_mutex_lock(&s->mu);
    s->left = n;
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n; i++)
        group_commit_submit(&s->steps[i].item);
    pthread_mutex_lock(&s->mu);
    while (s->left > 0)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n; i++)
        failed |= !s->steps[i].ok;
    return failed ? -1 : 0;
}
