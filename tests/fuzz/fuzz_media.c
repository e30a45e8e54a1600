/* libFuzzer: Accept negotiation and raw request body Content-Types (runtime/media.c). Input:
 * byte 0 picks the offered types (a mask over MEDIA_JSON..MEDIA_PDF, in a rotated order) and
 * which parser runs, the rest is the header text. Properties: never crashes or reads past the
 * text; negotiation answers MEDIA_NONE or one of the offered types, and the same answer for
 * the same text; an absent or blank Accept takes the first offered type; "* / *" alone accepts
 * the first; a request type is NONE with a reason or an allowed type without one. */
#include <stdlib.h>
#include <string.h>

#include "runtime/arena.h"
#include "runtime/media.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned sel = data[0];
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0'; /* a header value is a C string (NULs end it early) */
    enum media offered[MEDIA_COUNT];
    size_t n = 0;
    unsigned mask = 0;
    for (unsigned i = 0; i < MEDIA_COUNT - 1; i++) {
        enum media m = (enum media)(MEDIA_JSON + (i + (sel >> 5)) % (MEDIA_COUNT - 1));
        if (sel & (1u << i)) {
            offered[n++] = m;
            mask |= MEDIA_BIT(m);
        }
    }
    if (n == 0) {
        offered[n++] = MEDIA_JSON;
        mask = MEDIA_BIT(MEDIA_JSON);
    }
    enum media got = media_negotiate(text, offered, n);
    if (got != MEDIA_NONE && !(mask & MEDIA_BIT(got)))
        abort();
    if (got != media_negotiate(text, offered, n))
        abort();
    if (media_negotiate(NULL, offered, n) != offered[0] ||
        media_negotiate("*/*", offered, n) != offered[0])
        abort();
    const char *why = NULL;
    enum media rt = media_request_type(text, mask, &why);
    if ((rt == MEDIA_NONE) != (why != NULL) || (rt != MEDIA_NONE && !(mask & MEDIA_BIT(rt))))
        abort();
    if (rt != MEDIA_NONE && media_of(text) != rt)
        abort();
    struct arena a;
    arena_init(&a);
    char *list = media_list(&a, offered, n);
    if (!list || strlen(list) < strlen(media_name(offered[0])))
        abort();
    arena_release(&a);
    free(text);
    return 0;
}
