/* Privilege cache (see privileges.h): 4096 slots under 64 striped locks, chosen by a hash of
 * (workspace, subject, client); a slot holds one answer and the generation it was computed
 * in. privileges_changed() moves the generation on, which makes every slot stale at once
 * without touching them. */
#include "runtime/privileges.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/storage.h"

#define SLOTS 4096 /* power of two */
#define STRIPES 64

struct slot {
    uint64_t generation; /* 0: empty (the counter starts at 1) */
    char wid[PRIVILEGES_ID_MAX + 1];
    char sub[PRIVILEGES_ID_MAX + 1];
    char client[PRIVILEGES_ID_MAX + 1]; /* "" for our own tokens */
    int standing;
    uint64_t allowed;
};

static privileges_lookup_fn *lookup_fn;
static struct slot slots[SLOTS];
static pthread_mutex_t stripes[STRIPES];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t generation = 1;

static void init_stripes(void)
{
    for (size_t i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripes[i], NULL);
}

void privileges_init(privileges_lookup_fn *lookup)
{
    pthread_once(&once, init_stripes);
    lookup_fn = lookup;
}

void privileges_changed(void)
{
    atomic_fetch_add(&generation, 1);
}

static uint64_t mix(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3u; /* FNV-1a */
    }
    h ^= 0xff; /* separator: ("ab","c") and ("a","bc") differ */
    return h * 0x100000001b3u;
}

static size_t slot_of(const char *wid, const char *sub, const char *client)
{
    uint64_t h = mix(mix(mix(0xcbf29ce484222325u, wid), sub), client);
    return (size_t)(h ^ (h >> 32)) & (SLOTS - 1);
}

static bool cacheable(const char *wid, const char *sub, const char *client)
{
    return strlen(wid) <= PRIVILEGES_ID_MAX && strlen(sub) <= PRIVILEGES_ID_MAX &&
           strlen(client) <= PRIVILEGES_ID_MAX;
}

static int ask(const char *wid, const char *sub, const char *client, uint64_t *allowed)
{
    bool own = !storage_in_tx();
    if (own && storage_begin(false) != 0)
        return -1;
    *allowed = 0;
    int rc = lookup_fn(wid, sub, client[0] ? client : NULL, allowed);
    if (own)
        storage_rollback();
    return rc;
}

int privileges_current(const char *wid, const char *sub, const char *client_id,
                       uint64_t *allowed)
{
    const char *client = client_id ? client_id : "";
    if (!lookup_fn)
        return -1;
    if (!cacheable(wid, sub, client))
        return ask(wid, sub, client, allowed);
    size_t i = slot_of(wid, sub, client);
    pthread_mutex_t *m = &stripes[i % STRIPES];
    /* Read before the lookup's transaction begins: a change committed after this point has
     * moved the counter past it, so the answer stored below is stale the moment it could be
     * wrong. */
    uint64_t gen = atomic_load(&generation);
    pthread_mutex_lock(m);
    struct slot *s = &slots[i];
    if (s->generation == gen && strcmp(s->wid, wid) == 0 && strcmp(s->sub, sub) == 0 &&
        strcmp(s->client, client) == 0) {
        int standing = s->standing;
        *allowed = s->allowed;
        pthread_mutex_unlock(m);
        return standing;
    }
    pthread_mutex_unlock(m);
    int rc = ask(wid, sub, client, allowed);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(m);
    s->generation = gen;
    strcpy(s->wid, wid);
    strcpy(s->sub, sub);
    strcpy(s->client, client);
    s->standing = rc;
    s->allowed = *allowed;
    pthread_mutex_unlock(m);
    return rc;
}
