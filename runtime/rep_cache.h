/* Representations of versioned resources, kept by (table, workspace, id, version).
 *
 * A resource whose JSON is a function of its id and version (x-table `cache: true`: every
 * change the API shows makes a new version, which its ETag already promises) is encoded once
 * per version; a list then copies it from here instead of reading the row into a struct and
 * encoding it again, which was two thirds of a page of payments' own work. Only reads of
 * committed rows fill it (runtime/resource.c, resource_page_remember), so it never holds a
 * version a rolled-back transaction made. A newer version is another key: nothing is ever
 * invalidated, old versions are simply no longer asked for.
 *
 * The promise holds while every writer is this build (README: one build at a time across a
 * migration) and the database only moves forward: a database restored to an earlier state
 * reuses (id, version) pairs, so the instances restart with it.
 *
 * Process-wide and bounded: REP_CACHE_SLOTS entries, direct-mapped (an entry replaces the one
 * in its slot), entries above REP_CACHE_MAX_BYTES not kept: at most 8192 x 16 KiB, in
 * practice the size of the resources listed (a payment's JSON is 0.7 KiB). Thread-safe
 * (striped locks). */
#ifndef RUNTIME_REP_CACHE_H
#define RUNTIME_REP_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/arena.h"

#define REP_CACHE_SLOTS 8192
#define REP_CACHE_MAX_BYTES 16384

/* The kept JSON of (table, workspace, id, version), copied into a (NUL-terminated, its length
 * in *len), or NULL. */
char *rep_cache_get(struct arena *a, const char *table, const char *workspace,
                    const char *id, int64_t version, size_t *len);
/* Keeps json (len bytes) as the representation of (table, workspace, id, version). */
void rep_cache_put(const char *table, const char *workspace, const char *id, int64_t version,
                   const char *json, size_t len);
/* Forgets everything (tests; a server never needs it). */
void rep_cache_clear(void);

#endif
