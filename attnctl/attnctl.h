/* attnctl - command-line front end of libsglattn.  Arguments to API calls and
 * printing only; no policy lives here.  One file per command. */
#ifndef ATTNCTL_H
#define ATTNCTL_H

#include <stdio.h>

#include "sgl_attn.h"

/* Exit codes (docs/attnctl.md). */
enum {
    ATTNCTL_EXIT_OK = 0,
    ATTNCTL_EXIT_FAIL = 1,    /* refused selection, failed check, unusable plugin */
    ATTNCTL_EXIT_USAGE = 2,   /* bad command line */
    ATTNCTL_EXIT_ENV = 3,     /* host could not open: conf, model file, paths */
    ATTNCTL_EXIT_NOT_FOUND = 4 /* named plugin or case does not exist */
};

/* Options every command accepts; parsed by attnctl_common_opt(). */
typedef struct attnctl_common {
    const char *plugin_path; /* --plugin-path DIRS */
    const char *conf_path;   /* --conf FILE */
    int no_conf;             /* --no-conf */
    int isolate;             /* probes in a child: 1 by default for list-plugins */
    int validate;            /* --validate */
    int json;                /* --json */
    int verbose;             /* -v */
} attnctl_common;

/* Returns 1 if argv[*i] was a common option (advancing *i past its value),
 * 0 if not, -1 on a missing value (message printed). */
int attnctl_common_opt(attnctl_common *c, int argc, char **argv, int *i);
/* Open a host from the common options; prints the error and returns NULL. */
sgl_attn_host *attnctl_open_host(const attnctl_common *c);
/* JSON string escaping to a stream (invalid UTF-8 becomes U+FFFD). */
void attnctl_json_str(FILE *f, const char *s);
/* "full", "hybrid:<kind>" or "layer". */
const char *attnctl_role(const sgl_attn_plugin_info *in, char *buf, size_t size);
/* 1 when the plugin's descriptor was read (name, version... are valid). */
int attnctl_has_descriptor(const sgl_attn_plugin_info *in);
/* One device's caps as a JSON object (devices.c). */
void attnctl_json_caps(FILE *f, const sgl_attn_caps *c, uint32_t index);

int cmd_list_plugins(int argc, char **argv);
int cmd_search_paths(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_select(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_run(int argc, char **argv);

#endif
