/*
 * sgl_attn.h - libsglattn, the host: finds attention plugins, explains what
 * each can do here, chooses a stack for a model and runs it.
 *
 * Thread safety: every function may be called from any thread.  One host may
 * be shared; its plugin list is fixed after open.  A backend instance is used
 * by one thread at a time (like a CUDA stream).  Nothing is unloaded while a
 * backend created from it lives.
 */
#ifndef SGL_ATTN_H
#define SGL_ATTN_H

#include "sgl_attn_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SGL_ATTN_VERSION "0.1.0"

/* The library is built with -fvisibility=hidden; these declarations are its
 * exported API, whatever order a source file includes headers in. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef struct sgl_attn_host sgl_attn_host;

/* ------------------------------------------------------------------ open */

typedef struct sgl_attn_host_options {
    uint32_t struct_size;
    /* Extra plugin directories searched before SGL_ATTN_PLUGIN_PATH's
     * (colon-separated); NULL = none. */
    const char *plugin_path;
    /* 1: do not read SGL_ATTN_PLUGIN_PATH. */
    int32_t ignore_env_path;
    /* 1: do not scan the drop-in directory (tests). */
    int32_t no_default_dir;
    /* Conf file; NULL = SGL_ATTN_CONF, then sysconfdir, then the build tree's. */
    const char *conf_path;
    /* 1: load no conf at all (built-in defaults). */
    int32_t no_conf;
    /* 1: meet each plugin file first in a child process of its own (dlopen,
     * entry point, probe), all files at once under one deadline; only files
     * that passed are loaded here (docs/reliability.md). */
    int32_t isolate_probes;
    int32_t probe_timeout_ms;    /* that deadline, for the whole scan; 0 = 5000 */
    /* 1: never dlclose (sanitizer runs keep their stack frames).  Also set by
     * SGL_ATTN_NO_UNLOAD=1. */
    int32_t never_unload;
    /* Where log lines go; NULL = stderr at WARN and above (SGL_ATTN_DEBUG=1..3
     * raises the level). */
    void (*log)(void *user, int level, const char *line);
    void *log_user;
    int32_t log_level;           /* used with `log`; default SGL_ATTN_LOG_WARN */
    /* 1: wrap every created stack in the validation layer (also
     * SGL_ATTN_VALIDATE=1). */
    int32_t validate;
    /* Appended (ABI 1.2): a machine file, the saved output of `attnctl
     * devices --json` on another machine.  Each plugin loaded here takes its
     * devices' caps from the file's entry of the same name instead of its own
     * probe, and a plugin the file does not list has no available device, so
     * sgl_attn_select answers what would be chosen on that machine.  Creating
     * a backend from such a host is refused.  NULL = probe as usual. */
    const char *caps_file;
} sgl_attn_host_options;

/* Open a host.  opts may be NULL; when it is not, opts->struct_size must be
 * set (sizeof(sgl_attn_host_options), or an older size): 0 is refused with
 * SGL_ATTN_E_INVALID.  On failure *out is NULL and, when err is non-NULL, it
 * says why (e.g. a malformed conf file with line and column). */
int sgl_attn_host_open(const sgl_attn_host_options *opts, sgl_attn_host **out,
                       char *err, size_t err_size);
void sgl_attn_host_close(sgl_attn_host *h);

/* ------------------------------------------------------------- plugins */

typedef enum sgl_attn_plugin_status {
    SGL_ATTN_PLUGIN_USABLE = 0,
    SGL_ATTN_PLUGIN_UNAVAILABLE = 1,  /* loaded, but its probe found no usable device */
    SGL_ATTN_PLUGIN_LOAD_ERROR = 2,   /* not a plugin, missing dependency, undefined symbol... */
    SGL_ATTN_PLUGIN_ABI_MISMATCH = 3, /* versions named in the reason */
    SGL_ATTN_PLUGIN_SHADOWED = 4,     /* an earlier plugin has this name */
    SGL_ATTN_PLUGIN_DISABLED = 5,     /* by conf "disabled" or an unsafe location */
    SGL_ATTN_PLUGIN_STATUS_COUNT_
} sgl_attn_plugin_status;

