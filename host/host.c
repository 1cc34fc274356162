/* host.c - the public host API: open (search, scan, load, negotiate, probe),
 * enumerate, close.
 *
 * A host is immutable after open, so every query may run from any thread
 * without a lock.  `live` counts one reference for the open handle plus one
 * per backend instance; close drops the handle's reference and the last
 * reference frees the host, so nothing is unloaded while an instance lives.
 *
 * Output structs (plugin info, caps) are written up to the struct_size the
 * caller set, 0 meaning this header's size. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"

/* ------------------------------------------------------ callbacks for plugins */

static void plugin_log(void *ctx, int level, const char *plugin, const char *fmt, ...) {
    const sgl_attn_host *h = ctx;
    if (!h || !fmt || level > h->log.level) return;
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hlog_printf(&h->log, level, "%s: %s", plugin ? plugin : "plugin", msg);
}

static const char *plugin_get_option(void *ctx, const char *plugin, const char *key) {
    const sgl_attn_host *h = ctx;
    if (!h || !plugin || !key) return NULL;
    return conf_plugin_option(h->conf, plugin, key);
}

/* ------------------------------------------------------------- admission */

static int env_is_1(const char *name) {
    const char *v = secure_getenv(name);
    return v && !strcmp(v, "1");
}

/* The earlier plugin that owns `name`: a broken one (its probe crashed, its
 * caps were refused) owns nothing, so a good copy later in the path serves. */
static const plugin_entry *name_owner(const sgl_attn_host *h, size_t upto, const char *name) {
    for (size_t j = 0; j < upto; j++) {
        const plugin_entry *p = &h->plugins[j];
        int owns = p->info.status == SGL_ATTN_PLUGIN_USABLE || p->info.status == SGL_ATTN_PLUGIN_UNAVAILABLE ||
                   p->info.status == SGL_ATTN_PLUGIN_DISABLED;
        if (owns && p->info.name[0] && !strcmp(p->info.name, name))
            return p;
    }
    return NULL;
}

static void drop_module(sgl_attn_host *h, plugin_entry *e) {
    module_unload(&e->module, h->never_unload);
    e->loaded = 0;
    memset(&e->desc, 0, sizeof e->desc); /* its pointers die with the module */
}

/* An earlier plugin owns the name, or the conf disables it: 1 with the
 * status and reason set. */
static int shadowed_or_disabled(sgl_attn_host *h, plugin_entry *e) {
    sgl_attn_plugin_info *in = &e->info;
    const plugin_entry *owner = name_owner(h, (size_t)(e - h->plugins), in->name);
    if (owner) {
        in->status = SGL_ATTN_PLUGIN_SHADOWED;
        str_printf(in->reason, sizeof in->reason, "shadowed by %s", owner->info.path);
        return 1;
    }
    const char *pattern = NULL;
    if (conf_is_disabled(h->conf, in->name, &pattern)) {
        in->status = SGL_ATTN_PLUGIN_DISABLED;
        str_printf(in->reason, sizeof in->reason, "disabled by conf pattern \"%s\"%s%s",
                   pattern ? pattern : "?", h->conf_path[0] ? " in " : "", h->conf_path);
        return 1;
    }
    return 0;
}

/* In process: negotiate, then shadowing, conf, probe: the entry's final
 * status.  threads0 (> 0 for a file) is this process's thread count before
 * the file was loaded: threads its constructors or entry point started would
 * outlive dlclose, so such a file is never unloaded, whatever its verdict.
 * Counted around the load, so a thread another part of the process starts
 * meanwhile only pins a file needlessly; a probe's threads belong to the
 * device's runtime and are not counted. */
static void admit(sgl_attn_host *h, plugin_entry *e, sgl_attn_plugin_entry_fn entry, int threads0) {
    sgl_attn_plugin_info *in = &e->info;
    uint16_t maj, min;
    int st = plugin_negotiate(entry, &h->api, &e->desc, &maj, &min, in->reason, sizeof in->reason);
    int threads1 = threads0 > 0 ? host_thread_count() : -1;
    if (threads0 > 0 && threads1 > threads0) {
        e->module.pinned = 1;
        hlog_printf(&h->log, SGL_ATTN_LOG_WARN,
                    "%s: %d thread%s appeared while it loaded; it is never unloaded (isolation refuses such a file)",
                    in->path, threads1 - threads0, threads1 - threads0 == 1 ? "" : "s");
    }
    in->abi_major = maj;
    in->abi_minor = min;
    if (st != SGL_ATTN_PLUGIN_USABLE) {
        in->status = st;
        drop_module(h, e);
        return;
    }
    e->loaded = 1;
    host_fill_info(in, &e->desc, maj, min);
    if (shadowed_or_disabled(h, e)) {
        drop_module(h, e);
        return;
    }
    char why[SGL_ATTN_REASON_MAX + 64];
    int rc = probe_plugin(&e->desc, &e->caps, &e->n_caps, why, sizeof why);
    if (rc != SGL_ATTN_OK) {
        in->status = SGL_ATTN_PLUGIN_LOAD_ERROR;
        str_copy(in->reason, sizeof in->reason, why);
        drop_module(h, e);
        return;
    }
    probe_set_status(&e->info, e->caps, e->n_caps);
}

