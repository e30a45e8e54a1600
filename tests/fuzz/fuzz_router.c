/* libFuzzer: the generated route matcher (generated/routes.c). The first byte picks the
 * method, the rest is the path. Properties: never crashes; a match names an operation with that
 * method whose template has as many parameters as were captured. */
#include <stdlib.h>
#include <string.h>

#include "generated/routes.h"
#include "runtime/arena.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int ready;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD",
                                          "OPTIONS", "get"};
    if (!ready) {
        char err[256];
        if (routes_init(err, sizeof err) != 0)
            abort();
        ready = 1;
    }
    if (size < 1)
        return 0;
    const char *method = methods[data[0] % 8];
    char *path = malloc(size);
    if (!path)
        return 0;
    memcpy(path, data + 1, size - 1);
    path[size - 1] = '\0';
    struct arena a;
    struct route_match m;
    char allow[128];
    arena_init(&a);
    memset(&m, 0, sizeof m);
    if (routes_match(&a, method, path, &m, allow, sizeof allow) == ROUTE_FOUND) {
        if (!m.op || strcmp(m.op->method, method) != 0)
            abort();
        int braces = 0;
        for (const char *p = m.op->path; *p; p++)
            braces += *p == '{';
        if (braces != m.n_params)
            abort();
    }
    arena_release(&a);
    free(path);
    return 0;
}
