/* Minimal unit-test harness: one binary per runtime module, each test a function named for the
 * behaviour it pins. Prints "N passed, N failed" like every suite in this repo. */
#ifndef TESTS_UNIT_UNIT_H
#define TESTS_UNIT_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_failed_checks;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            unit_failed_checks++;                                                       \
        }                                                                               \
    } while (0)

#define CHECK_STR(a, b)                                                                   \
    do {                                                                                  \
        const char *unit_a_ = (a), *unit_b_ = (b);                                        \
        if (!unit_a_ || !unit_b_ || strcmp(unit_a_, unit_b_) != 0) {                      \
            fprintf(stderr, "  %s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__,            \
                    unit_a_ ? unit_a_ : "(null)", unit_b_ ? unit_b_ : "(null)");          \
            unit_failed_checks++;                                                         \
        }                                                                                 \
    } while (0)

struct unit_test {
    const char *name;
    void (*fn)(void);
};

/* Runs every test, prints one line per failure and the summary; returns the exit code. */
static inline int unit_run(const char *suite, const struct unit_test *tests, size_t n)
{
    int passed = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        int before = unit_failed_checks;
        tests[i].fn();
        if (unit_failed_checks == before) {
            passed++;
        } else {
            failed++;
            fprintf(stderr, "FAIL %s: %s\n", suite, tests[i].name);
        }
    }
    printf("%s: %d passed, %d failed\n", suite, passed, failed);
    return failed ? 1 : 0;
}

#define UNIT_TEST(fn) { #fn, fn }

/* The number after key on its line of a /proc file ("/proc/self/io", "syscw:"); -1 if absent. */
static inline long unit_proc_number(const char *file, const char *key)
{
    FILE *f = fopen(file, "r");
    char line[128];
    long n = -1;
    size_t len = strlen(key);
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, len) == 0)
            n = atol(line + len);
    }
    if (f)
        fclose(f);
    return n;
}

#endif
