/* libFuzzer: PROXY protocol headers (runtime/proxy_protocol.c), as a trusted proxy's first
 * bytes. Properties: never crashes or reads outside the input; a complete header's length is
 * within the input and PROXY_PROTOCOL_MAX, and the header alone (without what follows) reads
 * the same; every shorter beginning of it asks for more, never refuses, and a known need is
 * beyond what it has; what asks for a line end has fewer than 107 bytes; a refusal says why. */
#include <stdlib.h>
#include <string.h>

#include "runtime/proxy_protocol.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    struct proxy_protocol_header h, again;
    size_t need, need2;
    enum proxy_protocol_result r = proxy_protocol_parse(data, size, &h, &need);
    if (r == PROXY_PROTOCOL_BAD) {
        if (!h.why)
            abort();
        return 0;
    }
    if (r == PROXY_PROTOCOL_MORE) {
        if (need ? need <= size || need > PROXY_PROTOCOL_MAX : size >= PROXY_PROTOCOL_V1_MAX)
            abort();
        return 0;
    }
    if (need == 0 || need > size || need > PROXY_PROTOCOL_MAX)
        abort();
    /* the header alone, in a buffer of its own size (ASan sees any read past it) */
    unsigned char *copy = malloc(need);
    if (!copy)
        return 0;
    memcpy(copy, data, need);
    if (proxy_protocol_parse(copy, need, &again, &need2) != PROXY_PROTOCOL_DONE ||
        need2 != need || again.local != h.local || again.version != h.version ||
        again.src_len != h.src_len || memcmp(&again.src, &h.src, sizeof h.src) != 0)
        abort();
    for (size_t k = 0; k < need; k++) {
        enum proxy_protocol_result p = proxy_protocol_parse(copy, k, &again, &need2);
        if (p != PROXY_PROTOCOL_MORE || (need2 && (need2 <= k || need2 > need)))
            abort();
    }
    free(copy);
    return 0;
}
