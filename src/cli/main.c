/* tenq: one binary, many subcommands. */
#include "api/api.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "serve") == 0) {
        api_config cfg;
        int rc = api_config_load(&cfg, argc - 2, argv + 2, stderr);
        if (rc != 0) return rc > 0 ? 0 : 2;
        return api_serve(&cfg);
    }
    fprintf(stderr,
            "usage: tenq <serve|work|submit|status|wait|cancel|stats|morgue|tenant|queue|token>\n");
    return 2;
}
