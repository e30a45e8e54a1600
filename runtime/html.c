/* The page shell and its stylesheet. The stylesheet's hash is computed once, on first use. */
#include "runtime/html.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>

#include "runtime/digest.h"

static const char stylesheet[] =
    ":root{color-scheme:light;--ink:#1b2430;--muted:#5b6675;--line:#d9dee5;--brand:#0b3d91;"
    "--brand-dark:#082c69;--bg:#f3f5f8;--danger:#a4161a}"
    "*{box-sizing:border-box}"
    "body{margin:0;background:var(--bg);color:var(--ink);font:16px/1.5 system-ui,-apple-system,"
    "'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif}"
    "main{max-width:30rem;margin:6vh auto;padding:0 1rem}"
    ".brand{display:flex;align-items:center;gap:.5rem;font-weight:600;letter-spacing:.01em;"
    "color:var(--brand);margin-bottom:1rem}"
    ".brand .mark{display:inline-grid;place-items:center;width:1.75rem;height:1.75rem;"
    "border-radius:.4rem;background:var(--brand);color:#fff;font-size:.95rem}"
    ".card{background:#fff;border:1px solid var(--line);border-radius:.75rem;padding:1.75rem;"
    "box-shadow:0 1px 2px rgba(16,24,40,.06)}"
    "h1{font-size:1.35rem;line-height:1.3;margin:0 0 .5rem}"
    "p{margin:.5rem 0}.muted{color:var(--muted);font-size:.92rem}"
    "label{display:block;font-weight:600;font-size:.92rem;margin:1rem 0 .35rem}"
    "input[type=email],input[type=password],input[type=text]{width:100%;padding:.6rem .7rem;"
    "border:1px solid #b8c0cc;border-radius:.45rem;font:inherit}"
    "input:focus{outline:2px solid var(--brand);outline-offset:1px}"
    ".actions{display:flex;gap:.75rem;margin-top:1.5rem}"
    "button{flex:1;padding:.65rem 1rem;border-radius:.45rem;font:inherit;font-weight:600;"
    "cursor:pointer;border:1px solid var(--brand)}"
    "button.primary{background:var(--brand);color:#fff}"
    "button.primary:hover{background:var(--brand-dark)}"
    "button.secondary{background:#fff;color:var(--brand)}"
    "ul.scopes{list-style:none;padding:0;margin:1rem 0;border:1px solid var(--line);"
    "border-radius:.5rem}"
    "ul.scopes li{padding:.65rem .85rem;border-top:1px solid var(--line)}"
    "ul.scopes li:first-child{border-top:0}"
    "ul.scopes b{display:block;font-size:.95rem}"
    "ul.scopes span{color:var(--muted);font-size:.88rem}"
    ".who{display:flex;justify-content:space-between;gap:1rem;padding:.6rem .85rem;"
    "background:var(--bg);border-radius:.5rem;font-size:.92rem}"
    ".error{border-left:4px solid var(--danger);background:#fdf2f2;padding:.6rem .85rem;"
    "border-radius:.35rem;color:var(--danger);margin:1rem 0 0}"
    "code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em;"
    "word-break:break-all}"
    "footer{margin-top:1rem;text-align:center}";

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char style_hash[64]; /* base64 of SHA-256, as CSP hash sources spell it */

static void hash_stylesheet(void)
{
    unsigned char d[DIGEST_BYTES];
    if (digest_sha256(stylesheet, strlen(stylesheet), d) == 0)
        EVP_EncodeBlock((unsigned char *)style_hash, d, DIGEST_BYTES);
}

char *html_escape(struct arena *a, const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++)
        n += strchr("&<>\"'", *p) ? 6 : 1;
    char *out = arena_alloc(a, n + 1), *o = out;
    for (const char *p = s; *p; p++) {
        const char *e = *p == '&'   ? "&amp;"
                        : *p == '<' ? "&lt;"
                        : *p == '>' ? "&gt;"
                        : *p == '"' ? "&quot;"
                        : *p == '\'' ? "&#39;"
                                     : NULL;
        if (e) {
            memcpy(o, e, strlen(e));
            o += strlen(e);
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

char *html_page(struct arena *a, const char *title, const char *body_html)
{
    return arena_printf(a,
                        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                        "<meta name=\"referrer\" content=\"no-referrer\">"
                        "<title>%s</title><style>%s</style></head><body><main>"
                        "<div class=\"brand\"><span class=\"mark\" aria-hidden=\"true\">T</span>"
                        "Treasury</div>%s</main></body></html>",
                        html_escape(a, title), stylesheet, body_html);
}

const char *html_csp(struct arena *a, const char *form_action)
{
    pthread_once(&once, hash_stylesheet);
    return arena_printf(a,
                        "default-src 'none'; style-src 'sha256-%s'; form-action 'self'%s%s; "
                        "frame-ancestors 'none'; base-uri 'none'",
                        style_hash, form_action ? " " : "", form_action ? form_action : "");
}
