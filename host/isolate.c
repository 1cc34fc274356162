/* isolate.c - the first contact with plugin files, each in a child process.
 *
 * With isolation (sgl_attn_host_options.isolate_probes; attnctl's default for
 * list-plugins and devices) no code of a plugin file runs in the caller's
 * process before that file has passed in a child: the child dlopens it (its
 * ELF constructors run there), calls its entry point, checks the descriptor
 * and probes every device, then sends the verdict and the caps back through
 * a pipe.  All files are tried in parallel (at most ISOLATE_INFLIGHT
 * children at once) under one deadline for the whole scan.
 *
 * A child is the leader of its own process group; the group is killed when
 * the child ends or the deadline passes, so a grandchild that a plugin forked
 * dies with it.  The child's stdin is /dev/null and its stdout and stderr go
 * to a pipe while the file loads and negotiates: output there is a defect
 * (the same load in the caller's process would reach the caller's terminal)
 * and the parent keeps its first bytes for the reason.  Probes may write:
 * their output goes to /dev/null, since the probe never runs in the parent.
 *
 * Threads: fork copies the calling thread only, so the child starts with
 * one; a file whose constructors or entry point leave more running, or leave
 * a process of theirs running, is refused (those threads would run in the
 * caller's process and crash it at dlclose).  Threads a probe starts (CUDA's
 * runtime does) die with the child.
 *
 * The child never calls the caller's log callback, never takes libltdl's
 * mutex and leaves with _exit, so the caller's atexit handlers and stdio
 * buffers stay the caller's (unless a plugin itself calls exit: then they run
 * in the child, whose output goes to the pipe). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host_internal.h"

#define ISOLATE_INFLIGHT 32
#define OUT_KEEP 96             /* bytes of load-time output kept for the reason */
#define REPLY_MAGIC 0x53474c43u /* "SGLC" */

/* Stages the child announces before entering them. */
enum { STAGE_NONE = 0, STAGE_DLOPEN = 'D', STAGE_ENTRY = 'E', STAGE_PROBE = 'P', STAGE_REPLY = 'R' };
/* After a successful negotiation the child sends 'N' and the descriptor's
 * fields (an sgl_attn_plugin_info), so a probe that crashes or hangs is still
 * reported under its plugin's name. */
#define NAMED 'N'

typedef struct contact_reply {
    uint32_t magic;
    uint32_t caps_size;
    uint32_t n_caps;
    int32_t status;
    int32_t probe_rc;
    char reason[sizeof(((contact *)0)->reason)];
    sgl_attn_plugin_info info;
} contact_reply;

/* ------------------------------------------------------------- the child */

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void stage(int fd, char s) { (void)write_all(fd, &s, 1); }

static void quiet_log(void *ctx, int level, const char *plugin, const char *fmt, ...) {
    (void)ctx, (void)level, (void)plugin, (void)fmt;
}

static void child_reset_signals(void) {
    /* Crashes end the child with their own signal (whatever handlers the
     * caller or a sanitizer installed), so the parent can name it. */
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGPIPE, SIGTERM, SIGINT,
                               SIGHUP,  SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGTRAP, SIGSYS, SIGXCPU};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Threads or processes a file's load left running: 1 with the reason.  A
 * thread would run in every process that lists plugins and crash it when the
 * file is unloaded; a process would outlive the listing. */
static int left_running(contact_reply *r, const char *who, int before, int after) {
    if (before > 0 && after > before) {
        r->status = SGL_ATTN_PLUGIN_LOAD_ERROR;
        str_printf(r->reason, sizeof r->reason,
                   "%s started %d thread%s; a plugin may start threads in create, not at load", who,
                   after - before, after - before == 1 ? "" : "s");
        return 1;
    }
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG); /* 0: a child of ours is still running */
    if (p == 0) {
        r->status = SGL_ATTN_PLUGIN_LOAD_ERROR;
        str_printf(r->reason, sizeof r->reason, "%s started a process that is still running; a plugin must not "
                   "start processes at load", who);
        return 1;
    }
    return 0;
}

