/* scan.c - candidate plugin files in the search directories.
 *
 * Directories in path order, "*.so" names sorted with strcmp inside each, one
 * file reached twice (two path entries, a symlink) listed once by (dev, ino);
 * unsafe locations (safe_path.c) marked.
 * Names not ending in ".so" cost one readdir entry and a suffix compare, no
 * syscall, so a directory of many unrelated files stays linear and cheap.
 * Failures (unreadable directory, symlink loop...) become listed entries so
 * the user sees them; nothing here aborts the scan. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_internal.h"

static int push(plugin_file_list *l, const char *path, const char *source, plugin_file **out) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        plugin_file *v = realloc(l->v, cap * sizeof *v);
        if (!v) return SGL_ATTN_E_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    plugin_file *f = &l->v[l->n];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    if (!f->path) return SGL_ATTN_E_NOMEM;
    f->source = source;
    l->n++;
    *out = f;
    return SGL_ATTN_OK;
}

static int push_failure(plugin_file_list *l, const char *path, const char *source, const char *why) {
    plugin_file *f;
    int rc = push(l, path, source, &f);
    if (rc) return rc;
    f->unreadable = 1;
    str_copy(f->unreadable_reason, sizeof f->unreadable_reason, why);
    return SGL_ATTN_OK;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_so_suffix(const char *name) {
    size_t n = strlen(name);
    return n > 3 && memcmp(name + n - 3, ".so", 3) == 0;
}

/* Files already listed, by (dev, ino): open addressing, so a directory of
 * many plugins scans in linear time.  ino 0 marks an empty slot (no real
 * file has inode 0). */
typedef struct file_id {
    dev_t dev;
    ino_t ino;
} file_id;

typedef struct id_set {
    file_id *slots;
    size_t cap, n; /* cap is 0 or a power of two */
} id_set;

static size_t id_slot(const id_set *s, dev_t dev, ino_t ino) {
    uint64_t h = ((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)dev * 0xbf58476d1ce4e5b9ull);
    return (size_t)(h ^ (h >> 31)) & (s->cap - 1);
}

/* 1: already there; 0: added; SGL_ATTN_E_NOMEM. */
static int id_set_add(id_set *s, dev_t dev, ino_t ino) {
    if (2 * (s->n + 1) > s->cap) {
        id_set g = {calloc(s->cap ? 2 * s->cap : 64, sizeof(file_id)), s->cap ? 2 * s->cap : 64, 0};
        if (!g.slots) return SGL_ATTN_E_NOMEM;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i].ino) id_set_add(&g, s->slots[i].dev, s->slots[i].ino);
        free(s->slots);
        *s = g;
    }
    for (size_t i = id_slot(s, dev, ino);; i = (i + 1) & (s->cap - 1)) {
        if (!s->slots[i].ino) {
            s->slots[i] = (file_id){dev, ino};
            s->n++;
            return 0;
        }
        if (s->slots[i].dev == dev && s->slots[i].ino == ino) return 1;
    }
}

/* Sorted "*.so" names of an open directory; the stream is consumed. */
static int list_names(DIR *d, char ***names, size_t *n) {
    size_t cap = 0;
    *names = NULL;
    *n = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d))) {
        if (e->d_type == DT_DIR || !has_so_suffix(e->d_name)) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **v = realloc(*names, cap * sizeof *v);
            if (!v) return SGL_ATTN_E_NOMEM;
            *names = v;
        }
        if (!((*names)[*n] = strdup(e->d_name))) return SGL_ATTN_E_NOMEM;
        (*n)++;
    }
    if (*n) qsort(*names, *n, sizeof **names, cmp_names);
    return SGL_ATTN_OK;
}

/* A symlink is followed by the loader: the link itself must be ours or
 * root's, and its target and every directory above the target pass the
 * same rule as the plugin directory. */
static void check_link(int dfd, const char *name, const char *path, plugin_file *f) {
    struct stat lst;
    if (fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(lst.st_mode)) return;
    if (lst.st_uid != 0 && lst.st_uid != geteuid()) {
        str_printf(f->unsafe_reason, sizeof f->unsafe_reason,
                   "symlink %s is owned by uid %u, neither root nor the current user (uid %u)", path,
                   (unsigned)lst.st_uid, (unsigned)geteuid());
        return;
    }
    char *real = realpath(path, NULL);
    if (!real) return;
    safe_file_chain(real, "symlink's target", "directory of the symlink's target", f->unsafe_reason,
                    sizeof f->unsafe_reason);
    free(real);
}

