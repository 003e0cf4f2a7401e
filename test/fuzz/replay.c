/* Replays fuzz inputs without libFuzzer: `fuzz_replay TARGET DIR...` calls the TARGET harness
 * (harness.h) on every file of each DIR (a missing DIR is skipped: a target may have no
 * regressions yet). `fuzz_replay --all test/fuzz`, the fuzz-regressions test of the default
 * suite, does so for every target on regressions/<target>/ (inputs that once crashed) and
 * corpus/<target>/ (the seeds); a finding aborts, which fails the test. Prints how many files
 * it ran per target. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/harness.h"

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_file(fuzz_fn fn, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    unsigned char *data = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len == cap) {
            cap = cap ? 2 * cap : 65536;
            data = realloc(data, cap);
            if (!data)
                abort();
        }
        got = fread(data + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    fprintf(stderr, "%s\n", path);
    fn(data, len);
    free(data);
    return 0;
}

/* Runs every regular file of `dir` in name order; returns how many, or -1 on a read error. */
static long run_dir(fuzz_fn fn, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        names = realloc(names, (n + 1) * sizeof *names);
        if (!names)
            abort();
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n])
            abort();
        snprintf(names[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, by_name);
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        bad += run_file(fn, names[i]);
        free(names[i]);
    }
    free(names);
    return bad ? -1 : (long)n;
}

static const char *const targets[] = {"scenario", "topology", "sweep", "trace", "results"};

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--all") == 0) { /* the fuzz-regressions test */
        for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
            long total = 0;
            const char *const kinds[] = {"regressions", "corpus"};
            for (size_t k = 0; k < 2; k++) {
                char dir[4096];
                snprintf(dir, sizeof dir, "%s/%s/%s", argv[2], kinds[k], targets[t]);
                long n = run_dir(fuzz_target(targets[t]), dir);
                if (n < 0)
                    return 1;
                total += n;
            }
            printf("%s: %ld inputs replayed, no finding\n", targets[t], total);
        }
        return 0;
    }
    fuzz_fn fn = argc >= 2 ? fuzz_target(argv[1]) : NULL;
    if (!fn) {
        fprintf(stderr, "usage: fuzz_replay scenario|topology|sweep|trace|results DIR...\n"
                        "       fuzz_replay --all TEST_FUZZ_DIR\n");
        return 2;
    }
    long total = 0;
    for (int i = 2; i < argc; i++) {
        long n = run_dir(fn, argv[i]);
        if (n < 0)
            return 1;
        total += n;
    }
    printf("%s: %ld inputs replayed, no finding\n", argv[1], total);
    return 0;
}
