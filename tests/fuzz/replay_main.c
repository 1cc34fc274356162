/* replay_main.c - runs a fuzz target over committed inputs without
 * libFuzzer: every file under the directories in REPLAY_DIRS (colon-separated,
 * set at build time: the target's regressions, then its seed corpus), or
 * the files/directories given on the command line.  This is how every crash
 * the fuzzers ever found stays fixed: its input is committed under
 * tests/fuzz/regressions/<target>/ and replayed by `make unit` (and under
 * ASan/valgrind by the sanitize steps). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    /* Exactly the file's bytes, in their own allocation: a read past them is
     * an ASan error, as it is under libFuzzer. */
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        fclose(f);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

static int replay(const char *path, size_t *count) {
    struct stat st;
    if (stat(path, &st) != 0) return 0; /* an absent optional directory */
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) return 1;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, names[i]->d_name);
            rc |= replay(p, count);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    size_t count = 0;
    int rc = 0;
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            rc |= replay(argv[i], &count);
    } else {
        char dirs[] = REPLAY_DIRS;
        for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save))
            rc |= replay(d, &count);
    }
    printf("# %s: replayed %zu inputs\n", argv[0], count);
    return rc;
}
