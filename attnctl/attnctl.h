/* attnctl - command-line front end of libsglattn.  Arguments to API calls and
 * printing only; no policy lives here.  One file per command; cli.c parses
 * every command line from the option tables below, which also give the help,
 * the man page and the bash completion. */
#ifndef ATTNCTL_H
#define ATTNCTL_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "sgl_attn.h"

/* Exit codes (docs/attnctl.md). */
enum {
    ATTNCTL_EXIT_OK = 0,
    ATTNCTL_EXIT_FAIL = 1,    /* refused selection, failed check, unusable plugin */
    ATTNCTL_EXIT_USAGE = 2,   /* bad command line */
    ATTNCTL_EXIT_ENV = 3,     /* host could not open: conf, model file, machine file, paths */
    ATTNCTL_EXIT_NOT_FOUND = 4 /* named plugin, backend or case does not exist */
};

/* The --json schema version (docs/attnctl.md, "JSON output"). */
#define ATTNCTL_JSON_SCHEMA 1

/* ------------------------------------------------------------ options */

/* Options several commands share; each command says which it takes. */
enum {
    COMMON_PATHS = 1u << 0,    /* --plugin-path */
    COMMON_CONF = 1u << 1,     /* --conf, --no-conf */
    COMMON_ISOLATE = 1u << 2,  /* --isolate, --no-isolate */
    COMMON_VALIDATE = 1u << 3, /* --validate */
    COMMON_JSON = 1u << 4,     /* --json */
    COMMON_VERBOSE = 1u << 5,  /* -v */
    COMMON_COLOR = 1u << 6,    /* --color[=WHEN] */
    COMMON_CAPS = 1u << 7,     /* --caps-from FILE */
    COMMON_HOST = COMMON_PATHS | COMMON_CONF | COMMON_ISOLATE
};

enum { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };

typedef struct attnctl_common {
    const char *plugin_path; /* --plugin-path DIRS */
    const char *conf_path;   /* --conf FILE */
    const char *caps_file;   /* select --caps-from FILE */
    int no_conf;             /* --no-conf */
    int isolate;             /* probes in a child: the command's default, or as asked */
    int validate;            /* --validate */
    int json;                /* --json */
    int verbose;             /* -v */
    int color;               /* COLOR_* */
} attnctl_common;

/* A command's own option.  `arg` NULL: a flag. */
typedef struct attnctl_opt {
    int id;               /* > 0, the command's own */
    const char *name;     /* "--model" */
    char short_name;      /* 'v', or 0 */
    const char *arg;      /* "FILE", or NULL */
    int repeat;           /* may be given more than once */
    const char *help;     /* one line */
    const char *complete; /* bash completion of the value: "@file", "@dir", "@plugin", "@backend", or words */
} attnctl_opt;

typedef struct attnctl_cmd attnctl_cmd;
struct attnctl_cmd {
    const char *name;
    int (*run)(const attnctl_cmd *cmd, int argc, char **argv);
    const char *summary;     /* one line, for `attnctl --help` */
    const char *synopsis;    /* after "attnctl NAME " */
    const char *description; /* a paragraph */
    const attnctl_opt *opts; /* terminated by an entry with name NULL */
    unsigned common;         /* COMMON_* */
    int isolate_default;
    const char *exit_codes;  /* one line: what each exit code means here */
};

/* One parsed option of the command's own table. */
typedef struct attnctl_arg {
    int id;
    const char *value; /* NULL for a flag */
} attnctl_arg;

typedef struct attnctl_args {
    attnctl_arg v[128];
    int n;
} attnctl_args;

/* Parse argv[1..] (argv[0] is the command name).  Returns 0, 1 when --help
 * was printed (exit 0), or -1 after printing the error and a hint (exit 2). */