/* What can be decided without running any of the file's code: unreadable,
 * an unsafe location, a file name the conf disables.  1 when decided. */
static int refuse_unloaded(sgl_attn_host *h, plugin_entry *e, const plugin_file *f) {
    sgl_attn_plugin_info *in = &e->info;
    if (f->unreadable) {
        in->status = SGL_ATTN_PLUGIN_LOAD_ERROR;
        str_copy(in->reason, sizeof in->reason, f->unreadable_reason);
        return 1;
    }
    if (f->unsafe && !h->allow_unsafe) {
        in->status = SGL_ATTN_PLUGIN_DISABLED;
        str_printf(in->reason, sizeof in->reason,
                   "unsafe location, not loaded: %s (conf \"allow_unsafe_paths\" permits it)", f->unsafe_reason);
        return 1;
    }
    /* The conf disables plugin names; a file named after its plugin (the
     * convention) is refused here, before dlopen runs its constructors. */
    const char *base = strrchr(f->path, '/');
    char stem[SGL_ATTN_NAME_MAX + 8];
    str_copy(stem, sizeof stem, base ? base + 1 : f->path);
    size_t n = strlen(stem);
    if (n > 3 && !strcmp(stem + n - 3, ".so")) stem[n - 3] = 0;
    const char *pattern = NULL;
    if (conf_is_disabled(h->conf, stem, &pattern)) {
        in->status = SGL_ATTN_PLUGIN_DISABLED;
        str_printf(in->reason, sizeof in->reason, "disabled by conf pattern \"%s\"%s%s: the file name matches, so "
                   "it is not loaded", pattern ? pattern : "?", h->conf_path[0] ? " in " : "", h->conf_path);
        return 1;
    }
    if (f->unsafe)
        hlog_printf(&h->log, SGL_ATTN_LOG_WARN, "%s: loading from an unsafe location (allowed by conf): %s",
                    f->path, f->unsafe_reason);
    return 0;
}

static void admit_file(sgl_attn_host *h, plugin_entry *e, const plugin_file *f) {
    sgl_attn_plugin_info *in = &e->info;
    if (refuse_unloaded(h, e, f)) return;
    int t0 = host_thread_count();
    int st = module_load(f->path, &e->module, in->reason, sizeof in->reason);
    if (st != SGL_ATTN_PLUGIN_USABLE) {
        in->status = st;
        return;
    }
    admit(h, e, e->module.entry, t0 > 0 ? t0 : 0);
}

/* A file that passed its first contact in a child: shadowing and the conf
 * by its name, the probe's caps, and only then dlopen here. */