static int scan_one_file(plugin_file_list *out, id_set *seen, int dfd, const search_dir *sd,
                         const char *name, const char *dir_unsafe, const hlog *log) {
    char path[PATH_MAX];
    const char *sep = sd->dir[strlen(sd->dir) - 1] == '/' ? "" : "/";
    str_printf(path, sizeof path, "%s%s%s", sd->dir, sep, name);
    struct stat st;
    if (fstatat(dfd, name, &st, 0) != 0) {
        char why[256];
        int e = errno;
        if (e == ELOOP)
            str_copy(why, sizeof why, "symlink loop (too many levels of symbolic links)");
        else if (e == ENOENT)
            str_copy(why, sizeof why, "dangling symlink: its target does not exist");
        else
            str_printf(why, sizeof why, "cannot stat: %s", strerror(e));
        return push_failure(out, path, sd->source, why);
    }
    if (S_ISDIR(st.st_mode)) return SGL_ATTN_OK; /* a directory named x.so */
    if (!S_ISREG(st.st_mode)) return push_failure(out, path, sd->source, "not a regular file");
    int dup = st.st_ino ? id_set_add(seen, st.st_dev, st.st_ino) : 0;
    if (dup < 0) return dup;
    if (dup) {
        hlog_printf(log, SGL_ATTN_LOG_DEBUG, "%s: same file as one already listed, skipped", path);
        return SGL_ATTN_OK;
    }
    plugin_file *f;
    int rc = push(out, path, sd->source, &f);
    if (rc) return rc;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    if (dir_unsafe[0]) {
        str_copy(f->unsafe_reason, sizeof f->unsafe_reason, dir_unsafe);
    } else if (!safe_stat_reason(&st, "plugin file", path, f->unsafe_reason, sizeof f->unsafe_reason)) {
        check_link(dfd, name, path, f);
    }
    f->unsafe = f->unsafe_reason[0] != 0;
    if (faccessat(dfd, name, R_OK, AT_EACCESS) != 0) {
        f->unreadable = 1;
        str_printf(f->unreadable_reason, sizeof f->unreadable_reason, "cannot read: %s",
                   strerror(errno));
    }
    return SGL_ATTN_OK;
}

static int scan_dir(const search_dir *sd, plugin_file_list *out, id_set *seen, const hlog *log) {
    int dfd = open(sd->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        int e = errno;
        /* Missing directories are normal (noted by paths.c), not failures. */
        if (e == ENOENT || e == ENOTDIR) return SGL_ATTN_OK;
        char why[256];
        if (e == ELOOP)
            str_copy(why, sizeof why, "plugin directory is a symlink loop");
        else
            str_printf(why, sizeof why, "cannot read plugin directory: %s", strerror(e));
        return push_failure(out, sd->dir, sd->source, why);
    }
    /* The directory and everything above it, once for all its files. */
    char dir_unsafe[sizeof ((plugin_file *)0)->unsafe_reason];
    safe_dir_chain(sd->dir, "plugin directory", dir_unsafe, sizeof dir_unsafe);
    DIR *d = fdopendir(dfd); /* owns dfd from here; dfd stays valid for *at() */
    if (!d) {
        char why[256];
        str_printf(why, sizeof why, "cannot read plugin directory: %s", strerror(errno));
        close(dfd);
        return push_failure(out, sd->dir, sd->source, why);
    }
    char **names;
    size_t n;
    int rc = list_names(d, &names, &n);
    for (size_t i = 0; i < n && rc == SGL_ATTN_OK; i++)
        rc = scan_one_file(out, seen, dfd, sd, names[i], dir_unsafe, log);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    closedir(d);
    return rc;
}

int scan_search_path(const search_path *sp, plugin_file_list *out, const hlog *log) {
    memset(out, 0, sizeof *out);
    id_set seen = {NULL, 0, 0};
    int rc = SGL_ATTN_OK;
    for (size_t i = 0; i < sp->n && rc == SGL_ATTN_OK; i++) rc = scan_dir(&sp->dirs[i], out, &seen, log);
    free(seen.slots);
    if (rc) plugin_file_list_free(out);
    return rc;
}

void plugin_file_list_free(plugin_file_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i].path);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}
