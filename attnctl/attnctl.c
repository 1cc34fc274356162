/* attnctl main: dispatch to one command; global help, version, the help of
 * every command (for the man page) and the bash completion script. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnctl.h"

static const attnctl_cmd *const attnctl_commands[] = {
    &attnctl_cmd_list_plugins, &attnctl_cmd_devices, &attnctl_cmd_search_paths, &attnctl_cmd_select,
    &attnctl_cmd_run,          &attnctl_cmd_check,   &attnctl_cmd_bench,        &attnctl_cmd_report,
};
static const size_t attnctl_command_count = sizeof attnctl_commands / sizeof attnctl_commands[0];

static const attnctl_cmd *attnctl_find_command(const char *name) {
    for (size_t i = 0; i < attnctl_command_count; i++)
        if (!strcmp(attnctl_commands[i]->name, name)) return attnctl_commands[i];
    return NULL;
}

static void version(void) {
    printf("attnctl %s\nlibsglattn %s, plugin ABI %d.%d, --json schema %d\n", SGL_ATTN_VERSION, SGL_ATTN_VERSION,
           SGL_ATTN_ABI_MAJOR, SGL_ATTN_ABI_MINOR, ATTNCTL_JSON_SCHEMA);
}

static void usage(FILE *f) {
    fprintf(f, "Usage: attnctl <command> [options]\n"
               "       attnctl help <command> | --help | --version\n\n"
               "Choose and check LLM attention kernels: the plugins libsglattn finds here, what each can do on\n"
               "this machine's devices, the stack it would choose for a model, and conformance against a\n"
               "float64 reference.\n\n"
               "Commands:\n");
    for (size_t i = 0; i < attnctl_command_count; i++)
        fprintf(f, "  %-14s %s\n", attnctl_commands[i]->name, attnctl_commands[i]->summary);
    fprintf(f, "  %-14s %s\n", "help", "a command's options (attnctl help select)");
    fprintf(f, "  %-14s %s\n\n", "completion", "the bash completion script (attnctl completion bash)");
    fprintf(f, "Options:\n"
               "  -h, --help     this help; attnctl <command> --help for a command's\n"
               "  -V, --version  versions of attnctl, the library, the plugin ABI and the JSON schema\n\n"
               "Environment: SGL_ATTN_PLUGIN_PATH (plugin directories), SGL_ATTN_CONF (the conf file),\n"
               "SGL_ATTN_DEBUG=1..3 (log level), SGL_ATTN_VALIDATE=1, SGL_ATTN_NO_UNLOAD=1, NO_COLOR.\n\n"
               "Exit status: 0 ok; 1 refused, failed or not usable; 2 bad command line; 3 the host could not\n"
               "open (conf, model or machine file, paths); 4 a named plugin, backend or case does not exist.\n"
               "Documentation: docs/attnctl.md; attnctl report prints what a bug report needs.\n");
}

/* Every command's help, one after the other: the man page's source. */
static void help_all(void) {
    usage(stdout);
    for (size_t i = 0; i < attnctl_command_count; i++) {
        /* indented under a heading line: help2man makes each a subsection */
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (!m) continue;
        attnctl_print_help(attnctl_commands[i], m);
        fclose(m);
        printf("\nCommand %s:\n", attnctl_commands[i]->name);
        for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            int n = nl ? (int)(nl - line) : (int)strlen(line);
            printf(n ? "  %.*s\n" : "%.*s\n", n, line);
        }
        free(text);
    }
}

static int unknown_command(const char *what) {
    const char *names[32];
    size_t n = 0;
    for (size_t i = 0; i < attnctl_command_count; i++) names[n++] = attnctl_commands[i]->name;
    names[n++] = "help";
    names[n++] = "completion";
    const char *near = attnctl_closest(what, names, n);
    fprintf(stderr, "attnctl: '%s' is not a command%s%s%s\n", attnctl_esc(what), near ? "; did you mean '" : "",
            near ? near : "", near ? "'?" : "");
    fprintf(stderr, "Try 'attnctl --help' for the commands.\n");
    return ATTNCTL_EXIT_USAGE;
}

/* Plugin or backend names, one a line, for the completion script. */
static int names(int argc, char **argv) {
    attnctl_common c = {.isolate = 1};
    sgl_attn_host *h = attnctl_open_host(&c, "__names");
    if (!h) return ATTNCTL_EXIT_ENV;
    int backends = argc > 1 && !strcmp(argv[1], "backend");
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        if (sgl_attn_host_plugin_info(h, i, &in) || !attnctl_has_descriptor(&in) ||
            in.status == SGL_ATTN_PLUGIN_SHADOWED)
            continue;
        printf("%s\n", in.name);
        for (uint32_t k = 0; backends && k < in.n_aliases; k++) printf("%s\n", in.aliases[k]);
    }
    sgl_attn_host_close(h);
    return 0;
}

int main(int argc, char **argv) {
    attnctl_cli_init(attnctl_commands, attnctl_command_count);
    if (argc < 2) {
        usage(stderr);
        return ATTNCTL_EXIT_USAGE;
    }
    const char *a = argv[1];
    if (!strcmp(a, "--version") || !strcmp(a, "-V") || !strcmp(a, "version")) {
        version();
        return ATTNCTL_EXIT_OK;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
        usage(stdout);
        return ATTNCTL_EXIT_OK;
    }
    if (!strcmp(a, "help")) {
        if (argc < 3) {
            usage(stdout);
            return ATTNCTL_EXIT_OK;
        }
        if (!strcmp(argv[2], "--all")) {
            help_all();
            return ATTNCTL_EXIT_OK;
        }
        const attnctl_cmd *c = attnctl_find_command(argv[2]);
        if (!c) return unknown_command(argv[2]);
        attnctl_print_help(c, stdout);
        return ATTNCTL_EXIT_OK;
    }
    if (!strcmp(a, "completion")) {
        if (argc == 3 && !strcmp(argv[2], "bash")) {
            attnctl_print_completion(stdout);
            return ATTNCTL_EXIT_OK;
        }
        fprintf(stderr, "attnctl completion: expected 'bash' (attnctl completion bash > "
                        "/etc/bash_completion.d/attnctl)\n");
        return ATTNCTL_EXIT_USAGE;
    }
    if (!strcmp(a, "__names")) return names(argc - 1, argv + 1);
    if (a[0] == '-') {
        const char *opts[] = {"--help", "--version"};
        const char *near = attnctl_closest(a, opts, 2);
        fprintf(stderr, "attnctl: unknown option '%s'%s%s%s; options go after the command\n", attnctl_esc(a),
                near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
        fprintf(stderr, "Try 'attnctl --help' for the commands.\n");
        return ATTNCTL_EXIT_USAGE;
    }
    const attnctl_cmd *c = attnctl_find_command(a);
    if (!c) return unknown_command(a);
    return c->run(c, argc - 1, argv + 1);
}
