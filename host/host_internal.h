/*
 * host_internal.h - how the parts of libsglattn fit together.  Not installed.
 *
 * Layers (one file each, see docs/architecture.md):
 *   log.c        log lines, levels
 *   paths.c      search directories and where each came from
 *   scan.c       candidate files: sorted, deduplicated by (dev, ino), unsafe-location check
 *   load.c       libltdl loading with a precise reason when it fails
 *   negotiate.c  ABI negotiation and descriptor checks
 *   probe.c      per-device probing, optionally in a child process
 *   conf.c       the conf file (cJSON, line/column errors, strict keys)
 *   model_json.c / model_hf.c   model descriptions
 *   select.c     the pure selection function
 *   stack.c      creating stacks (wrappers over inners, split prefill/decode)
 *   host.c       the public API glue
 *
 * Global state: exactly one once-init (host_once_init in load.c) that
 * initialises libltdl and the mutex that serialises libltdl calls, since
 * libltdl is not thread-safe.
 */
#ifndef SGL_ATTN_HOST_INTERNAL_H
#define SGL_ATTN_HOST_INTERNAL_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sgl_attn.h"

/* ------------------------------------------------------------------ log.c */

typedef struct hlog {
    void (*fn)(void *user, int level, const char *line);
    void *user;
    int level; /* lines above this level are dropped */
} hlog;

