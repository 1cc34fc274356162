/* icount.c - exact user-mode instruction count of a marked section, by
 * single-stepping it under ptrace.  For the AVX-512 loops: valgrind does not
 * decode AVX-512 and this VM exposes no performance counters.
 *
 *   build/bench/cpu_icount PROG ARGS...
 *
 * PROG marks the section by stopping itself (SIGSTOP) before and after it
 * (cpu_decode_bw --mark); only the thread that stops is stepped, so run the
 * section on one thread (SGL_ATTN_CPU_REF_THREADS=1).  Prints the count.
 * With $ICOUNT_PROFILE=FILE it also writes "offset count" per instruction
 * address of PROG's executable mapping (offsets as objdump -d shows them for
 * a PIE), for reading the counts against the disassembly. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

enum { HBITS = 20 };
static uint64_t h_addr[1 << HBITS], h_count[1 << HBITS];

static void h_add(uint64_t a) {
    uint64_t i = (a * 0x9e3779b97f4a7c15ull) >> (64 - HBITS);
    while (h_addr[i] && h_addr[i] != a) i = (i + 1) & ((1u << HBITS) - 1);
    h_addr[i] = a;
    h_count[i]++;
}

/* Start of the executable's first mapping (the PIE load base). */
static uint64_t load_base(pid_t pid) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    uint64_t base = 0;
    if (f && fgets(line, sizeof line, f)) base = strtoull(line, NULL, 16);
    if (f) fclose(f);
    return base;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROG ARGS...\n", argv[0]);
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        _exit(127);
    }
    int st, marks = 0;
    unsigned long long steps = 0;
    const char *prof = getenv("ICOUNT_PROFILE");
    uint64_t base = 0;
    waitpid(pid, &st, 0); /* the exec stop */
    ptrace(PTRACE_CONT, pid, NULL, NULL);
    for (;;) {
        if (waitpid(pid, &st, 0) < 0) {
            perror("waitpid");
            return 1;
        }
        if (WIFEXITED(st) || WIFSIGNALED(st)) break;
        int sig = WSTOPSIG(st);
        if (sig == SIGSTOP) {
            if (++marks == 1 && prof) base = load_base(pid);
            sig = 0;
        } else if (sig == SIGTRAP && marks == 1) {
            steps++;
            sig = 0;
            if (prof) {
                struct user_regs_struct regs;
                if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) == 0) h_add(regs.rip);
            }
        }
        ptrace(marks == 1 ? PTRACE_SINGLESTEP : PTRACE_CONT, pid, NULL, (void *)(long)sig);
    }
    if (marks < 2) {
        fprintf(stderr, "%s: saw %d of the 2 SIGSTOP marks\n", argv[0], marks);
        return 1;
    }
    printf("%llu\n", steps);
    if (prof) {
        FILE *f = fopen(prof, "w");
        if (!f) {
            perror(prof);
            return 1;
        }
        for (size_t i = 0; i < (size_t)1 << HBITS; i++)
            if (h_addr[i]) fprintf(f, "%llx %llu\n", (unsigned long long)(h_addr[i] - base), (unsigned long long)h_count[i]);
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