static void admit_contacted(sgl_attn_host *h, plugin_entry *e, const plugin_file *f, contact *c) {
    sgl_attn_plugin_info *in = &e->info;
    if (c->have_info) {
        sgl_attn_plugin_info keep = *in; /* path, source */
        *in = c->info;
        in->struct_size = keep.struct_size;
        memcpy(in->path, keep.path, sizeof in->path);
        memcpy(in->source, keep.source, sizeof in->source);
        in->n_devices = 0;
    } else {
        in->abi_major = c->info.abi_major;
        in->abi_minor = c->info.abi_minor;
    }
    in->reason[0] = 0;
    /* As in process: an earlier owner of the name or the conf decide before
     * the probe's verdict (a shadowed plugin's probe would not have run). */
    if (c->have_info && shadowed_or_disabled(h, e)) return;
    if (c->status != SGL_ATTN_PLUGIN_USABLE) {
        in->status = c->status;
        str_copy(in->reason, sizeof in->reason, c->reason);
        return;
    }
    if (c->probe_rc != SGL_ATTN_OK) {
        in->status = SGL_ATTN_PLUGIN_LOAD_ERROR;
        str_copy(in->reason, sizeof in->reason, c->reason);
        return;
    }
    char why[SGL_ATTN_REASON_MAX + 64];
    if (probe_check_caps(&c->caps, &c->n_caps, why, sizeof why) != SGL_ATTN_OK) {
        in->status = SGL_ATTN_PLUGIN_LOAD_ERROR;
        str_copy(in->reason, sizeof in->reason, why);
        return;
    }
    int st = module_load(f->path, &e->module, in->reason, sizeof in->reason);
    uint16_t maj = 0, min = 0;
    if (st == SGL_ATTN_PLUGIN_USABLE)
        st = plugin_negotiate(e->module.entry, &h->api, &e->desc, &maj, &min, in->reason, sizeof in->reason);
    if (st == SGL_ATTN_PLUGIN_USABLE && strcmp(e->desc.name, in->name)) {
        st = SGL_ATTN_PLUGIN_LOAD_ERROR;
        str_printf(in->reason, sizeof in->reason,
                   "its entry point answered name \"%s\" in isolation and \"%s\" in this process", in->name,
                   e->desc.name);
    }
    if (st != SGL_ATTN_PLUGIN_USABLE) {
        char first[sizeof in->reason];
        str_copy(first, sizeof first, in->reason);
        str_printf(in->reason, sizeof in->reason, "passed in isolation, then failed in this process: %s", first);
        in->status = st;
        drop_module(h, e);
        return;
    }
    e->loaded = 1;
    e->caps = c->caps;
    e->n_caps = c->n_caps;
    c->caps = NULL;
    probe_set_status(&e->info, e->caps, e->n_caps);
}

/* Isolation: what needs no plugin code is decided here, the ELF checks
 * included; the rest meet their first contact in child processes, all at
 * once, and are admitted in scan order (so shadowing follows the path). */
static int admit_isolated(sgl_attn_host *h, const plugin_file_list *files, int timeout_ms) {
    size_t n = files->n, m = 0;
    const char **paths = calloc(n ? n : 1, sizeof *paths);
    size_t *which = calloc(n ? n : 1, sizeof *which);
    contact *c = calloc(n ? n : 1, sizeof *c);
    if (!paths || !which || !c) {
        free(paths), free(which), free(c);
        return SGL_ATTN_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        plugin_entry *e = &h->plugins[i];
        if (refuse_unloaded(h, e, &files->v[i])) continue;
        if (module_check_elf(files->v[i].path, e->info.reason, sizeof e->info.reason) != 0) {
            e->info.status = SGL_ATTN_PLUGIN_LOAD_ERROR;
            continue;
        }
        which[m] = i;
        paths[m++] = files->v[i].path;
    }
    isolate_contact(paths, m, &h->api, timeout_ms, c);
    for (size_t k = 0; k < m; k++) {
        admit_contacted(h, &h->plugins[which[k]], &files->v[which[k]], &c[k]);
        free(c[k].caps);
    }
    free(paths), free(which), free(c);
    return SGL_ATTN_OK;
}

/* ------------------------------------------------------------- open/close */

static void host_free(sgl_attn_host *h) {
    for (size_t i = 0; i < h->n_plugins; i++) {
        module_unload(&h->plugins[i].module, h->never_unload);
        free(h->plugins[i].caps);
        claims_free(&h->plugins[i]);
    }
    free(h->plugins);
    search_path_free(&h->paths);
    if (h->conf) conf_free(h->conf);
    free(h);
}

void host_release(sgl_attn_host *h) {
    if (atomic_fetch_sub(&h->live, 1) == 1) host_free(h);
}

/* The caller's options at the host's size (fields past its struct_size
 * zero).  A struct_size of 0 is a caller that forgot to set it: refused, so
 * that what it asked for is never silently dropped. */
static int read_options(const sgl_attn_host_options *opts, sgl_attn_host_options *o, char *err, size_t err_size) {
    memset(o, 0, sizeof *o);
    if (opts) {
        if (opts->struct_size < sizeof(uint32_t)) {
            str_printf(err, err_size,
                       "sgl_attn_host_open: options.struct_size is %u: set it to sizeof(sgl_attn_host_options) "
                       "(%zu), or pass NULL options for the defaults",
                       opts->struct_size, sizeof *o);
            return SGL_ATTN_E_INVALID;
        }
        size_t n = opts->struct_size < sizeof *o ? opts->struct_size : sizeof *o;
        memcpy(o, opts, n);
    }
    o->struct_size = sizeof *o;
    return SGL_ATTN_OK;
}

