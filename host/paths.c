/* paths.c - the plugin search path and where each directory came from.
 *
 * Order: options->plugin_path, then SGL_ATTN_PLUGIN_PATH, then the drop-in
 * directory next to this library (<libdir>/sglattn/plugins, which is the
 * build tree's when the library runs from build/, since build/ mirrors the
 * install layout).  An empty component never means the current directory. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include "host_internal.h"

extern char **environ;

#define PATH_ENV "SGL_ATTN_PLUGIN_PATH"

/* Anything in this library will do as a dladdr anchor; a constant keeps it
 * free of mutable state. */
static const char lib_anchor = 0;

const char *host_library_path(char *buf, size_t size) {
    Dl_info info;
    str_copy(buf, size, "");
    if (!dladdr(&lib_anchor, &info) || !info.dli_fname) return buf;
    char *real = realpath(info.dli_fname, NULL);
    str_copy(buf, size, real ? real : info.dli_fname);
    free(real);
    return buf;
}

/* <libdir> + suffix, or "" when the library cannot say where it is. */
static const char *beside_library(char *buf, size_t size, const char *suffix) {
    char lib[PATH_MAX];
    host_library_path(lib, sizeof lib);
    char *slash = strrchr(lib, '/');
    if (!slash) {
        str_copy(buf, size, "");
        return buf;
    }
    *slash = 0;
    str_printf(buf, size, "%s/%s", lib, suffix);
    return buf;
}

const char *search_path_default_dir(char *buf, size_t size) {
    return beside_library(buf, size, "sglattn/plugins");
}

/* sysconfdir relative to libdir, as `make` was told (../etc for a prefix,
 * ../../etc for /usr, whose conf is in /etc). */
#ifndef SGL_ATTN_CONF_FROM_LIBDIR
#define SGL_ATTN_CONF_FROM_LIBDIR "../etc"
#endif

/* <libdir>/<rel>/sglattn/sglattn.json with the ".." resolved, so the path
 * reads as the user would write it. */
static int conf_at(const char *rel, char *buf, size_t size) {
    char dir[PATH_MAX];
    host_library_path(dir, sizeof dir);
    char *slash = strrchr(dir, '/'); /* the file's directory: <libdir> */
    if (!slash) return -1;
    *slash = 0;
    for (const char *p = rel; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            char *up = strrchr(dir, '/');
            if (!up) return -1;
            *up = 0;
        } else if (n && !(n == 1 && p[0] == '.')) {
            size_t used = strlen(dir);
            if (used + 1 + n >= sizeof dir) return -1;
            dir[used] = '/';
            memcpy(dir + used + 1, p, n);
            dir[used + 1 + n] = 0;
        }
        p += n;
        while (*p == '/') p++;
    }
    str_printf(buf, size, "%s/sglattn/sglattn.json", dir);
    return 0;
}

/* The conf where this library's install puts it; the build tree's (and a
 * prefix install's) ../etc when that one is not there. */
const char *search_path_default_conf(char *buf, size_t size) {
    struct stat st;
    if (conf_at(SGL_ATTN_CONF_FROM_LIBDIR, buf, size) == 0 && stat(buf, &st) == 0) return buf;
    char first[PATH_MAX];
    str_copy(first, sizeof first, buf);
    if (conf_at("../etc", buf, size) == 0 && stat(buf, &st) == 0) return buf;
    str_copy(buf, size, first);
    return buf;
}

void search_path_note(search_path *sp, const hlog *log, int level, const char *text) {
    hlog_printf(log, level, "%s", text);
    if (sp->n_notes < sizeof sp->notes / sizeof sp->notes[0])
        str_copy(sp->notes[sp->n_notes++], sizeof sp->notes[0], text);
}