const char *sgl_attn_plugin_status_name(int status); /* "usable", "load-error"... */
const char *sgl_attn_platform_name(int platform);    /* "cpu", "cuda"... */
const char *sgl_attn_hybrid_kind_name(int kind);     /* "gdn", "mamba2"... */
const char *sgl_attn_status_name(int status);        /* "ok", "invalid"... */

typedef struct sgl_attn_plugin_info {
    uint32_t struct_size;
    int32_t status;                       /* sgl_attn_plugin_status */
    char reason[512];                     /* why not usable, or "" */
    char path[4096];                      /* the file, as found */
    char source[64];                      /* "SGL_ATTN_PLUGIN_PATH", "drop-in", "options", "embedded" */
    /* Below: valid when the descriptor was read (status USABLE, UNAVAILABLE,
     * SHADOWED, DISABLED). */
    char name[SGL_ATTN_NAME_MAX + 1];
    char version[32];
    char description[160];
    char license[32];
    int32_t platform;
    int32_t role;
    int32_t hybrid_kind;
    char custom_kind[32];
    uint16_t abi_major, abi_minor;        /* what the plugin speaks */
    uint32_t n_aliases;
    char aliases[SGL_ATTN_MAX_LIST][32];
    uint32_t n_model_types;
    char model_types[SGL_ATTN_MAX_LIST][32];
    uint32_t n_devices;                   /* probed devices (>= 1 once probed) */
} sgl_attn_plugin_info;

size_t sgl_attn_host_plugin_count(const sgl_attn_host *h);
/* i in [0, count): plugins in scan order (first wins), failures included. */
int sgl_attn_host_plugin_info(const sgl_attn_host *h, size_t i, sgl_attn_plugin_info *out);
/* Device d of plugin i as its probe reported it. */
int sgl_attn_host_plugin_caps(const sgl_attn_host *h, size_t i, uint32_t d, sgl_attn_caps *out);
/* Index of the plugin named `name` that loaded (not shadowed), or -1. */
long sgl_attn_host_find_plugin(const sgl_attn_host *h, const char *name);
/* The plugin's device memory ops (NULL for host memory), for staging tensors. */
const sgl_attn_device_ops *sgl_attn_host_device_ops(const sgl_attn_host *h, size_t i);

/* The whole reason plugin i is not usable ("" when it is): info.reason
 * holds at most 511 bytes of it, this one all of it (a probe's long reason,
 * ABI 1.2).  Valid while the host is open. */
const char *sgl_attn_host_plugin_reason(const sgl_attn_host *h, size_t i);
/* The whole reason of a caps struct: reason_long when struct_size covers it
 * and it is set, else reason. */
const char *sgl_attn_caps_reason(const sgl_attn_caps *c);
/* Name claims the host found questionable for plugin i, one sentence each:
 * a plugin named like a sglang backend the conf knows ("fa3"), a declared
 * alias the conf maps to other plugins, an alias an earlier plugin declared
 * first (that one answers to it; this one does not).  Nothing is resolved
 * silently: selection follows the rules of docs/selection.md, "Names". */
size_t sgl_attn_host_plugin_note_count(const sgl_attn_host *h, size_t i);
const char *sgl_attn_host_plugin_note(const sgl_attn_host *h, size_t i, size_t k);
/* Where the caps came from: "" for this machine's probes, else the
 * caps_file that was read. */
const char *sgl_attn_host_caps_file(const sgl_attn_host *h);

/* Each search directory and where it came from. */
size_t sgl_attn_host_search_path_count(const sgl_attn_host *h);
int sgl_attn_host_search_path(const sgl_attn_host *h, size_t i, const char **dir,
                              const char **source, const char **note);
/* The conf file that was read ("" when none). */
const char *sgl_attn_host_conf_path(const sgl_attn_host *h);

/* ----------------------------------------------------------------- model */

