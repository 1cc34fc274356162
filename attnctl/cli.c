/* cli.c - every command line parsed from the option tables: GNU-style long
 * options (--name VALUE, --name=VALUE), short flags, help per command, the
 * closest option suggested for an unknown one, and the usage errors. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "attnctl.h"

/* Set once by main before any parsing (attnctl_cli_init). */
static const attnctl_cmd *const *all_commands;
static size_t n_commands;

void attnctl_cli_init(const attnctl_cmd *const *commands, size_t n) {
    all_commands = commands;
    n_commands = n;
}

/* The shared options, with the COMMON_* bit that admits each. */
typedef struct common_opt {
    unsigned bit;
    const char *name;
    char short_name;
    const char *arg;
    const char *help;
} common_opt;

static const common_opt common_opts[] = {
    {COMMON_PATHS, "--plugin-path", 0, "DIRS", "colon-separated plugin directories searched before SGL_ATTN_PLUGIN_PATH"},
    {COMMON_CONF, "--conf", 0, "FILE", "the conf file to read (default: SGL_ATTN_CONF, then the installed one)"},
    {COMMON_CONF, "--no-conf", 0, NULL, "read no conf: built-in defaults"},
    {COMMON_ISOLATE, "--isolate", 0, NULL, "run plugin probes in a child process with a timeout"},
    {COMMON_ISOLATE, "--no-isolate", 0, NULL, "run plugin probes in this process"},
    {COMMON_VALIDATE, "--validate", 0, NULL, "stack the validation layer over what is created (SGL_ATTN_VALIDATE=1)"},
    {COMMON_JSON, "--json", 0, NULL, "machine-readable output (docs/attnctl.md, \"JSON output\")"},
    {COMMON_VERBOSE, "--verbose", 'v', NULL, "every column, and long texts in full"},
    {COMMON_COLOR, "--color", 0, "[=WHEN]", "colour: auto (a terminal without NO_COLOR), always or never"},
    {COMMON_CAPS, "--caps-from", 0, "FILE", "another machine's devices (its attnctl devices --json) instead of this one's"},
};
#define N_COMMON (sizeof common_opts / sizeof common_opts[0])

/* Damerau-Levenshtein distance (optimal string alignment), small strings. */
static int distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

const char *attnctl_closest(const char *s, const char *const *names, size_t n) {
    const char *best = NULL;
    int best_d = 99;
    size_t len = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if (!names[i]) continue;
        int d = distance(s, names[i]);
        /* a unique prefix is as good as one edit */
        if (len >= 3 && !strncmp(names[i], s, len) && d > 1) d = 1;
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    int limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    return best_d <= limit ? best : NULL;
}

static void hint(const attnctl_cmd *cmd) {
    fprintf(stderr, "Try 'attnctl %s --help' for the options.\n", cmd->name);
}

