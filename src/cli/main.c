/* tenq: one binary, many subcommands. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "serve") == 0) {
        fprintf(stderr, "tenq serve: the server is not built yet (see the issues)\n");
        return 1;
    }
    fprintf(stderr,
            "usage: tenq <serve|work|submit|status|wait|cancel|stats|morgue|tenant|queue|token>\n");
    return 2;
}
