/* options_man.c — rewrites the OPTIONS section of man/jobscope-run.1.scd
 * from the options table (src/cli/options.c), after a change to an option:
 *
 *   build/helpers/options_man man/jobscope-run.1.scd
 *
 * tests/unit/test_options.c fails until the page and the table agree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/options.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s man/jobscope-run.1.scd\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    static char page[1 << 20];
    size_t n = fread(page, 1, sizeof page - 1, f);
    fclose(f);
    page[n] = 0;
    char *a = strstr(page, "# OPTIONS"), *b = a ? strstr(a + 1, "\n# ") : NULL;
    if (!a || !b) {
        fprintf(stderr, "%s: no OPTIONS section followed by another\n", argv[1]);
        return 1;
    }
    f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fwrite(page, 1, (size_t)(a - page), f);
    options_man(f);
    fputs(b, f);
    return fclose(f) == 0 ? 0 : 1;
}