static int add_dir(search_path *sp, const char *dir, size_t len, const char *source) {
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? sp->cap * 2 : 8;
        search_dir *v = realloc(sp->dirs, cap * sizeof *v);
        if (!v) return SGL_ATTN_E_NOMEM;
        sp->dirs = v;
        sp->cap = cap;
    }
    search_dir *d = &sp->dirs[sp->n];
    d->dir = strndup(dir, len);
    if (!d->dir) return SGL_ATTN_E_NOMEM;
    d->source = source;
    d->note[0] = 0;
    struct stat st;
    if (stat(d->dir, &st) != 0)
        str_printf(d->note, sizeof d->note, "%s", errno == ENOENT ? "does not exist" : strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        str_copy(d->note, sizeof d->note, "not a directory");
    else if (d->dir[0] != '/')
        str_copy(d->note, sizeof d->note, "relative: resolved against the current directory");
    sp->n++;
    return SGL_ATTN_OK;
}

/* Split a colon-separated list; empty components are counted, not added. */
static int add_list(search_path *sp, const hlog *log, const char *list, const char *source) {
    size_t empty = 0;
    const char *p = list;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (len == 0) {
            empty++;
        } else {
            int rc = add_dir(sp, p, len, source);
            if (rc) return rc;
        }
        if (!colon) break;
        p = colon + 1;
    }
    if (empty) {
        char note[256];
        str_printf(note, sizeof note,
                   "%s: %zu empty component%s ignored (an empty component never means the current "
                   "directory)",
                   source, empty, empty == 1 ? "" : "s");
        search_path_note(sp, log, SGL_ATTN_LOG_INFO, note);
    }
    return SGL_ATTN_OK;
}

/* A setuid/setgid program reads none of our variables (secure_getenv): the
 * ones its caller set are named, so their absence of effect is no mystery. */
static void note_ignored_env(search_path *sp, const hlog *log) {
    if (!getauxval(AT_SECURE)) return;
    char names[400] = "";
    size_t n = 0, shown = 0;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "SGL_ATTN_", 9)) continue;
        size_t len = strcspn(*e, "=");
        size_t used = strlen(names);
        if (used + len + 8 < sizeof names) {
            str_printf(names + used, sizeof names - used, "%s%.*s", shown ? ", " : "", (int)len, *e);
            shown++;
        }
        n++;
    }
    if (!n) return;
    char note[sizeof sp->notes[0]];
    str_printf(note, sizeof note, "the program runs setuid/setgid: environment variables ignored: %s%s", names,
               n > shown ? ", ..." : "");
    search_path_note(sp, log, SGL_ATTN_LOG_WARN, note);
}

int search_path_build(search_path *sp, const sgl_attn_host_options *o, const hlog *log) {
    memset(sp, 0, sizeof *sp);
    int rc = SGL_ATTN_OK;
    note_ignored_env(sp, log);
    if (o && o->plugin_path && (rc = add_list(sp, log, o->plugin_path, "options"))) goto fail;
    if (!o || !o->ignore_env_path) {
        const char *env = secure_getenv(PATH_ENV);
        /* secure_getenv hides the variable from a setuid/setgid program; say so
         * rather than ignore it silently. */
        if (!env && getenv(PATH_ENV))
            search_path_note(sp, log, SGL_ATTN_LOG_WARN,
                     PATH_ENV " ignored: the program runs setuid/setgid (secure_getenv)");
        if (env && (rc = add_list(sp, log, env, PATH_ENV))) goto fail;
    }
    if (!o || !o->no_default_dir) {
        char dir[PATH_MAX];
        search_path_default_dir(dir, sizeof dir);
        if (dir[0]) {
            if ((rc = add_dir(sp, dir, strlen(dir), "drop-in"))) goto fail;
        } else {
            search_path_note(sp, log, SGL_ATTN_LOG_WARN,
                     "drop-in directory unknown: dladdr could not locate libsglattn");
        }
    }
    return SGL_ATTN_OK;
fail:
    search_path_free(sp);
    return rc;
}

void search_path_free(search_path *sp) {
    for (size_t i = 0; i < sp->n; i++) free(sp->dirs[i].dir);
    free(sp->dirs);
    sp->dirs = NULL;
    sp->n = sp->cap = 0;
}
