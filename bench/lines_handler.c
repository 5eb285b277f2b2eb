// SPDX-License-Identifier: Apache-2.0
/* The lines handler of make bench-worker: answers each job line with ok at
 * once, so that what is measured is tenq work and the server.  Reads the
 * id at the head of the line (the lease answer puts it first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    while (getline(&line, &cap, stdin) > 0) {
        const char *p = strstr(line, "\"id\":");
        unsigned long long id = p ? strtoull(p + 5, NULL, 10) : 0;
        printf("{\"id\":%llu,\"ok\":true}\n", id);
        fflush(stdout);
    }
    free(line);
    return 0;
}
