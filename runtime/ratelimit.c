/* Fixed-window counters in a mutex-guarded open-addressing table; exact under concurrency
 * because every check is one locked read-modify-write. Stale windows are reused in place. */
#include "runtime/ratelimit.h"

#include <pthread.h>
#include <string.h>

#define SLOTS 4096 /* power of two; keys beyond this evict the oldest window in their probe run */
#define PROBE 16
#define KEY_MAX 72
#define WINDOW 60

struct slot {
    char key[KEY_MAX];
    int64_t window_start;
    int64_t count;
};

static struct slot slots[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t default_limit = 1000;

void ratelimit_init(int64_t default_per_minute)
{
    default_limit = default_per_minute;
}

int64_t ratelimit_default(void)
{
    return default_limit;
}

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

void ratelimit_check(const char *key, int64_t limit, int64_t now, struct ratelimit_verdict *v)
{
    int64_t window = now - now % WINDOW;
    uint64_t h = hash(key);
    pthread_mutex_lock(&lock);
    struct slot *s = NULL, *oldest = NULL;
    for (int i = 0; i < PROBE; i++) {
        struct slot *c = &slots[(h + (uint64_t)i) & (SLOTS - 1)];
        if (strncmp(c->key, key, KEY_MAX - 1) == 0 && c->key[0]) {
            s = c;
            break;
        }
        if (!oldest || c->window_start < oldest->window_start)
            oldest = c;
    }
    if (!s) {
        s = oldest;
        strncpy(s->key, key, KEY_MAX - 1);
        s->key[KEY_MAX - 1] = '\0';
        s->window_start = window;
        s->count = 0;
    }
    if (s->window_start != window) {
        s->window_start = window;
        s->count = 0;
    }
    v->allowed = s->count < limit;
    if (v->allowed)
        s->count++;
    v->limit = limit;
    v->remaining = limit - s->count;
    pthread_mutex_unlock(&lock);
    v->reset_epoch = window + WINDOW;
    v->reset_seconds = v->reset_epoch - now;
    if (v->reset_seconds < 1)
        v->reset_seconds = 1;
}
