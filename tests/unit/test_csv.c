/* Unit tests for runtime/csv.c: RFC 4180 quoting, the CSV-injection guard on text cells (not
 * on integers), CRLF row ends, and a text longer than the first buffer. */
#include <string.h>

#include "runtime/arena.h"
#include "runtime/csv.h"
#include "tests/unit/unit.h"

static void test_cells_are_quoted_and_formulas_defused(void)
{
    struct arena a;
    arena_init(&a);
    struct csv c;
    csv_init(&c, &a);
    size_t len;
    CHECK_STR(csv_text(&c, &len), "");
    CHECK(len == 0);
    csv_cell(&c, "plain");
    csv_cell(&c, NULL);
    csv_cell(&c, "a,b");
    csv_cell(&c, "say \"hi\"");
    csv_cell(&c, "two\nlines");
    csv_row_end(&c);
    csv_cell(&c, "=SUM(A1)");
    csv_cell(&c, "-1");
    csv_cell(&c, "@x, y");
    csv_cell(&c, "+\"q\"");
    csv_int(&c, -7000);
    csv_int(&c, INT64_MAX);
    csv_row_end(&c);
    const char *t = csv_text(&c, &len);
    CHECK_STR(t, "plain,,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\"\r\n"
                 "'=SUM(A1),'-1,\"'@x, y\",\"'+\"\"q\"\"\",-7000,9223372036854775807\r\n");
    CHECK(len == strlen(t));
    arena_release(&a);
}

static void test_a_long_text_grows_its_buffer(void)
{
    struct arena a;
    arena_init(&a);
    struct csv c;
    csv_init(&c, &a);
    for (int i = 0; i < 10000; i++) {
        csv_int(&c, i);
        csv_cell(&c, "x");
        csv_row_end(&c);
    }
    size_t len;
    const char *t = csv_text(&c, &len);
    CHECK(strncmp(t, "0,x\r\n1,x\r\n", 10) == 0);
    CHECK(len == strlen(t));
    CHECK(strcmp(t + len - 8, "9999,x\r\n") == 0);
    arena_release(&a);
}

int main(void)
{
    static const struct unit_test tests[] = {
        UNIT_TEST(test_cells_are_quoted_and_formulas_defused),
        UNIT_TEST(test_a_long_text_grows_its_buffer),
    };
    return unit_run("csv", tests, sizeof tests / sizeof tests[0]);
}