static void child_contact(const char *path, const sgl_attn_host_api *host_api, int rfd, int ofd, int nullfd) {
    child_reset_signals();
    setpgid(0, 0);
    /* The caller's unwritten stdio buffers are not this file's output. */
    __fpurge(stdout);
    __fpurge(stderr);
    dup2(nullfd, STDIN_FILENO);
    dup2(ofd, STDOUT_FILENO);
    dup2(ofd, STDERR_FILENO);
    sgl_attn_host_api api = *host_api;
    api.log = quiet_log; /* never the caller's callback from a forked child */
    static contact_reply r; /* a child's own copy: fork duplicated the page */
    memset(&r, 0, sizeof r);
    r.magic = REPLY_MAGIC;
    r.caps_size = sizeof(sgl_attn_caps);
    r.status = SGL_ATTN_PLUGIN_LOAD_ERROR;
    sgl_attn_caps *caps = NULL;
    uint32_t n_caps = 0;

    stage(rfd, STAGE_DLOPEN);
    int t0 = host_thread_count();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        module_describe_dlerror(path, e ? e : "unknown error", r.reason, sizeof r.reason);
        goto send;
    }
    int t1 = host_thread_count();
    if (left_running(&r, "loading it (its ELF constructors)", t0, t1)) goto send;
    void *sym = dlsym(h, SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        str_copy(r.reason, sizeof r.reason, "no entry point " SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
        goto send;
    }
    sgl_attn_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    stage(rfd, STAGE_ENTRY);
    sgl_attn_plugin desc;
    uint16_t maj = 0, min = 0;
    r.status = plugin_negotiate(entry, &api, &desc, &maj, &min, r.reason, sizeof r.reason);
    r.info.abi_major = maj;
    r.info.abi_minor = min;
    if (r.status != SGL_ATTN_PLUGIN_USABLE) goto send;
    if (left_running(&r, "its entry point", t1, host_thread_count())) goto send;
    host_fill_info(&r.info, &desc, maj, min);
    stage(rfd, NAMED);
    (void)write_all(rfd, &r.info, sizeof r.info);
    /* What the file wrote while loading is in the pipe; the probe's is not. */
    fflush(stdout);
    fflush(stderr);
    dup2(nullfd, STDOUT_FILENO);
    dup2(nullfd, STDERR_FILENO);
    close(ofd);
    stage(rfd, STAGE_PROBE);
    r.probe_rc = probe_run(&desc, &caps, &n_caps, r.reason, sizeof r.reason);
    r.n_caps = n_caps;
send:
    fflush(stdout);
    fflush(stderr);
    stage(rfd, STAGE_REPLY);
    int ok = write_all(rfd, &r, sizeof r) == 0 &&
             (n_caps == 0 || write_all(rfd, caps, (size_t)n_caps * sizeof *caps) == 0);
    _exit(ok ? 0 : 111); /* no atexit handlers, no flushing the caller's stdio */
}

/* ------------------------------------------------------------- the parent */

typedef struct kid {
    pid_t pid;
    int rfd, ofd;      /* -1 once closed */
    char stage;        /* the last stage the child announced */
    char *buf;         /* the reply (after STAGE_REPLY) */
    size_t n, cap;
    int in_reply;
    sgl_attn_plugin_info info; /* after NAMED */
    size_t info_n;             /* bytes of it read; sizeof info: complete */
    int in_info;
    size_t out_total;
    char out_head[OUT_KEEP];
    size_t out_n;
} kid;

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* One read from the reply pipe: stage bytes, then the reply.  1: read
 * something; 0: nothing now; -1: end of file or error (closed). */
static int read_reply(kid *k) {
    char tmp[4096];
    ssize_t r = read(k->rfd, tmp, sizeof tmp);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (r <= 0) {
        close_fd(&k->rfd);
        return -1;
    }
    const size_t limit = sizeof(contact_reply) + (size_t)PROBE_MAX_DEVICES * sizeof(sgl_attn_caps) + 1;
    for (ssize_t i = 0; i < r; i++) {
        if (k->in_info) {
            ((char *)&k->info)[k->info_n++] = tmp[i];
            if (k->info_n == sizeof k->info) k->in_info = 0;
            continue;
        }
        if (!k->in_reply) {
            if (tmp[i] == NAMED && k->info_n == 0) {
                k->in_info = 1;
                continue;
            }
            k->stage = tmp[i];
            if (tmp[i] == STAGE_REPLY) k->in_reply = 1;
            continue;
        }
        if (k->n == k->cap) {
            if (k->cap >= limit) continue; /* an overlong reply shows as a wrong length */
            size_t cap = k->cap ? 2 * k->cap : 8192;
            if (cap > limit) cap = limit;
            char *nb = realloc(k->buf, cap);
            if (!nb) continue;
            k->buf = nb;
            k->cap = cap;
        }
        k->buf[k->n++] = tmp[i];
    }
    return 1;
}

