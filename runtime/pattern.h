/* The spec's string patterns, compiled once at start (POSIX ERE, regcomp REG_EXTENDED |
 * REG_NOSUB) and matched by index from the generated validators. The table itself is
 * generated (generated/patterns.c) from ECMA-262 patterns by codegen/spec.py. */
#ifndef RUNTIME_PATTERN_H
#define RUNTIME_PATTERN_H

#include <stdbool.h>
#include <stddef.h>

/* Compiles patterns[0..n); on failure nothing stays compiled and err names the pattern.
 * Calling it again replaces the previous set. Not thread-safe: call before serving. */
int pattern_init(const char *const *patterns, size_t n, char *err, size_t errlen);
/* True when s contains a match of pattern idx (an unanchored search, as ECMA-262 `pattern`).
 * False for an index that was never compiled. Safe from any thread after pattern_init(). */
bool pattern_match(size_t idx, const char *s);
/* The same answer from regexec alone, and whether idx takes the fast path (tests). */
bool pattern_match_regex(size_t idx, const char *s);
bool pattern_is_simple(size_t idx);
/* Frees the compiled set. */
void pattern_release(void);

#endif