void hlog_init_default(hlog *l);  /* stderr, WARN, raised by SGL_ATTN_DEBUG */
void hlog_printf(const hlog *l, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Bounded, always-terminated formatting into a fixed buffer. */
void str_printf(char *dst, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void str_copy(char *dst, size_t size, const char *src);
/* str_copy that never cuts a word: text that does not fit ends at the last
 * space before the end, followed by "...". */
void str_copy_words(char *dst, size_t size, const char *src);

/* ---------------------------------------------------------------- paths.c */

typedef struct search_dir {
    char *dir;            /* absolute or as given */
    const char *source;   /* "options", "SGL_ATTN_PLUGIN_PATH", "drop-in", "build-tree" */
    char note[256];       /* e.g. "empty component ignored", "does not exist" */
} search_dir;

typedef struct search_path {
    search_dir *dirs;
    size_t n, cap;
    /* Lines worth telling the user (ignored variables under setuid...). */
    char notes[6][512];
    size_t n_notes;
} search_path;

int search_path_build(search_path *sp, const sgl_attn_host_options *o, const hlog *log);
/* A line worth telling the user: logged at `level` and kept for listing. */
void search_path_note(search_path *sp, const hlog *log, int level, const char *text);
void search_path_free(search_path *sp);
/* The drop-in directory: the build tree's plugins/ when this library runs
 * from the build tree, else the installed one. */
const char *search_path_default_dir(char *buf, size_t size);
/* The conf beside this library: <libdir>/../etc/sglattn/sglattn.json (the
 * install tree's sysconfdir, or the build tree's). */
const char *search_path_default_conf(char *buf, size_t size);
/* This library's own file (dladdr, resolved); "" when unknown. */
const char *host_library_path(char *buf, size_t size);

/* ------------------------------------------------------------ safe_path.c */

struct stat;
/* One file or directory: owned by root or us, not writable by group or
 * others (a sticky directory may be).  1 with "<what> <path> is ..." in why. */
int safe_stat_reason(const struct stat *st, const char *what, const char *path, char *why, size_t size);
/* A directory and every directory above it (resolved), up to "/". */
int safe_dir_chain(const char *dir, const char *what, char *why, size_t size);
/* A file, then its (resolved) directory called dir_what and everything above. */
int safe_file_chain(const char *path, const char *what, const char *dir_what, char *why, size_t size);

/* ----------------------------------------------------------------- scan.c */

typedef struct plugin_file {
    char *path;
    const char *source;
    dev_t dev;
    ino_t ino;
    int unsafe;                 /* writable by others, or a foreign owner, up to "/" (safe_path.c) */
    char unsafe_reason[512];
    int unreadable;             /* stat/open failed */
    char unreadable_reason[256];
} plugin_file;

typedef struct plugin_file_list {
    plugin_file *v;
    size_t n, cap;
} plugin_file_list;

/* Every "*.so" file in the search directories, in order: directories in path
 * order, files sorted by name; one file reached twice is listed once. */
int scan_search_path(const search_path *sp, plugin_file_list *out, const hlog *log);
void plugin_file_list_free(plugin_file_list *l);

/* ----------------------------------------------------------------- load.c */

void host_once_init(void);
void host_ltdl_lock(void);
void host_ltdl_unlock(void);

typedef struct loaded_module {
    void *handle; /* lt_dlhandle */
    sgl_attn_plugin_entry_fn entry;
    int pinned;   /* never dlclosed: its load started threads that would outlive it */
} loaded_module;

/* Load `path` and find the entry point.  On failure returns
 * SGL_ATTN_PLUGIN_LOAD_ERROR with a precise `why`: "not an ELF file",
 * "truncated ELF", "ELF for another machine (ARM aarch64)", "missing
 * dependency libfoo.so.1", "undefined symbol bar", "no entry point
 * sgl_attn_plugin_entry". */
int module_load(const char *path, loaded_module *m, char *why, size_t why_size);
void module_unload(loaded_module *m, int never_unload);
/* The ELF checks alone (no plugin code runs): 0, or -1 with `why`. */
int module_check_elf(const char *path, char *why, size_t size);
/* dlerror()'s text for `path` as a reason ("missing dependency ..."). */
void module_describe_dlerror(const char *path, const char *err, char *why, size_t size);
/* Threads of this process now (/proc/self/task), or -1 when unknown. */
int host_thread_count(void);

/* ------------------------------------------------------------ negotiate.c */

/* Call the entry with the host's offer.  Returns SGL_ATTN_PLUGIN_USABLE (the
 * descriptor is copied into *desc, with defaults for fields past an older
 * struct_size), SGL_ATTN_PLUGIN_ABI_MISMATCH (both versions in `why`) or
 * SGL_ATTN_PLUGIN_LOAD_ERROR (bad descriptor, NULL answer...). */
int plugin_negotiate(sgl_attn_plugin_entry_fn entry, const sgl_attn_host_api *api,
                     sgl_attn_plugin *desc, uint16_t *abi_major, uint16_t *abi_minor,
                     char *why, size_t why_size);
/* The descriptor's fields into an info (name, version, lists...). */
void host_fill_info(sgl_attn_plugin_info *in, const sgl_attn_plugin *d, uint16_t maj, uint16_t min);
/* Descriptor sanity: name, enums, function pointers. */
int plugin_descriptor_check(const sgl_attn_plugin *d, char *why, size_t why_size);
/* Capability sanity after a probe: list lengths, ranges. */
int plugin_caps_check(const sgl_attn_caps *c, char *why, size_t why_size);

/* ---------------------------------------------------------------- probe.c */

#define PROBE_MAX_DEVICES 64

/* Probe every device of `d` in this process.  *caps is malloc'd. */
int probe_run(const sgl_attn_plugin *d, sgl_attn_caps **caps, uint32_t *n_caps, char *why, size_t why_size);
/* The caps a probe reported: at least one device, each passing
 * plugin_caps_check.  On failure *caps is freed and `why` names the device. */
int probe_check_caps(sgl_attn_caps **caps, uint32_t *n_caps, char *why, size_t why_size);
/* probe_run, then probe_check_caps. */
int probe_plugin(const sgl_attn_plugin *d, sgl_attn_caps **caps, uint32_t *n_caps, char *why, size_t why_size);
/* A plugin's device count, status and reason from its devices' caps (the
 * probe's or a caps file's): usable when one is available, else device 0's
 * reason. */
void probe_set_status(sgl_attn_plugin_info *in, const sgl_attn_caps *caps, uint32_t n_caps);

/* -------------------------------------------------------------- isolate.c */

/* What a file's first contact in a child process found. */
typedef struct contact {
    int32_t status;   /* SGL_ATTN_PLUGIN_USABLE: negotiated (info holds the descriptor's fields) */
    int32_t probe_rc; /* then: the probe's status; caps when SGL_ATTN_OK */
    char reason[SGL_ATTN_REASON_MAX + 320]; /* why not, or the probe's why */
    int have_info;    /* the descriptor's fields arrived (shown even when refused later) */
    sgl_attn_plugin_info info;
    sgl_attn_caps *caps; /* malloc'd */
    uint32_t n_caps;
} contact;

/* The first contact (dlopen, negotiation, probe) with each of n files, each
 * in a child process of its own, in parallel, all within one deadline of
 * timeout_ms from now.  out[i] gets file i's verdict; nothing of the files
 * runs in this process. */
void isolate_contact(const char *const *paths, size_t n, const sgl_attn_host_api *api, int timeout_ms,
                     contact *out);

/* ----------------------------------------------------------------- conf.c */

typedef struct conf conf; /* opaque; defined in conf.c */

/* Load: explicit path, else SGL_ATTN_CONF, else sysconfdir, else build tree.
 * *out is NULL when no file exists anywhere (then built-in defaults apply). */
int conf_load(const char *explicit_path, conf **out, char *used_path, size_t used_size,
              char *err, size_t err_size);
int conf_parse(const char *text, size_t len, const char *origin, conf **out, char *err,
               size_t err_size);
void conf_free(conf *c);
/* Queries (c may be NULL = defaults). */
int conf_is_disabled(const conf *c, const char *plugin, const char **pattern);
int conf_allow_unsafe_paths(const conf *c);
const char *conf_plugin_option(const conf *c, const char *plugin, const char *key);
int conf_priority(const conf *c, const char *plugin, int32_t *score);

/* ------------------------------------------------------ model_*.c */

/* A caller's model into the host's own layout: any struct_size from ABI 1.0's
 * up, the fields the writer did not send zero (docs/abi.md). */
int host_model_import(const sgl_attn_model *in, sgl_attn_model *out, const char *who, char *err, size_t err_size);

int model_from_ours(const void *cjson_root, const char *origin, int tp_size, sgl_attn_model *m,
                    char *err, size_t err_size);
int model_from_hf(const void *cjson_root, const char *origin, int tp_size, sgl_attn_model *m,
                  char *err, size_t err_size);

/* ---------------------------------------------------------------- host.c */

typedef struct plugin_entry {
    sgl_attn_plugin_info info;
    sgl_attn_plugin desc;     /* copy, defaults past the plugin's struct_size */
    int loaded;               /* desc valid */
    loaded_module module;     /* handle NULL for embedded plugins */
    sgl_attn_caps *caps;      /* probed devices (or the caps file's) */
    uint32_t n_caps;
    /* Name claims (claims.c): sentences for sgl_attn_host_plugin_note, and
     * bit k set when aliases[k] was declared first by an earlier plugin. */
    char **notes;
    size_t n_notes;
    uint32_t alias_lost;
} plugin_entry;

struct sgl_attn_host {
    hlog log;
    search_path paths;
    conf *conf;
    char conf_path[4096];
    plugin_entry *plugins;
    size_t n_plugins;
    sgl_attn_host_api api;
    int never_unload;
    int validate;
    int allow_unsafe; /* conf "allow_unsafe_paths", honoured only from a safe conf */
    char caps_file[4096];     /* "" = caps are this machine's probes */
    /* References: 1 for the open handle + 1 per live instance; the last
     * release (close or the last destroy) unloads and frees. */
    atomic_int live;
    atomic_int closing;
};

/* Embedded plugins (compiled into the library), scanned after the directories. */
typedef struct embedded_plugin {
    const char *name;
    sgl_attn_plugin_entry_fn entry;
} embedded_plugin;
extern const embedded_plugin sgl_attn_embedded_plugins[];
extern const size_t sgl_attn_embedded_plugin_count;

void host_release(sgl_attn_host *h); /* drop one `live` ref; frees after close */

/* The whole reason of a plugin: an unavailable one's is device 0's (admit),
 * which may be longer than info.reason; the host's own reasons fit it. */
static inline const char *plugin_entry_reason(const plugin_entry *e) {
    if (e->info.status == SGL_ATTN_PLUGIN_UNAVAILABLE && e->n_caps && e->caps[0].reason[0])
        return sgl_attn_caps_reason(&e->caps[0]);
    return e->info.reason;
}

/* --------------------------------------------------------------- claims.c */

/* After every plugin is admitted: the questionable name claims of each
 * (docs/selection.md, "Names"), into plugin_entry.notes and alias_lost. */
int claims_compute(sgl_attn_host *h);
void claims_free(plugin_entry *e);

/* ------------------------------------------------------------ caps_file.c */

/* Replace every loaded plugin's caps with those of the same plugin in a
 * machine file (`attnctl devices --json` of another machine).  A plugin the
 * file does not list gets one unavailable device saying so. */
int caps_file_apply(sgl_attn_host *h, const char *path, char *err, size_t err_size);
/* Bit names of caps fields, shared by the caps file reader and its tests. */
const char *caps_kind_name(unsigned bit);    /* "mha", "gqa", "mqa", "mla", "cross" */
const char *caps_feature_name(unsigned bit); /* "extend", "decode", ... */

/* ---------------------------------------------------------------- stack.c */

#ifdef SGL_ATTN_EMBED_VALIDATE
/* plugins/validate: the device_ops its copy_device_indices copies through. */
void sgl_attn_validate_set_device_ops(sgl_attn_backend *b, const sgl_attn_device_ops *ops);
#endif

/* A wrapper's effective caps: its own intersected with its inner's (dtypes,
 * kinds, features, head dims, page sizes, arch range); device fields are the
 * inner's.  A zero maximum (head dims, page size) means "no limit".  Returns
 * 0, or SGL_ATTN_E_UNSUPPORTED with `why` when nothing is left in common. */
int stack_caps_intersect(const sgl_attn_caps *own, const sgl_attn_caps *inner, sgl_attn_caps *out,
                         char *why, size_t why_size);

/* ---------------------------------------------------------------- select.c */

/* One (plugin, device) pair as selection sees it: all data, no I/O. */
typedef struct sel_candidate {
    size_t plugin_index;             /* into host->plugins */
    const sgl_attn_plugin_info *info;
    const sgl_attn_caps *caps;       /* this device */
    uint32_t device;
    int32_t score;                   /* caps->score, or the conf override */
    int model_ok;                    /* supports_model() answer, computed before */
    char model_why[256];
    uint32_t alias_lost;             /* bit k: info->aliases[k] was declared first by an earlier plugin */
    const char *reason;              /* the plugin's whole reason (NULL: info->reason) */
} sel_candidate;

typedef struct sel_input {
    const sgl_attn_model *model;
    const sgl_attn_select_request *req;
    const sel_candidate *cands;
    size_t n_cands;
    const conf *rules;
} sel_input;

struct sgl_attn_selection {
    /* decode (or the only) stack, outermost first, and the prefill stack */
    char stack[4][SGL_ATTN_NAME_MAX + 1];
    size_t depth;
    char prefill_stack[4][SGL_ATTN_NAME_MAX + 1];
    size_t prefill_depth;
    int split;
    int32_t device;
    int32_t prefill_device;
    char label[4 * (SGL_ATTN_NAME_MAX + 2) * 2 + 32];
    sgl_attn_verdict *verdicts;
    char **messages;                 /* each verdict's whole message */
    size_t n_verdicts, cap_verdicts;
    char warnings[6][1024];
    size_t n_warnings;
    int cpu_fallback;                /* automatic choice fell back to the CPU past a usable GPU plugin */
    uint64_t state_bytes;
    sgl_attn_model model;            /* with full_attention_mask as routed */
};

/* The pure function: fills `out` (verdicts always), returns SGL_ATTN_OK or
 * SGL_ATTN_E_UNSUPPORTED / SGL_ATTN_E_NOT_FOUND with the headline in err. */
int select_run(const sel_input *in, sgl_attn_selection *out, char *err, size_t err_size);

#endif
