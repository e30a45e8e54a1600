/* The APIs' problem codes and titles (handlers/problems.c), registered with the runtime by
 * runtime/main.c. A new code an API raises is added there. */
#ifndef HANDLERS_PROBLEMS_H
#define HANDLERS_PROBLEMS_H

#include <stddef.h>

#include "runtime/problem.h"

extern const struct problem_code handlers_problems[];
extern const size_t handlers_problems_count;

#endif