/* The same for the output pipe: the first OUT_KEEP bytes and the count. */
static int read_out(kid *k) {
    char tmp[16384];
    ssize_t r = read(k->ofd, tmp, sizeof tmp);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (r <= 0) {
        close_fd(&k->ofd);
        return -1;
    }
    size_t keep = OUT_KEEP - k->out_n < (size_t)r ? OUT_KEEP - k->out_n : (size_t)r;
    memcpy(k->out_head + k->out_n, tmp, keep);
    k->out_n += keep;
    k->out_total += (size_t)r;
    return 1;
}

/* Whatever the pipes still hold, without waiting (bounded: a writer that
 * escaped the group kill cannot keep us here). */
static void drain(kid *k) {
    for (int i = 0; i < 1024 && k->rfd >= 0 && read_reply(k) == 1; i++) {}
    for (int i = 0; i < 1024 && k->ofd >= 0 && read_out(k) == 1; i++) {}
}

static int set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int start_kid(kid *k, const char *path, const sgl_attn_host_api *api, int nullfd, char *why,
                     size_t why_size) {
    int r[2], o[2];
    k->rfd = k->ofd = -1;
    if (pipe2(r, O_CLOEXEC) != 0) {
        str_printf(why, why_size, "cannot isolate the first contact: pipe: %s", strerror(errno));
        return -1;
    }
    if (pipe2(o, O_CLOEXEC) != 0) {
        str_printf(why, why_size, "cannot isolate the first contact: pipe: %s", strerror(errno));
        close(r[0]);
        close(r[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        str_printf(why, why_size, "cannot isolate the first contact: fork: %s", strerror(errno));
        close(r[0]), close(r[1]), close(o[0]), close(o[1]);
        return -1;
    }
    if (pid == 0) {
        close(r[0]);
        close(o[0]);
        child_contact(path, api, r[1], o[1], nullfd);
    }
    setpgid(pid, pid); /* also done by the child: whichever runs first */
    close(r[1]);
    close(o[1]);
    k->pid = pid;
    k->rfd = r[0];
    k->ofd = o[0];
    set_nonblock(k->rfd);
    set_nonblock(k->ofd);
    return 0;
}

/* Has the child ended?  1 with *status (-1: unknown) and the zombie kept, so
 * its process group id cannot be reused before the group is killed. */
static int ended(const kid *k, int *status) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)k->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
        /* ECHILD: the caller ignores SIGCHLD and the kernel reaped it. */
        *status = -1;
        return errno == ECHILD;
    }
    if (si.si_pid != k->pid) return 0;
    *status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : (si.si_status & 0x7f);
    return 1;
}

/* Kill the child's group (grandchildren too) and reap the child.  A process
 * stuck in the kernel (a device driver call) may not die at once: after a
 * second it is left to init rather than hang the host's open. */
