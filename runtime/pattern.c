/* Compiled pattern table behind runtime/pattern.h; regexec() on a compiled regex_t is
 * thread-safe, so workers share one set. */
#include "runtime/pattern.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>

static regex_t *compiled;
static size_t n_compiled;

void pattern_release(void)
{
    for (size_t i = 0; i < n_compiled; i++)
        regfree(&compiled[i]);
    free(compiled);
    compiled = NULL;
    n_compiled = 0;
}

int pattern_init(const char *const *patterns, size_t n, char *err, size_t errlen)
{
    regex_t *set = NULL;
    size_t done = 0;
    int rc = -1;

    pattern_release();
    if (n == 0)
        return 0;
    set = calloc(n, sizeof *set);
    if (!set) {
        snprintf(err, errlen, "out of memory compiling %zu patterns", n);
        goto out;
    }
    for (; done < n; done++) {
        int e = regcomp(&set[done], patterns[done], REG_EXTENDED | REG_NOSUB);
        if (e != 0) {
            char why[128];
            regerror(e, &set[done], why, sizeof why);
            snprintf(err, errlen, "pattern %zu (%s) does not compile: %s", done,
                     patterns[done], why);
            goto out;
        }
    }
    compiled = set;
    n_compiled = n;
    set = NULL;
    rc = 0;
out:
    if (set) {
        for (size_t i = 0; i < done; i++)
            regfree(&set[i]);
        free(set);
    }
    return rc;
}

bool pattern_match(size_t idx, const char *s)
{
    if (idx >= n_compiled || !s)
        return false;
    return regexec(&compiled[idx], s, 0, NULL, 0) == 0;
}