int attnctl_parse(const attnctl_cmd *cmd, int argc, char **argv, attnctl_common *c, attnctl_args *out);
/* "attnctl select: --tp 0: expected ..." and the hint; returns ATTNCTL_EXIT_USAGE. */
int attnctl_usage_error(const attnctl_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An integer option value in [lo, hi]; prints the error (exit 2) on -1. */
int attnctl_int_arg(const attnctl_cmd *cmd, const char *opt, const char *v, long long lo, long long hi,
                    long long *out);
int attnctl_u64_arg(const attnctl_cmd *cmd, const char *opt, const char *v, uint64_t *out);
void attnctl_print_help(const attnctl_cmd *cmd, FILE *f);

/* Every command (attnctl.c hands them over at start, so that cli.c can name
 * another command's option and write the completion script). */
void attnctl_cli_init(const attnctl_cmd *const *commands, size_t n);
/* The bash completion script (`attnctl completion bash`). */
void attnctl_print_completion(FILE *f);
/* The closest of `names` to `s` when it is close enough, else NULL. */
const char *attnctl_closest(const char *s, const char *const *names, size_t n);

/* ------------------------------------------------------------- output */

/* Open a host from the common options; prints the error and returns NULL. */
sgl_attn_host *attnctl_open_host(const attnctl_common *c, const char *who);

/* Text from outside (plugin reasons, device names, file names, model
 * fields) with control characters escaped for a terminal: \n \r \t \e as
 * such, other C0/C1 controls and DEL as \xHH, bidirectional overrides as
 * \u202e, invalid UTF-8 bytes as \xHH.  Returns one of a ring of static
 * buffers: valid until 16 more calls. */
const char *attnctl_esc(const char *s);
/* Display width in terminal columns (code points; the escaped text is
 * printable). */
int attnctl_width(const char *s);
/* Columns of the terminal stdout goes to: the terminal's, else $COLUMNS,
 * else 0 (no limit: not a terminal). */
int attnctl_columns(void);
/* Print `text` wrapped at word boundaries to fit `width` columns, the first
 * line starting at column `col`, continuation lines indented by `indent`.
 * width 0: one line. */
void attnctl_wrap(FILE *f, const char *text, int col, int indent, int width);
/* attnctl_wrap in at most max_lines lines: a longer text is cut at a word
 * boundary and ends with " ..." (-v shows it whole). */
void attnctl_wrap_short(FILE *f, const char *text, int col, int indent, int width, int max_lines);
/* Colour on f for this run (--color, NO_COLOR, TERM=dumb, a terminal). */
int attnctl_color(const attnctl_common *c, FILE *f);
/* SGR sequence of a plugin status name ("usable"...) or of a tag
 * ("warning", "error", "bold", "dim"); "" without colour. */
const char *attnctl_sgr(int on, const char *what);
const char *attnctl_sgr_reset(int on);

/* JSON: an object {"schema": N, "command": NAME}; print writes it on one
 * line and frees it. */
cJSON *attnctl_json_root(const char *command);
void attnctl_json_print(cJSON *root);
/* A string, or null for NULL or "". */
cJSON *attnctl_json_str(const char *s);
/* A number, or null when the value is absent (cond false) or not finite. */
cJSON *attnctl_json_num(int present, double v);
/* One device's caps (devices.c): sentinels as null, bit sets as names. */
cJSON *attnctl_json_caps(const sgl_attn_caps *c, uint32_t index);
/* One plugin as list-plugins --json gives it (list_plugins.c). */
cJSON *attnctl_json_plugin(const sgl_attn_host *h, size_t i);

/* The devices table (devices.c), for report. */
void attnctl_print_devices(const attnctl_common *c, sgl_attn_host *h);

/* "full", "hybrid" or "layer"; NULL without a descriptor. */
const char *attnctl_role_name(const sgl_attn_plugin_info *in);
/* The hybrid kind's name ("gdn", or a custom kind), or NULL. */
const char *attnctl_hybrid_kind(const sgl_attn_plugin_info *in);
/* "full", "hybrid:<kind>" or "layer", for tables. */
const char *attnctl_role(const sgl_attn_plugin_info *in, char *buf, size_t size);
/* 1 when the plugin's descriptor was read (name, version... are valid). */
int attnctl_has_descriptor(const sgl_attn_plugin_info *in);
/* "141.0 GiB", or "-". */
const char *attnctl_bytes(uint64_t b, char *buf, size_t size);

/* What this machine runs by default: the automatic choice for a plain
 * full-attention model.  Fills label/platform/device; 0 on success, else
 * the refusal in label. */
typedef struct attnctl_default {
    int ok;
    char label[256];
    char platform[16];
    int32_t device;
    char device_name[128];
    int cpu_fallback;
} attnctl_default;
void attnctl_default_choice(sgl_attn_host *h, attnctl_default *d);

/* Progress on a terminal (check, bench): "[i/n] 0:12 case" on stderr,
 * erased before the next line of output. */
typedef struct attnctl_progress {
    int on;
    int n, i;
    double t0;
} attnctl_progress;
void attnctl_progress_start(attnctl_progress *p, int n, int json);
void attnctl_progress_step(attnctl_progress *p, const char *what);
void attnctl_progress_clear(attnctl_progress *p);

/* --------------------------------------------------------------- commands */

extern const attnctl_cmd attnctl_cmd_list_plugins, attnctl_cmd_search_paths, attnctl_cmd_devices,
    attnctl_cmd_select, attnctl_cmd_run, attnctl_cmd_check, attnctl_cmd_bench, attnctl_cmd_report;

#endif
