/* CSV text (RFC 4180) built in a request's arena: the representation a list answers with
 * Accept: text/csv. Cells are quoted when they must be, quotes doubled, rows end in CRLF, and
 * a text cell a spreadsheet would read as a formula is defused (OWASP CSV injection). Knows
 * nothing of what the columns mean: the caller writes the header row like any other. */
#ifndef RUNTIME_CSV_H
#define RUNTIME_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arena;

struct csv {
    struct arena *a;
    char *p; /* NUL-terminated once anything was written; NULL before */
    size_t len, cap;
    bool in_row; /* a cell was written since the last row end: the next one takes a comma */
};

/* An empty text whose buffer grows in a (it is never freed on its own: the arena is). */
void csv_init(struct csv *c, struct arena *a);
/* n raw bytes, unquoted (a caller's own separators). */
void csv_put(struct csv *c, const char *s, size_t n);
/* One text cell of the current row: quoted when it holds a comma, a quote or a line break,
 * quotes doubled; a value starting with = + - @, tab or CR gets a leading ' so that no
 * spreadsheet evaluates it. NULL is an empty cell. */
void csv_cell(struct csv *c, const char *v);
/* One integer cell, as digits (a leading - is a sign here, not a formula: not defused). */
void csv_int(struct csv *c, int64_t v);
/* Ends the current row (CRLF). */
void csv_row_end(struct csv *c);
/* The text so far ("" when nothing was written) and its length, in the arena. */
const char *csv_text(struct csv *c, size_t *len);

#endif
