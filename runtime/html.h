/* Server-rendered pages (the OAuth sign-in and consent screens): HTML escaping, one page shell
 * with one stylesheet, and the headers that keep such pages safe. Pages carry no script and no
 * external asset; the Content-Security-Policy allows exactly our stylesheet (by its SHA-256),
 * forms that post back here (and, on a consent page, to the client's redirect origin), and no
 * framing. */
#ifndef RUNTIME_HTML_H
#define RUNTIME_HTML_H

#include "runtime/arena.h"

/* s with & < > " ' escaped for text and attribute values. In a. */
char *html_escape(struct arena *a, const char *s);
/* A whole document: doctype, title (escaped here), the stylesheet, then body_html as given.
 * In a. */
char *html_page(struct arena *a, const char *title, const char *body_html);
/* The Content-Security-Policy of a page; form_action is an extra origin its forms may lead to
 * ("https://app.example"), or NULL. In a. */
const char *html_csp(struct arena *a, const char *form_action);

#endif