/* Fill `m` from our model JSON (docs/model.md) or from a Hugging Face
 * config.json (auto-detected); `path` may be a model directory, read as
 * path/config.json.  tp_size divides the head counts.  On failure `err`
 * names the file, the field and what was expected. */
int sgl_attn_model_from_file(const char *path, int tp_size, sgl_attn_model *m,
                             char *err, size_t err_size);
int sgl_attn_model_from_json(const char *json, size_t len, const char *origin, int tp_size,
                             sgl_attn_model *m, char *err, size_t err_size);
/* A plain full-attention model (no file), for engines that know the shape. */
void sgl_attn_model_init(sgl_attn_model *m);

/* ---------------------------------------------------------------- select */

typedef struct sgl_attn_select_request {
    uint32_t struct_size;
    const char *backend;          /* a plugin name or sglang alias; NULL = automatic.  A hybrid
                                   * wrapper or layer plugin named here goes on top of the
                                   * automatic choice (docs/selection.md, "Names"). */
    const char *prefill_backend;  /* overrides `backend` for extend */
    const char *decode_backend;   /* overrides `backend` for decode */
    int32_t platform;             /* restrict to one platform; 0 = any */
    int32_t is_draft;             /* draft worker: full-attention layers = [0] */
    int32_t validate;             /* stack the validation layer on top */
    /* Appended (read only within struct_size): 1 = the engine captures
     * CUDA/HIP graphs, so every chosen plugin must support graph capture. */
    int32_t cuda_graph;
    /* Appended (ABI 1.2): 1 = an automatic choice that lands on a CPU plugin
     * while a GPU plugin is usable here is refused (SGL_ATTN_E_UNSUPPORTED,
     * with why each GPU plugin refused) instead of taken with a warning. */
    int32_t no_cpu_fallback;
} sgl_attn_select_request;

/* One candidate the selection looked at, with the rule that took or refused it. */
typedef struct sgl_attn_verdict {
    char plugin[SGL_ATTN_NAME_MAX + 1];
    int32_t device;
    int32_t taken;                /* 1 = chosen */
    int32_t score;
    char stage[16];               /* "prefill", "decode", "wrapper", "layer" */
    char rule[48];                /* the rule's id, e.g. "mla-only", "arch-range", "score" */
    char message[384];
} sgl_attn_verdict;

typedef struct sgl_attn_selection sgl_attn_selection;

/* Choose.  Returns SGL_ATTN_OK with *out set, or an error with *out still set
 * (when non-NULL) so its verdicts explain the refusal; err holds the headline
 * with the alternatives.  req may be NULL (automatic choice); when it is not,
 * req->struct_size must be set: 0 is refused with SGL_ATTN_E_INVALID.  Free
 * with sgl_attn_selection_free. */
int sgl_attn_select(sgl_attn_host *h, const sgl_attn_model *m, const sgl_attn_select_request *req,
                    sgl_attn_selection **out, char *err, size_t err_size);
void sgl_attn_selection_free(sgl_attn_selection *s);

/* The chosen stack, outermost first: "gdn", "cpu_ref" (a split prefill/decode
 * choice reports the decode stack here; see the _prefill variant). */
size_t sgl_attn_selection_stack_depth(const sgl_attn_selection *s);
const char *sgl_attn_selection_stack_name(const sgl_attn_selection *s, size_t i);
size_t sgl_attn_selection_prefill_depth(const sgl_attn_selection *s);
const char *sgl_attn_selection_prefill_name(const sgl_attn_selection *s, size_t i);
int sgl_attn_selection_is_split(const sgl_attn_selection *s);
/* "gdn/cpu_ref", or "prefill=a decode=b" when split. */
const char *sgl_attn_selection_label(const sgl_attn_selection *s);
size_t sgl_attn_selection_verdict_count(const sgl_attn_selection *s);
const sgl_attn_verdict *sgl_attn_selection_verdict(const sgl_attn_selection *s, size_t i);
/* Verdict i's whole message: verdict.message holds at most 383 bytes of it
 * (cut at a word boundary), this one all of it. */