static void finish_kid(kid *k, int *status, int known) {
    kill(-k->pid, SIGKILL);
    kill(k->pid, SIGKILL);
    int st = 0;
    long t0 = now_ms();
    for (;;) {
        pid_t w = waitpid(k->pid, &st, WNOHANG);
        if (w == k->pid) {
            if (!known) *status = st;
            break;
        }
        if (w < 0 && errno != EINTR) {
            if (!known) *status = -1;
            break;
        }
        if (now_ms() - t0 > 1000) {
            if (!known) *status = -1;
            break;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    drain(k);
    close_fd(&k->rfd);
    close_fd(&k->ofd);
}

/* Printable, escaped and short: what a plugin wrote, for a reason. */
static void escape_out(const char *s, size_t n, char *dst, size_t size) {
    size_t j = 0;
    for (size_t i = 0; i < n && j + 5 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n' || c == '\t' || c == '\r') {
            dst[j++] = '\\';
            dst[j++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        } else if (c == '"' || c == '\\') {
            dst[j++] = '\\';
            dst[j++] = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            j += (size_t)snprintf(dst + j, size - j, "\\x%02x", c);
        } else {
            dst[j++] = (char)c;
        }
    }
    dst[j] = 0;
}

static const char *stage_what(char s) {
    switch (s) {
    case STAGE_DLOPEN: return "dlopen (its ELF constructors)";
    case STAGE_ENTRY: return "entry point";
    case STAGE_PROBE: return "probe";
    default: return "isolated loader";
    }
}

/* The verdict for one child that ended (or was killed at the deadline). */
static void verdict(kid *k, int status, int timed_out, int timeout_ms, contact *c) {
    c->status = SGL_ATTN_PLUGIN_LOAD_ERROR;
    c->probe_rc = SGL_ATTN_E_DEVICE;
    if (k->info_n == sizeof k->info) {
        /* Negotiated: what follows is the probe's. */
        c->info = k->info;
        c->info.reason[sizeof c->info.reason - 1] = 0;
        c->have_info = 1;
        c->status = SGL_ATTN_PLUGIN_USABLE;
    }
    contact_reply r;
    const size_t head = sizeof r;
    int complete = 0;
    if (k->in_reply && k->n >= head) {
        memcpy(&r, k->buf, head);
        r.reason[sizeof r.reason - 1] = 0;
        size_t want = head + (size_t)r.n_caps * sizeof(sgl_attn_caps);
        complete = r.magic == REPLY_MAGIC && r.caps_size == sizeof(sgl_attn_caps) &&
                   r.n_caps <= PROBE_MAX_DEVICES && k->n == want &&
                   (r.status == SGL_ATTN_PLUGIN_USABLE) == (c->have_info != 0);
    }
    if (complete) {
        c->status = r.status;
        c->probe_rc = r.probe_rc;
        str_copy(c->reason, sizeof c->reason, r.reason);
        if (!c->have_info) {
            c->info.abi_major = r.info.abi_major;
            c->info.abi_minor = r.info.abi_minor;
        }
        if (r.status == SGL_ATTN_PLUGIN_USABLE && r.n_caps) {
            c->caps = malloc((size_t)r.n_caps * sizeof *c->caps);
            if (!c->caps) {
                c->probe_rc = SGL_ATTN_E_NOMEM;
                str_copy(c->reason, sizeof c->reason, "out of memory");
            } else {
                memcpy(c->caps, k->buf + head, (size_t)r.n_caps * sizeof *c->caps);
                c->n_caps = r.n_caps;
            }
        }
    } else if (k->in_reply) {
        c->status = SGL_ATTN_PLUGIN_LOAD_ERROR;
        str_printf(c->reason, sizeof c->reason, "the isolated loader sent a malformed reply (%zu bytes)", k->n);
    } else {
        const char *what = stage_what(k->stage);
        if (timed_out)
            str_printf(c->reason, sizeof c->reason, "%s timed out after %d ms", what, timeout_ms);
        else if (status >= 0 && WIFSIGNALED(status))
            str_printf(c->reason, sizeof c->reason, "%s crashed (signal %d, %s)", what, WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
        else if (status >= 0 && WIFEXITED(status))
            str_printf(c->reason, sizeof c->reason, "%s ended the process (exit status %d) without answering",
                       what, WEXITSTATUS(status));
        else
            str_printf(c->reason, sizeof c->reason, "%s: the isolated process ended without answering", what);
    }
    if (k->out_total) {
        /* Loaded again in the caller, it would write there too: refused. */
        char shown[4 * OUT_KEEP + 8], first[sizeof c->reason];
        escape_out(k->out_head, k->out_n, shown, sizeof shown);
        str_copy(first, sizeof first, c->reason);
        int failed = c->status != SGL_ATTN_PLUGIN_USABLE || c->probe_rc != SGL_ATTN_OK;
        str_printf(c->reason, sizeof c->reason,
                   "wrote %zu byte%s to stdout/stderr while loading (\"%s\"%s); a plugin must not write to the "
                   "terminal at load%s%s",
                   k->out_total, k->out_total == 1 ? "" : "s", shown, k->out_total > k->out_n ? "..." : "",
                   failed ? "; then: " : "", failed ? first : "");
        free(c->caps);
        c->caps = NULL;
        c->n_caps = 0;
        c->status = SGL_ATTN_PLUGIN_LOAD_ERROR;
    }
}

void isolate_contact(const char *const *paths, size_t n, const sgl_attn_host_api *api, int timeout_ms,
                     contact *out) {
    for (size_t i = 0; i < n; i++) memset(&out[i], 0, sizeof out[i]);
    if (!n) return;
    kid *kids = calloc(n, sizeof *kids);
    struct pollfd *pf = calloc(2 * n, sizeof *pf);
    size_t *owner = calloc(2 * n, sizeof *owner);
    char *running = calloc(n, 1);
    int nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (!kids || !pf || !owner || !running || nullfd < 0) {
        for (size_t i = 0; i < n; i++) {
            out[i].status = SGL_ATTN_PLUGIN_LOAD_ERROR;
            str_printf(out[i].reason, sizeof out[i].reason, "cannot isolate the first contact: %s",
                       nullfd < 0 ? "cannot open /dev/null" : "out of memory");
        }
        free(kids), free(pf), free(owner), free(running);
        if (nullfd >= 0) close(nullfd);
        return;
    }
    const long deadline = now_ms() + timeout_ms;
    size_t next = 0, active = 0, done = 0;
    while (done < n) {
        while (active < ISOLATE_INFLIGHT && next < n && now_ms() < deadline) {
            size_t i = next++;
            if (start_kid(&kids[i], paths[i], api, nullfd, out[i].reason, sizeof out[i].reason) != 0) {
                out[i].status = SGL_ATTN_PLUGIN_LOAD_ERROR;
                done++;
                continue;
            }
            running[i] = 1;
            active++;
        }
        long left = deadline - now_ms();
        if (left <= 0) break;
        size_t nf = 0;
        for (size_t i = 0; i < n; i++) {
            if (!running[i]) continue;
            if (kids[i].rfd >= 0) pf[nf] = (struct pollfd){kids[i].rfd, POLLIN, 0}, owner[nf++] = 2 * i;
            if (kids[i].ofd >= 0) pf[nf] = (struct pollfd){kids[i].ofd, POLLIN, 0}, owner[nf++] = 2 * i + 1;
        }
        /* A short tick: a child may end while a grandchild holds its pipes. */
        int pr = poll(pf, (nfds_t)nf, left < 20 ? (int)left : 20);
        for (size_t j = 0; pr > 0 && j < nf; j++) {
            if (!pf[j].revents) continue;
            kid *k = &kids[owner[j] / 2];
            if (owner[j] % 2) {
                if (k->ofd >= 0) read_out(k);
            } else if (k->rfd >= 0) {
                read_reply(k);
            }
        }
        for (size_t i = 0; i < n; i++) {
            int status;
            if (!running[i] || !ended(&kids[i], &status)) continue;
            int known = status != -1;
            finish_kid(&kids[i], &status, known);
            verdict(&kids[i], status, 0, timeout_ms, &out[i]);
            running[i] = 0;
            active--;
            done++;
        }
    }
    /* The deadline: every child still running is killed with its group. */
    for (size_t i = 0; i < n; i++) {
        if (running[i]) {
            int status = -1;
            finish_kid(&kids[i], &status, 0);
            verdict(&kids[i], status, 1, timeout_ms, &out[i]);
        } else if (i >= next) {
            out[i].status = SGL_ATTN_PLUGIN_LOAD_ERROR;
            str_printf(out[i].reason, sizeof out[i].reason,
                       "not tried: the scan's deadline of %d ms passed before its turn (%d files are tried at once)",
                       timeout_ms, ISOLATE_INFLIGHT);
        }
        free(kids[i].buf);
    }
    free(running);
    free(kids);
    free(pf);
    free(owner);
    close(nullfd);
}