int attnctl_usage_error(const attnctl_cmd *cmd, const char *fmt, ...) {
    fprintf(stderr, "attnctl %s: ", cmd->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    hint(cmd);
    return ATTNCTL_EXIT_USAGE;
}

int attnctl_int_arg(const attnctl_cmd *cmd, const char *opt, const char *v, long long lo, long long hi,
                    long long *out) {
    char *end;
    long long x = strtoll(v, &end, 0);
    if (!v[0] || *end || x < lo || x > hi) {
        attnctl_usage_error(cmd, "%s %s: expected an integer from %lld to %lld", opt, attnctl_esc(v), lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

int attnctl_u64_arg(const attnctl_cmd *cmd, const char *opt, const char *v, uint64_t *out) {
    char *end;
    unsigned long long x = strtoull(v, &end, 0);
    if (!v[0] || *end || v[0] == '-') {
        attnctl_usage_error(cmd, "%s %s: expected an unsigned integer (0x... allowed)", opt, attnctl_esc(v));
        return -1;
    }
    *out = x;
    return 0;
}

/* "--name VALUE" / "--name=VALUE": 1 matched (value in *val, or NULL for a
 * flag), 0 not this option, -1 a value is missing or a flag was given one. */
static int match(const char *name, char short_name, const char *arg, int argc, char **argv, int *i,
                 const char **val) {
    const char *a = argv[*i];
    *val = NULL;
    if (short_name && a[0] == '-' && a[1] == short_name && !a[2]) return 1; /* short ones are flags */
    size_t n = strlen(name);
    if (strncmp(a, name, n) || (a[n] && a[n] != '=')) return 0;
    if (!arg) return a[n] == '=' ? -3 : 1;
    if (arg[0] == '[') { /* optional, only as --name=VALUE */
        *val = a[n] == '=' ? a + n + 1 : NULL;
        return 1;
    }
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (*i + 1 >= argc) return -1;
    *val = argv[++*i];
    return 1;
}

/* Every option name this command takes, for suggestions. */
static size_t option_names(const attnctl_cmd *cmd, const char **names, size_t cap) {
    size_t n = 0;
    for (const attnctl_opt *o = cmd->opts; o && o->name && n < cap; o++) names[n++] = o->name;
    for (size_t k = 0; k < N_COMMON && n < cap; k++)
        if (cmd->common & common_opts[k].bit) names[n++] = common_opts[k].name;
    if (n < cap) names[n++] = "--help";
    return n;
}

/* Commands other than cmd that take option `a` (by name), for the hint. */
static void other_commands(const attnctl_cmd *cmd, const char *a, char *buf, size_t size) {
    buf[0] = 0;
    size_t len = strcspn(a, "=");
    for (size_t i = 0; i < n_commands; i++) {
        const attnctl_cmd *c = all_commands[i];
        if (c == cmd) continue;
        for (const attnctl_opt *o = c->opts; o && o->name; o++)
            if (strlen(o->name) == len && !strncmp(o->name, a, len)) {
                size_t used = strlen(buf);
                snprintf(buf + used, size - used, "%s%s", used ? ", " : "", c->name);
                break;
            }
    }
}

static int set_color(const attnctl_cmd *cmd, attnctl_common *c, const char *v) {
    if (!v || !strcmp(v, "always") || !strcmp(v, "yes")) c->color = COLOR_ALWAYS;
    else if (!strcmp(v, "never") || !strcmp(v, "no")) c->color = COLOR_NEVER;
    else if (!strcmp(v, "auto")) c->color = COLOR_AUTO;
    else {
        attnctl_usage_error(cmd, "--color=%s: expected auto, always or never", attnctl_esc(v));
        return -1;
    }
    return 0;
}

static int common_match(const attnctl_cmd *cmd, attnctl_common *c, int argc, char **argv, int *i) {
    for (size_t k = 0; k < N_COMMON; k++) {
        const common_opt *o = &common_opts[k];
        if (!(cmd->common & o->bit)) continue;
        const char *v;
        int r = match(o->name, o->short_name, o->arg, argc, argv, i, &v);
        if (r == 0) continue;
        if (r == -1) return attnctl_usage_error(cmd, "%s needs a value (%s)", o->name, o->arg), -1;
        if (r == -3) return attnctl_usage_error(cmd, "%s takes no value", o->name), -1;
        if (!strcmp(o->name, "--plugin-path")) c->plugin_path = v;
        else if (!strcmp(o->name, "--conf")) c->conf_path = v;
        else if (!strcmp(o->name, "--no-conf")) c->no_conf = 1;
        else if (!strcmp(o->name, "--isolate")) c->isolate = 1;
        else if (!strcmp(o->name, "--no-isolate")) c->isolate = 0;
        else if (!strcmp(o->name, "--validate")) c->validate = 1;
        else if (!strcmp(o->name, "--json")) c->json = 1;
        else if (!strcmp(o->name, "--verbose")) c->verbose = 1;
        else if (!strcmp(o->name, "--caps-from")) c->caps_file = v;
        else if (!strcmp(o->name, "--color") && set_color(cmd, c, v)) return -1;
        return 1;
    }
    return 0;
}

int attnctl_parse(const attnctl_cmd *cmd, int argc, char **argv, attnctl_common *c, attnctl_args *out) {
    memset(c, 0, sizeof *c);
    c->isolate = cmd->isolate_default;
    out->n = 0;
    int seen[64] = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            attnctl_print_help(cmd, stdout);
            return 1;
        }
        int r = common_match(cmd, c, argc, argv, &i);
        if (r < 0) return -1;
        if (r > 0) continue;
        const attnctl_opt *hit = NULL;
        const char *v = NULL;
        for (const attnctl_opt *o = cmd->opts; o && o->name && !hit; o++) {
            r = match(o->name, o->short_name, o->arg, argc, argv, &i, &v);
            if (r == -1) return attnctl_usage_error(cmd, "%s needs a value (%s)", o->name, o->arg), -1;
            if (r == -3) return attnctl_usage_error(cmd, "%s takes no value", o->name), -1;
            if (r) hit = o;
        }
        if (!hit) {
            const char *names[96];
            size_t n = option_names(cmd, names, 96);
            char key[64];
            snprintf(key, sizeof key, "%.*s", (int)strcspn(a, "="), a);
            const char *near = a[0] == '-' ? attnctl_closest(key, names, n) : NULL;
            char others[256];
            other_commands(cmd, a, others, sizeof others);
            fprintf(stderr, "attnctl %s: %s '%s'", cmd->name, a[0] == '-' ? "unknown option" : "unexpected argument",
                    attnctl_esc(a));
            if (others[0]) fprintf(stderr, " (an option of %s)", others);
            if (near) fprintf(stderr, "; did you mean '%s'?", near);
            fputc('\n', stderr);
            hint(cmd);
            return -1;
        }
        int idx = (int)(hit - cmd->opts);
        if (idx < 64 && seen[idx]++ && !hit->repeat)
            return attnctl_usage_error(cmd, "%s given twice", hit->name), -1;
        if (out->n == (int)(sizeof out->v / sizeof out->v[0]))
            return attnctl_usage_error(cmd, "too many options"), -1;
        out->v[out->n].id = hit->id;
        out->v[out->n].value = v;
        out->n++;
    }
    return 0;
}

/* "  --model FILE" padded to the help column, then the line. */
static void opt_line(FILE *f, char short_name, const char *name, const char *arg, const char *help) {
    char head[80];
    if (short_name)
        snprintf(head, sizeof head, "  -%c, %s%s%s", short_name, name, arg && arg[0] != '[' ? " " : "", arg ? arg : "");
    else
        snprintf(head, sizeof head, "      %s%s%s", name, arg && arg[0] != '[' ? " " : "", arg ? arg : "");
    if (strlen(head) >= 30) fprintf(f, "%s\n%30s%s\n", head, "", help);
    else fprintf(f, "%-30s%s\n", head, help);
}

void attnctl_print_help(const attnctl_cmd *cmd, FILE *f) {
    fprintf(f, "Usage: attnctl %s %s\n\n", cmd->name, cmd->synopsis);
    fprintf(f, "%s\n\n", cmd->description);
    int own = cmd->opts && cmd->opts->name;
    if (own) {
        fprintf(f, "Options:\n");
        for (const attnctl_opt *o = cmd->opts; o->name; o++) opt_line(f, o->short_name, o->name, o->arg, o->help);
        fputc('\n', f);
    }
    fprintf(f, "%s:\n", own ? "Common options" : "Options");
    for (size_t k = 0; k < N_COMMON; k++)
        if (cmd->common & common_opts[k].bit)
            opt_line(f, common_opts[k].short_name, common_opts[k].name, common_opts[k].arg, common_opts[k].help);
    opt_line(f, 'h', "--help", NULL, "this help");
    fprintf(f, "\nExit status: %s\n", cmd->exit_codes);
}

/* ------------------------------------------------------------ completion */

static void complete_words(FILE *f, const char *spec) {
    if (!spec) return;
    if (!strcmp(spec, "@file")) fputs("_filedir", f);
    else if (!strcmp(spec, "@dir")) fputs("_filedir -d", f);
    else if (!strcmp(spec, "@plugin") || !strcmp(spec, "@backend"))
        fprintf(f, "COMPREPLY=($(compgen -W \"$(\"${COMP_WORDS[0]}\" __names %s 2>/dev/null)\" -- \"$cur\"))",
                spec + 1);
    else fprintf(f, "COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))", spec);
}

/* A bash completion script from the tables (installed by `make install`). */
void attnctl_print_completion(FILE *f) {
    fputs("# bash completion for attnctl; generated by `attnctl completion bash`\n"
          "_attnctl() {\n"
          "    local cur prev words cword\n"
          "    _init_completion -n = || return\n"
          "    local cmd=\"\" i\n"
          "    for ((i = 1; i < cword; i++)); do\n"
          "        case \"${words[i]}\" in -*) ;; *) cmd=\"${words[i]}\"; break ;; esac\n"
          "    done\n"
          "    if [[ -z $cmd ]]; then\n"
          "        COMPREPLY=($(compgen -W \"",
          f);
    for (size_t i = 0; i < n_commands; i++) fprintf(f, "%s ", all_commands[i]->name);
    fputs("help completion --help --version\" -- \"$cur\"))\n"
          "        return\n"
          "    fi\n"
          "    case \"$cmd\" in\n",
          f);
    for (size_t i = 0; i < n_commands; i++) {
        const attnctl_cmd *c = all_commands[i];
        fprintf(f, "    %s)\n        case \"$prev\" in\n", c->name);
        for (const attnctl_opt *o = c->opts; o && o->name; o++) {
            if (!o->arg || !o->complete) continue;
            fprintf(f, "            %s) ", o->name);
            complete_words(f, o->complete);
            fputs("; return ;;\n", f);
        }
        if (c->common & COMMON_PATHS) fputs("            --plugin-path) _filedir -d; return ;;\n", f);
        if (c->common & COMMON_CONF) fputs("            --conf) _filedir; return ;;\n", f);
        if (c->common & COMMON_CAPS) fputs("            --caps-from) _filedir; return ;;\n", f);
        fputs("        esac\n", f);
        if (c->common & COMMON_COLOR)
            fputs("        if [[ $cur == --color=* ]]; then COMPREPLY=($(compgen -W \"auto always never\" -- "
                  "\"${cur#--color=}\")); return; fi\n",
                  f);
        fputs("        COMPREPLY=($(compgen -W \"", f);
        for (const attnctl_opt *o = c->opts; o && o->name; o++) fprintf(f, "%s ", o->name);
        for (size_t k = 0; k < N_COMMON; k++)
            if (c->common & common_opts[k].bit) fprintf(f, "%s ", common_opts[k].name);
        fputs("--help\" -- \"$cur\")) ;;\n", f);
    }
    fputs("    help) COMPREPLY=($(compgen -W \"", f);
    for (size_t i = 0; i < n_commands; i++) fprintf(f, "%s ", all_commands[i]->name);
    fputs("\" -- \"$cur\")) ;;\n"
          "    completion) COMPREPLY=($(compgen -W \"bash\" -- \"$cur\")) ;;\n"
          "    esac\n"
          "}\n"
          "complete -F _attnctl attnctl\n",
          f);
}