const char *sgl_attn_selection_verdict_message(const sgl_attn_selection *s, size_t i);
/* Warnings that do not refuse: a deprecated alias, a float32 model served
 * in bf16, an automatic choice that fell back to the CPU while a GPU plugin
 * is usable (with why each GPU plugin refused), a name claimed twice. */
size_t sgl_attn_selection_warning_count(const sgl_attn_selection *s);
/* 1 when the automatic choice fell back to a CPU plugin while a GPU plugin
 * is usable here (one of the warnings says why each GPU plugin refused). */
int sgl_attn_selection_cpu_fallback(const sgl_attn_selection *s);
const char *sgl_attn_selection_warning(const sgl_attn_selection *s, size_t i);
/* Full-attention layer ids of the model as this selection routes them. */
size_t sgl_attn_selection_full_layers(const sgl_attn_selection *s, int32_t *ids, size_t cap);
/* Hybrid: pool bytes per request (0 when not hybrid). */
uint64_t sgl_attn_selection_state_bytes(const sgl_attn_selection *s);
/* Device index (the plugin's own) the selection runs on. */
int32_t sgl_attn_selection_device(const sgl_attn_selection *s);

/* -------------------------------------------------------------- instances */

typedef struct sgl_attn_create_options {
    uint32_t struct_size;
    int32_t max_reqs;
    int32_t max_tokens;
    int32_t max_context;
} sgl_attn_create_options;

/* Build the selected stack.  The returned backend is the outermost layer; the
 * host keeps the plugins loaded until it is destroyed. */
int sgl_attn_create(sgl_attn_host *h, const sgl_attn_selection *s, const sgl_attn_model *m,
                    const sgl_attn_create_options *opts, sgl_attn_backend **out,
                    char *err, size_t err_size);
/* Build an explicit stack by plugin name, outermost first ({"gdn", "cpu_ref"}),
 * on device `device` of the innermost plugin.  Wrapper capabilities are
 * intersected with the inner's; a refused pairing says why in err. */
int sgl_attn_create_stack(sgl_attn_host *h, const char *const *names, size_t n,
                          int32_t device, const sgl_attn_model *m,
                          const sgl_attn_create_options *opts, sgl_attn_backend **out,
                          char *err, size_t err_size);
void sgl_attn_destroy(sgl_attn_backend *b);
const char *sgl_attn_last_error(sgl_attn_backend *b);

/* The forward path: straight through the vtable.  The one check in between:
 * a forward carrying topk_indices (DeepSeek sparse attention) to a stack
 * that does not declare SGL_ATTN_DSA_SPARSE_MLA is SGL_ATTN_E_UNSUPPORTED,
 * with sgl_attn_last_error saying why. */
int sgl_attn_init_forward_metadata(sgl_attn_backend *b, const sgl_attn_batch *batch);
int sgl_attn_forward_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a);
int sgl_attn_forward_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a);
/* DSA's indexer (after init_forward_metadata): SGL_ATTN_E_UNSUPPORTED
 * unless the stack declares SGL_ATTN_DSA_INDEXER and serves indexer_topk. */
int sgl_attn_indexer_topk(sgl_attn_backend *b, const sgl_attn_indexer_args *a);

/* ---------------------------------------------------------------- layout */

/* The layout this library was built with, for language bindings that mirror
 * the structs (python/sglattn checks its ctypes mirrors against it): one JSON
 * object with the version, the ABI, and for every public struct (and DLPack's
 * DLDevice, DLDataType, DLTensor, DLManagedTensor) its size, alignment and each
 * field's offset and size; plus every integer constant of the two headers.
 * Writes at most `size` bytes including the terminating NUL (buf may be NULL
 * when size is 0) and returns the full length, like snprintf. */
size_t sgl_attn_layout_json(char *buf, size_t size);
/* sizeof the named public struct ("sgl_attn_batch", "DLTensor"), or 0. */
size_t sgl_attn_struct_size(const char *name);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* SGL_ATTN_H */
