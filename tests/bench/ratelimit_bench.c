/* Throughput of rate-limit decisions (ratelimit_check) on this machine: one thread alone, then
 * 2 and 8 threads on one hot key (every request of one workspace) and on distinct keys
 * (many workspaces). Prints decisions per second over all threads and the ratio to the
 * single-thread baseline of the same run; asserts nothing. Part of `make bench`. With no
 * contention, N threads on C cores reach min(N, C) times the baseline. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "runtime/ratelimit.h"

#define PER_THREAD 2000000

struct job {
    char key[32];
    int64_t now;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
    struct job *j = arg;
    struct ratelimit_verdict v;
    int64_t allowed = 0;
    for (int i = 0; i < PER_THREAD; i++) {
        /* A quota so large it never refuses: we measure the decision, not the refusal. */
        ratelimit_check(j->key, 1000000000, 60, j->now + i, &v);
        allowed += v.allowed;
    }
    return (void *)(intptr_t)(allowed == PER_THREAD);
}

static double measure(int threads, int same_key)
{
    pthread_t t[8];
    struct job jobs[8];
    ratelimit_reset();
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        snprintf(jobs[i].key, sizeof jobs[i].key, "w:%d", same_key ? 0 : i);
        jobs[i].now = ratelimit_now_ns();
        pthread_create(&t[i], NULL, run, &jobs[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    double elapsed = now_s() - t0;
    return (double)threads * PER_THREAD / elapsed / 1e6; /* million decisions per second */
}

int main(void)
{
    ratelimit_init(1000);
    double base = measure(1, 1);
    printf("ratelimit_check, %d decisions per thread, %ld cores\n", PER_THREAD,
           sysconf(_SC_NPROCESSORS_ONLN));
    printf("%-34s %7.1f M/s  1.00x  (%.0f ns each)\n", "1 thread (baseline)", base, 1e3 / base);
    int counts[] = {2, 8};
    for (int c = 0; c < 2; c++) {
        double same = measure(counts[c], 1), distinct = measure(counts[c], 0);
        printf("%d threads, one hot key            %7.1f M/s  %.2fx\n", counts[c], same,
               same / base);
        printf("%d threads, a key each             %7.1f M/s  %.2fx\n", counts[c], distinct,
               distinct / base);
    }
    return 0;
}
