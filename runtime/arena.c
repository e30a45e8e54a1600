/* Per-request bump allocator: a list of blocks, newest first. Small allocations share blocks
 * that grow as the arena grows; a large one gets a block of its own. Blocks are not zeroed as
 * a whole: arena_alloc zeroes what it hands out, the string helpers only write their bytes (the
 * blocks' unused halves and the strings, most of a list's arena, were zeroed for nothing). */
#include "runtime/arena.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 16
#define BLOCK_MIN ((size_t)8 * 1024)
#define BLOCK_MAX ((size_t)256 * 1024)

struct arena_block {
    struct arena_block *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    /* The header is padded to ALIGN so data starts aligned. */
    _Alignas(ALIGN) unsigned char data[];
};

static _Noreturn void out_of_memory(size_t n)
{
    fprintf(stderr, "arena: out of memory allocating %zu bytes\n", n);
    abort();
}

/* Rounds n up to ALIGN; aborts when that (or the block header on top) would overflow. */
static size_t round_up(size_t n)
{
    if (n > SIZE_MAX - ALIGN - sizeof(struct arena_block))
        out_of_memory(n);
    return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

static struct arena_block *block_new(size_t size)
{
    size_t bytes = sizeof(struct arena_block) + size;
    /* aligned_alloc wants a multiple of the alignment; size and the header both are. */
    struct arena_block *b = aligned_alloc(ALIGN, bytes);
    if (!b)
        out_of_memory(size);
    b->next = NULL;
    b->size = size;
    b->used = 0;
    return b;
}

void arena_init(struct arena *a)
{
    a->head = NULL;
    a->total = 0;
}

void arena_release(struct arena *a)
{
    struct arena_block *b = a->head;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->total = 0;
}

/* need bytes (a multiple of ALIGN), as they were left: the caller writes or zeroes them. */
static void *take(struct arena *a, size_t need)
{
    struct arena_block *b = a->head;
    if (b && b->size - b->used >= need) {
        void *p = b->data + b->used;
        b->used += need;
        a->total += need;
        return p;
    }
    /* Blocks double with the arena so a big request body costs few mallocs. */
    size_t grow = b ? b->size * 2 : BLOCK_MIN;
    if (grow > BLOCK_MAX)
        grow = BLOCK_MAX;
    if (need > grow / 2) {
        /* A dedicated block; slotting it behind the head keeps the head's free space usable. */
        struct arena_block *big = block_new(need);
        big->used = need;
        if (b) {
            big->next = b->next;
            b->next = big;
        } else {
            a->head = big;
        }
        a->total += need;
        return big->data;
    }
    struct arena_block *nb = block_new(grow);
    nb->next = b;
    a->head = nb;
    nb->used = need;
    a->total += need;
    return nb->data;
}

void *arena_alloc(struct arena *a, size_t n)
{
    /* Zero-byte requests still get a distinct, valid pointer. */
    size_t need = round_up(n ? n : 1);
    void *p = take(a, need);
    memset(p, 0, n);
    return p;
}

void *arena_grow(struct arena *a, void *items, size_t count, size_t size)
{
    if (items && (count < 4 || (count & (count - 1)) != 0))
        return items; /* room: the array is full only at 4, 8, 16, ... */
    size_t room = count < 4 ? 4 : count * 2;
    if (size && room > SIZE_MAX / size)
        out_of_memory(SIZE_MAX);
    void *p = arena_alloc(a, room * size);
    if (items && count)
        memcpy(p, items, count * size);
    return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX)
        out_of_memory(n);
    char *p = take(a, round_up(n + 1));
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_vprintf(struct arena *a, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    /* Straight into the head block's free space when it fits (one formatting pass, not two). */
    struct arena_block *b = a->head;
    size_t room = b ? b->size - b->used : 0;
    int n = vsnprintf(room ? (char *)b->data + b->used : NULL, room, fmt, copy);
    va_end(copy);
    if (n >= 0 && (size_t)n < room) {
        char *p = (char *)b->data + b->used;
        size_t need = round_up((size_t)n + 1);
        b->used += need;
        a->total += need;
        return p;
    }
    if (n < 0) {
        /* Only an invalid format or wide-char conversion gets here: a programming error. */
        fprintf(stderr, "arena: vsnprintf failed for format \"%s\"\n", fmt);
        abort();
    }
    char *p = take(a, round_up((size_t)n + 1));
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = arena_vprintf(a, fmt, ap);
    va_end(ap);
    return p;
}
