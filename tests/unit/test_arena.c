/* Arena: alignment, zeroing, growth past the block size, string helpers, OOM abort. */
#include "runtime/arena.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/unit.h"

static bool all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static void test_allocations_are_16_byte_aligned_and_zeroed(void)
{
    struct arena a;
    arena_init(&a);
    for (size_t n = 0; n < 300; n++) {
        unsigned char *p = arena_alloc(&a, n);
        CHECK(p != NULL);
        CHECK(((uintptr_t)p & 15) == 0);
        CHECK(all_zero(p, n));
        memset(p, 0xAB, n);
    }
    arena_release(&a);
}

/* Blocks are not zeroed as a whole, so what arena_alloc hands out must be zeroed by it: after
 * strings (which leave their padding as it was), and in memory a released arena dirtied. */
static void test_allocations_are_zeroed_after_strings_and_in_reused_memory(void)
{
    for (int round = 0; round < 3; round++) {
        struct arena a;
        arena_init(&a);
        for (size_t n = 1; n < 3000; n += 37) {
            char text[40];
            memset(text, 'x', sizeof text - 1);
            text[sizeof text - 1] = '\0';
            arena_strndup(&a, text, n % 39);
            arena_printf(&a, "%s%zu", text, n);
            unsigned char *p = arena_alloc(&a, n);
            CHECK(all_zero(p, n));
            memset(p, 0xCD, n); /* dirties the blocks the next round may get back from malloc */
        }
        unsigned char *big = arena_alloc(&a, 100000);
        CHECK(all_zero(big, 100000));
        memset(big, 0xCD, 100000);
        arena_release(&a);
    }
}

static void test_allocations_do_not_overlap(void)
{
    struct arena a;
    arena_init(&a);
    unsigned char *ptrs[2000];
    for (int i = 0; i < 2000; i++) {
        ptrs[i] = arena_alloc(&a, 24);
        memset(ptrs[i], i & 0xFF, 24);
    }
    for (int i = 0; i < 2000; i++)
        for (int j = 0; j < 24; j++)
            CHECK(ptrs[i][j] == (unsigned char)(i & 0xFF));
    arena_release(&a);
}

/* An array grown one item at a time keeps every item, moves only when full (4, 8, 16, ...),
 * and after its count is set back reuses the room it has. */
static void test_grow_keeps_items_and_moves_only_when_full(void)
{
    struct arena a;
    arena_init(&a);
    int *items = NULL;
    size_t moves = 0;
    for (size_t n = 0; n < 100; n++) {
        int *next = arena_grow(&a, items, n, sizeof *items);
        if (next != items)
            moves++;
        CHECK(next != items || (n != 0 && n != 4 && n != 8 && n != 16 && n != 32 && n != 64));
        items = next;
        items[n] = (int)n * 7;
        for (size_t k = 0; k <= n; k++)
            CHECK(items[k] == (int)k * 7);
    }
    CHECK(moves == 6); /* 0 (the first room of 4), 4, 8, 16, 32, 64 */
    CHECK(arena_grow(&a, items, 1, sizeof *items) == items);
    CHECK(arena_grow(&a, items, 0, sizeof *items) == items);
    arena_release(&a);
}

static void test_zero_byte_allocations_are_distinct(void)
{
    struct arena a;
    arena_init(&a);
    void *p = arena_alloc(&a, 0), *q = arena_alloc(&a, 0);
    CHECK(p && q && p != q);
    arena_release(&a);
}

static void test_allocation_larger_than_a_block_is_served_and_zeroed(void)
{
    struct arena a;
    arena_init(&a);
    unsigned char *small = arena_alloc(&a, 100);
    unsigned char *big = arena_alloc(&a, 1 << 20);
    CHECK(big != NULL && ((uintptr_t)big & 15) == 0);
    CHECK(all_zero(big, 1 << 20));
    memset(big, 1, 1 << 20);
    /* The small block stays usable after a dedicated big block. */
    unsigned char *after = arena_alloc(&a, 100);
    CHECK(after == small + 112);
    CHECK(a.total >= (1u << 20) + 200);
    arena_release(&a);
}

static void test_many_allocations_grow_the_arena(void)
{
    struct arena a;
    arena_init(&a);
    size_t sum = 0;
    for (int i = 0; i < 10000; i++) {
        size_t n = (size_t)(i % 700) + 1;
        char *p = arena_alloc(&a, n);
        p[n - 1] = 'x';
        sum += n;
    }
    CHECK(a.total >= sum);
    arena_release(&a);
    CHECK(a.head == NULL && a.total == 0);
}

static void test_strdup_and_strndup_copy_and_terminate(void)
{
    struct arena a;
    arena_init(&a);
    CHECK_STR(arena_strdup(&a, "hello"), "hello");
    CHECK_STR(arena_strdup(&a, ""), "");
    CHECK_STR(arena_strndup(&a, "hello world", 5), "hello");
    CHECK_STR(arena_strndup(&a, "", 0), "");
    arena_release(&a);
}

static void test_printf_formats_any_length(void)
{
    struct arena a;
    arena_init(&a);
    CHECK_STR(arena_printf(&a, "%s-%d-%05.1f", "x", 42, 3.14159), "x-42-003.1");
    char big[20000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char *s = arena_printf(&a, "<%s>", big);
    CHECK(strlen(s) == sizeof big + 1);
    CHECK(s[0] == '<' && s[sizeof big] == '>');
    arena_release(&a);
}

static void test_release_accepts_zeroed_and_released_arenas(void)
{
    struct arena a;
    memset(&a, 0, sizeof a);
    arena_release(&a);
    arena_init(&a);
    arena_alloc(&a, 10);
    arena_release(&a);
    arena_release(&a);
    arena_init(&a);
    CHECK(arena_alloc(&a, 10) != NULL);
    arena_release(&a);
}

/* Runs fn in a child and reports whether it died of SIGABRT. */
static bool aborts(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* Keep the expected abort message out of the test output. */
        if (!freopen("/dev/null", "w", stderr))
            _exit(2);
        fn();
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return false;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void alloc_size_max(void)
{
    struct arena a;
    arena_init(&a);
    arena_alloc(&a, SIZE_MAX);
}

static void alloc_size_max_minus_eight(void)
{
    struct arena a;
    arena_init(&a);
    arena_alloc(&a, SIZE_MAX - 8);
}

static void strndup_size_max(void)
{
    struct arena a;
    arena_init(&a);
    arena_strndup(&a, "", SIZE_MAX);
}

static void test_overflowing_sizes_abort_instead_of_wrapping(void)
{
    CHECK(aborts(alloc_size_max));
    CHECK(aborts(alloc_size_max_minus_eight));
    CHECK(aborts(strndup_size_max));
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_allocations_are_16_byte_aligned_and_zeroed),
        UNIT_TEST(test_allocations_do_not_overlap),
        UNIT_TEST(test_allocations_are_zeroed_after_strings_and_in_reused_memory),
        UNIT_TEST(test_zero_byte_allocations_are_distinct),
        UNIT_TEST(test_grow_keeps_items_and_moves_only_when_full),
        UNIT_TEST(test_allocation_larger_than_a_block_is_served_and_zeroed),
        UNIT_TEST(test_many_allocations_grow_the_arena),
        UNIT_TEST(test_strdup_and_strndup_copy_and_terminate),
        UNIT_TEST(test_printf_formats_any_length),
        UNIT_TEST(test_release_accepts_zeroed_and_released_arenas),
        UNIT_TEST(test_overflowing_sizes_abort_instead_of_wrapping),
    };
    return unit_run("arena", tests, sizeof tests / sizeof tests[0]);
}
