/* The representation cache (runtime/rep_cache.h). */
#include "runtime/rep_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define STRIPES 64

struct entry {
    uint64_t hash;
    int64_t version;
    char *key;  /* "table\nworkspace\nid", malloc'd with the JSON after it */
    char *json; /* in the same block */
    size_t len;
};

static struct entry slots[REP_CACHE_SLOTS];
static pthread_mutex_t stripes[STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;

static void stripes_init(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripes[i], NULL);
}

/* The slot of h and the lock that guards it. */
static struct entry *slot_of(uint64_t h, pthread_mutex_t **m)
{
    pthread_once(&stripes_once, stripes_init);
    *m = &stripes[(h % REP_CACHE_SLOTS) % STRIPES];
    return &slots[h % REP_CACHE_SLOTS];
}

/* FNV-1a over the three texts (each ended by a separator) and the version. */
static uint64_t hash_of(const char *table, const char *workspace, const char *id, int64_t v)
{
    uint64_t h = UINT64_C(14695981039346656037);
    const char *parts[] = {table, workspace, id};
    for (int i = 0; i < 3; i++) {
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
            h = (h ^ *p) * UINT64_C(1099511628211);
        h = (h ^ '\n') * UINT64_C(1099511628211);
    }
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++, u >>= 8)
        h = (h ^ (u & 0xff)) * UINT64_C(1099511628211);
    return h;
}

/* Whether e's key is "table\nworkspace\nid". */
static int same_key(const struct entry *e, const char *table, const char *workspace,
                    const char *id)
{
    const char *k = e->key;
    const char *parts[] = {table, workspace, id};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(parts[i]);
        if (strncmp(k, parts[i], n) != 0 || k[n] != (i < 2 ? '\n' : '\0'))
            return 0;
        k += n + 1;
    }
    return 1;
}

char *rep_cache_get(struct arena *a, const char *table, const char *workspace,
                    const char *id, int64_t version, size_t *len)
{
    if (!table || !workspace || !id)
        return NULL;
    uint64_t h = hash_of(table, workspace, id, version);
    pthread_mutex_t *m;
    struct entry *e = slot_of(h, &m);
    char *out = NULL;
    pthread_mutex_lock(m);
    if (e->key && e->hash == h && e->version == version && same_key(e, table, workspace, id)) {
        out = arena_strndup(a, e->json, e->len);
        *len = e->len;
    }
    pthread_mutex_unlock(m);
    return out;
}

void rep_cache_put(const char *table, const char *workspace, const char *id, int64_t version,
                   const char *json, size_t len)
{
    if (!table || !workspace || !id || !json || len > REP_CACHE_MAX_BYTES)
        return;
    size_t tl = strlen(table), wl = strlen(workspace), il = strlen(id);
    char *block = malloc(tl + wl + il + 3 + len + 1);
    if (!block)
        return; /* a cache: what it cannot keep is encoded again */
    char *k = block;
    memcpy(k, table, tl);
    k[tl] = '\n';
    memcpy(k + tl + 1, workspace, wl);
    k[tl + 1 + wl] = '\n';
    memcpy(k + tl + wl + 2, id, il);
    k[tl + wl + 2 + il] = '\0';
    char *j = block + tl + wl + il + 3;
    memcpy(j, json, len);
    j[len] = '\0';
    uint64_t h = hash_of(table, workspace, id, version);
    pthread_mutex_t *m;
    struct entry *e = slot_of(h, &m);
    pthread_mutex_lock(m);
    char *old = e->key;
    *e = (struct entry){h, version, block, j, len};
    pthread_mutex_unlock(m);
    free(old);
}

void rep_cache_clear(void)
{
    pthread_once(&stripes_once, stripes_init);
    for (size_t i = 0; i < REP_CACHE_SLOTS; i++) {
        pthread_mutex_t *m = &stripes[i % STRIPES];
        pthread_mutex_lock(m);
        char *old = slots[i].key;
        slots[i] = (struct entry){0};
        pthread_mutex_unlock(m);
        free(old);
    }
}
