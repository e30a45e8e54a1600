/* libFuzzer: application/x-www-form-urlencoded bodies (runtime/form.c). Property: whatever it
 * accepts becomes a JSON object the strict parser accepts, with one string per pair. */
#include <stdlib.h>

#include "runtime/form.h"
#include "runtime/json.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    struct arena a;
    char *json = NULL;
    size_t len = 0;
    const char *why = NULL;
    arena_init(&a);
    if (form_to_json(&a, (const char *)data, size, &json, &len, &why) == 0) {
        struct json_value *v = NULL;
        struct json_error err;
        if (json_parse(&a, json, len, &v, &err) != 0 || v->type != JSON_OBJECT)
            abort();
        for (size_t i = 0; i < v->count; i++)
            if (v->members[i].value->type != JSON_STRING)
                abort();
    } else if (!why) {
        abort();
    }
    arena_release(&a);
    return 0;
}
