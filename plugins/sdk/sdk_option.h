/* sdk_option.h - a plugin's tuning, read once at create into the instance:
 * the conf option (`"plugin_options": {"<plugin>": {"<key>": value}}`) through
 * the host that creates the instance (create_args.host, ABI 1.1; a 1.0 host
 * has none), overridden by an environment variable when it is set (not in a
 * setuid or setgid process).  Values
 * parse as an integer in a range, a boolean or one name of a list; a bad
 * one fails create with a message naming the option, where it came from, the
 * value and what is accepted.  Never call these from a forward. */
#ifndef SGL_SDK_OPTION_H
#define SGL_SDK_OPTION_H

#include <stddef.h>
#include <stdint.h>

#include "sgl_attn_abi.h"

/* Where options are read from, and where a bad value is explained. */
typedef struct sgl_sdk_opts {
    const sgl_attn_host_api *host; /* NULL: the environment only */
    const char *plugin;            /* the plugin_options section: the plugin's name */
    char *err;                     /* the message on a bad value */
    size_t err_size;
} sgl_sdk_opts;

/* The opts of a create: its host when the args carry one (ABI 1.1). */
sgl_sdk_opts sgl_sdk_opts_of(const sgl_attn_create_args *a, const char *plugin);

/* The raw value: the environment variable `env` when set and not empty
 * (env may be NULL), else the conf option `key`, else NULL.  *from (may be
 * NULL) gets a phrase naming the source, for messages. */
const char *sgl_sdk_opt_raw(const sgl_sdk_opts *o, const char *key, const char *env, char *from, size_t from_size);

/* Unset, "" or "auto": def.  Else an integer lo..hi. */
int sgl_sdk_opt_int(const sgl_sdk_opts *o, const char *key, const char *env, int64_t def, int64_t lo, int64_t hi,
                    int64_t *out);
/* Unset, "" or "auto": def.  Else 1/true/yes/on or 0/false/no/off (any case). */
int sgl_sdk_opt_bool(const sgl_sdk_opts *o, const char *key, const char *env, int def, int *out);
/* Unset, "" or "auto" (when "auto" is not a name): def.  Else the index of
 * the name it equals (any case) in names[0..count). */
int sgl_sdk_opt_choice(const sgl_sdk_opts *o, const char *key, const char *env, const char *const *names, int count,
                       int def, int *out);
/* Options a plugin no longer has (a variant deleted or made the only
 * behaviour: docs/lab/levers.md): keys[0..n) with their environment
 * variables envs[0..n) (envs, or an entry, may be NULL).  Any of them set,
 * whatever its value: SGL_ATTN_E_INVALID with "<plugin>: <where> is no longer
 * an option (docs/lab/levers.md); unset it", so that a configuration written
 * for the old choice does not run the default under its name.  Else OK. */
int sgl_sdk_opt_removed(const sgl_sdk_opts *o, const char *const *keys, const char *const *envs, size_t n);

#endif
