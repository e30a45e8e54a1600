/* libFuzzer: the strict JSON parser (runtime/json.c). Properties: never crashes, and a document
 * it accepts re-encodes (runtime/jsonw.c) to text it accepts again and that re-encodes to the
 * same bytes (the canonical form is a fixed point). */
#include <stdlib.h>
#include <string.h>

#include "runtime/json.h"
#include "runtime/jsonw.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static char *encode(const struct json_value *v, size_t *len)
{
    struct jsonw w;
    jsonw_init(&w);
    jsonw_value(&w, v);
    char *out = jsonw_take(&w, len);
    jsonw_release(&w);
    return out;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    struct arena a;
    struct json_value *v = NULL, *again = NULL;
    struct json_error err;
    arena_init(&a);
    if (json_parse(&a, (const char *)data, size, &v, &err) == 0) {
        size_t n1 = 0, n2 = 0;
        char *one = encode(v, &n1);
        if (!one || json_parse(&a, one, n1, &again, &err) != 0)
            abort();
        char *two = encode(again, &n2);
        if (!two || n1 != n2 || memcmp(one, two, n1) != 0)
            abort();
        free(one);
        free(two);
    }
    arena_release(&a);
    return 0;
}
