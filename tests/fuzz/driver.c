// SPDX-License-Identifier: Apache-2.0
/* A main() for a fuzz target without libFuzzer: every file named, and every
 * file of every directory named (dot files aside, in name order), is read
 * into a buffer of its own size and fed once to LLVMFuzzerTestOneInput.
 * ctest runs each target this way over its seed corpus and its regressions
 * (CMakeLists.txt, "fuzz targets"): a crash, a sanitizer report or a failed
 * check there fails the test, and so does running no input at all.  A path
 * that does not exist is passed over (a target that never crashed has no
 * regressions/TARGET/ folder). */
#include <errno.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        perror(path);
        fclose(f);
        return -1;
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf || fread(buf, 1, n, f) != n) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    fprintf(stderr, "fuzz input %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int only_visible(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

int main(int argc, char **argv)
{
    int runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            if (errno == ENOENT) {
                fprintf(stderr, "%s: none\n", argv[i]);
                continue;
            }
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) != 0) return 1;
            runs++;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, only_visible, by_name);
        if (n < 0) {
            perror(argv[i]);
            return 1;
        }
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
            struct stat fs;
            if (stat(path, &fs) == 0 && S_ISREG(fs.st_mode)) {
                if (run_file(path) != 0) return 1;
                runs++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("%d inputs ran\n", runs);
    return runs > 0 ? 0 : 1;
}