int sgl_attn_host_open(const sgl_attn_host_options *opts, sgl_attn_host **out, char *err,
                       size_t err_size) {
    if (err && err_size) err[0] = 0;
    if (!out) {
        str_copy(err, err_size, "sgl_attn_host_open: out is NULL");
        return SGL_ATTN_E_INVALID;
    }
    *out = NULL;
    sgl_attn_host_options o;
    if (read_options(opts, &o, err, err_size)) return SGL_ATTN_E_INVALID;
    host_once_init();
    sgl_attn_host *h = calloc(1, sizeof *h);
    if (!h) {
        str_copy(err, err_size, "out of memory");
        return SGL_ATTN_E_NOMEM;
    }
    if (o.log) {
        h->log.fn = o.log;
        h->log.user = o.log_user;
        h->log.level = o.log_level ? o.log_level : SGL_ATTN_LOG_WARN;
    } else {
        hlog_init_default(&h->log);
    }
    h->never_unload = o.never_unload || env_is_1("SGL_ATTN_NO_UNLOAD");
    h->validate = o.validate || env_is_1("SGL_ATTN_VALIDATE");
    atomic_init(&h->live, 1);
    atomic_init(&h->closing, 0);
    h->api.struct_size = sizeof h->api;
    h->api.abi_major = SGL_ATTN_ABI_MAJOR;
    h->api.abi_minor_min = 0;
    h->api.abi_minor_max = SGL_ATTN_ABI_MINOR;
    h->api.host_version = SGL_ATTN_VERSION;
    h->api.host_ctx = h;
    h->api.log = plugin_log;
    h->api.get_option = plugin_get_option;

    int rc;
    if (!o.no_conf &&
        (rc = conf_load(o.conf_path, &h->conf, h->conf_path, sizeof h->conf_path, err, err_size))) {
        host_free(h);
        return rc;
    }
    h->allow_unsafe = conf_allow_unsafe_paths(h->conf);
    if ((rc = search_path_build(&h->paths, &o, &h->log))) {
        str_copy(err, err_size, "out of memory building the search path");
        host_free(h);
        return rc;
    }
    /* The conf can switch the location check off: that switch counts only
     * when nobody but root and this user can have written it there. */
    char why[512];
    if (h->allow_unsafe && safe_file_chain(h->conf_path, "conf", "conf's directory", why, sizeof why)) {
        h->allow_unsafe = 0;
        char note[sizeof h->paths.notes[0]];
        str_printf(note, sizeof note, "conf \"allow_unsafe_paths\" ignored: %s", why);
        search_path_note(&h->paths, &h->log, SGL_ATTN_LOG_WARN, note);
    }
    plugin_file_list files;
    if ((rc = scan_search_path(&h->paths, &files, &h->log))) {
        str_copy(err, err_size, "out of memory scanning the plugin directories");
        host_free(h);
        return rc;
    }
    size_t total = files.n + sgl_attn_embedded_plugin_count;
    h->plugins = total ? calloc(total, sizeof *h->plugins) : NULL;
    if (total && !h->plugins) {
        plugin_file_list_free(&files);
        str_copy(err, err_size, "out of memory");
        host_free(h);
        return SGL_ATTN_E_NOMEM;
    }
    for (size_t i = 0; i < files.n; i++) {
        plugin_entry *e = &h->plugins[h->n_plugins++];
        e->info.struct_size = sizeof e->info;
        str_copy(e->info.path, sizeof e->info.path, files.v[i].path);
        str_copy(e->info.source, sizeof e->info.source, files.v[i].source);
    }
    if (o.isolate_probes)
        rc = admit_isolated(h, &files, o.probe_timeout_ms > 0 ? o.probe_timeout_ms : 5000);
    else
        for (size_t i = 0; i < files.n; i++) admit_file(h, &h->plugins[i], &files.v[i]);
    plugin_file_list_free(&files);
    if (rc) {
        str_copy(err, err_size, "out of memory");
        host_free(h);
        return rc;
    }
    char lib[sizeof h->plugins[0].info.path];
    if (sgl_attn_embedded_plugin_count) host_library_path(lib, sizeof lib);
    for (size_t i = 0; i < sgl_attn_embedded_plugin_count; i++) {
        plugin_entry *e = &h->plugins[h->n_plugins++];
        e->info.struct_size = sizeof e->info;
        str_copy(e->info.path, sizeof e->info.path, lib[0] ? lib : "libsglattn");
        str_copy(e->info.source, sizeof e->info.source, "embedded");
        admit(h, e, sgl_attn_embedded_plugins[i].entry, 0);
    }
    if (o.caps_file && (rc = caps_file_apply(h, o.caps_file, err, err_size))) {
        host_free(h);
        return rc;
    }
    if ((rc = claims_compute(h))) {
        str_copy(err, err_size, "out of memory");
        host_free(h);
        return rc;
    }
    for (size_t i = 0; i < h->n_plugins; i++) {
        const sgl_attn_plugin_info *in = &h->plugins[i].info;
        hlog_printf(&h->log, SGL_ATTN_LOG_INFO, "%s: %s%s%s", in->path,
                    sgl_attn_plugin_status_name(in->status), in->reason[0] ? ": " : "", in->reason);
    }
    *out = h;
    return SGL_ATTN_OK;
}

