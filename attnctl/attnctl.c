/* attnctl main: dispatch to one command. */
#include <stdio.h>
#include <string.h>

#include "attnctl.h"

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"list-plugins", cmd_list_plugins, "every plugin found, what it can do here, or why not"},
    {"search-paths", cmd_search_paths, "each plugin directory and where it came from"},
    {"devices", cmd_devices, "devices the plugins see"},
    {"select", cmd_select, "the attention stack the host would choose for a model, and why"},
    {"check", cmd_check, "conformance of plugins against the float64 reference"},
    {"bench", cmd_bench, "time a plugin on attention cases"},
    {"run", cmd_run, "one attention forward on a model's shapes, checked against the reference"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: attnctl [--version] <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\ncommon options: --plugin-path DIRS  --conf FILE  --no-conf  --validate  --json  -v\n"
               "exit codes: 0 ok, 1 refused/failed, 2 usage, 3 environment, 4 not found\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return ATTNCTL_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("attnctl %s (libsglattn %s, plugin ABI %d.%d)\n", SGL_ATTN_VERSION, SGL_ATTN_VERSION,
               SGL_ATTN_ABI_MAJOR, SGL_ATTN_ABI_MINOR);
        return ATTNCTL_EXIT_OK;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return ATTNCTL_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "attnctl: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return ATTNCTL_EXIT_USAGE;
}
