/* safe_path.c - can anyone but root and this user change what is at a path?
 *
 * The rule of ssh's StrictModes and of sudo, applied to the whole path up to
 * "/": the file and every directory above it is owned by root or the
 * effective user, and writable by neither its group nor others.  The one
 * exception is a directory writable by others with the sticky bit (/tmp):
 * there nobody but an entry's owner may rename or remove it, and the entry
 * itself must pass.  The path is resolved first (realpath), so the chain
 * checked is the one the loader will follow, whatever symlinks lead to it. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_internal.h"

int safe_stat_reason(const struct stat *st, const char *what, const char *path, char *why, size_t size) {
    why[0] = 0;
    int dir = S_ISDIR(st->st_mode);
    mode_t mode = st->st_mode & 07777;
    if (st->st_uid != 0 && st->st_uid != geteuid())
        str_printf(why, size, "%s %s is owned by uid %u, neither root nor the current user (uid %u)", what, path,
                   (unsigned)st->st_uid, (unsigned)geteuid());
    else if ((mode & S_IWOTH) && !(dir && (mode & S_ISVTX)))
        str_printf(why, size, "%s %s is world-writable (mode %04o)", what, path, (unsigned)mode);
    else if ((mode & S_IWGRP) && !(dir && (mode & S_ISVTX)))
        str_printf(why, size, "%s %s is group-writable (mode %04o)", what, path, (unsigned)mode);
    return why[0] != 0;
}

/* Every directory from `real` (resolved) up to "/": the first is called
 * `what` (shown as `shown`), the others "directory X above <what>". */
static int chain(char *real, const char *what, const char *shown, char *why, size_t size) {
    char above[PATH_MAX + 96];
    for (int first = 1;; first = 0) {
        struct stat st;
        if (stat(real[0] ? real : "/", &st) != 0) return 0; /* gone: the scan reports it */
        if (first) {
            if (safe_stat_reason(&st, what, shown, why, size)) return 1;
        } else {
            str_printf(above, sizeof above, "%s, above the %s,", real[0] ? real : "/", what);
            if (safe_stat_reason(&st, "directory", above, why, size)) return 1;
        }
        if (!real[0] || !strcmp(real, "/")) return 0;
        char *slash = strrchr(real, '/');
        if (!slash) return 0;
        if (slash == real) slash[1] = 0; /* "/x" -> "/" */
        else *slash = 0;
    }
}

int safe_dir_chain(const char *dir, const char *what, char *why, size_t size) {
    why[0] = 0;
    char *real = realpath(dir, NULL);
    if (!real) return 0; /* unreadable or missing: reported where it is opened */
    int bad = chain(real, what, dir, why, size);
    free(real);
    return bad;
}

int safe_file_chain(const char *path, const char *what, const char *dir_what, char *why, size_t size) {
    why[0] = 0;
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    if (safe_stat_reason(&st, what, path, why, size)) return 1;
    char *real = realpath(path, NULL);
    if (!real) return 0;
    char *slash = strrchr(real, '/');
    int bad = 0;
    if (slash) {
        if (slash == real) slash[1] = 0;
        else *slash = 0;
        bad = chain(real, dir_what, real, why, size);
    }
    free(real);
    return bad;
}