void sgl_attn_host_close(sgl_attn_host *h) {
    if (!h) return;
    atomic_store(&h->closing, 1);
    host_release(h);
}

/* ------------------------------------------------------------- queries */

size_t sgl_attn_host_plugin_count(const sgl_attn_host *h) { return h ? h->n_plugins : 0; }

int sgl_attn_host_plugin_info(const sgl_attn_host *h, size_t i, sgl_attn_plugin_info *out) {
    if (!h || !out) return SGL_ATTN_E_INVALID;
    if (i >= h->n_plugins) return SGL_ATTN_E_NOT_FOUND;
    size_t n = out->struct_size && out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
    memcpy(out, &h->plugins[i].info, n);
    out->struct_size = (uint32_t)n;
    return SGL_ATTN_OK;
}

int sgl_attn_host_plugin_caps(const sgl_attn_host *h, size_t i, uint32_t d, sgl_attn_caps *out) {
    if (!h || !out) return SGL_ATTN_E_INVALID;
    if (i >= h->n_plugins || d >= h->plugins[i].n_caps) return SGL_ATTN_E_NOT_FOUND;
    size_t n = out->struct_size && out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
    memcpy(out, &h->plugins[i].caps[d], n);
    out->struct_size = (uint32_t)n;
    return SGL_ATTN_OK;
}

const char *sgl_attn_host_plugin_reason(const sgl_attn_host *h, size_t i) {
    return h && i < h->n_plugins ? plugin_entry_reason(&h->plugins[i]) : "";
}

size_t sgl_attn_host_plugin_note_count(const sgl_attn_host *h, size_t i) {
    return h && i < h->n_plugins ? h->plugins[i].n_notes : 0;
}

const char *sgl_attn_host_plugin_note(const sgl_attn_host *h, size_t i, size_t k) {
    return h && i < h->n_plugins && k < h->plugins[i].n_notes ? h->plugins[i].notes[k] : NULL;
}

const char *sgl_attn_host_caps_file(const sgl_attn_host *h) { return h ? h->caps_file : ""; }

long sgl_attn_host_find_plugin(const sgl_attn_host *h, const char *name) {
    if (!h || !name) return -1;
    for (size_t i = 0; i < h->n_plugins; i++) {
        const plugin_entry *e = &h->plugins[i];
        if (e->loaded && !strcmp(e->info.name, name)) return (long)i;
    }
    return -1;
}

const sgl_attn_device_ops *sgl_attn_host_device_ops(const sgl_attn_host *h, size_t i) {
    if (!h || i >= h->n_plugins || !h->plugins[i].loaded) return NULL;
    return h->plugins[i].desc.device_ops;
}

/* Directories first, then the notes that are not about one directory
 * (ignored variables, empty components) as rows with an empty dir. */
size_t sgl_attn_host_search_path_count(const sgl_attn_host *h) {
    return h ? h->paths.n + h->paths.n_notes : 0;
}

int sgl_attn_host_search_path(const sgl_attn_host *h, size_t i, const char **dir, const char **source,
                              const char **note) {
    if (!h) return SGL_ATTN_E_INVALID;
    const char *d, *s, *n;
    if (i < h->paths.n) {
        d = h->paths.dirs[i].dir;
        s = h->paths.dirs[i].source;
        n = h->paths.dirs[i].note;
    } else if (i < h->paths.n + h->paths.n_notes) {
        d = "";
        s = "note";
        n = h->paths.notes[i - h->paths.n];
    } else {
        return SGL_ATTN_E_NOT_FOUND;
    }
    if (dir) *dir = d;
    if (source) *source = s;
    if (note) *note = n;
    return SGL_ATTN_OK;
}

const char *sgl_attn_host_conf_path(const sgl_attn_host *h) { return h ? h->conf_path : ""; }
