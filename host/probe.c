/* probe.c - ask a plugin about each of its devices.
 *
 * In-process by default.  With `isolate`, the probes run in a forked child
 * that sends the caps array back through a pipe; the parent polls with a
 * deadline, so a probe that crashes or hangs costs a status line ("probe
 * crashed (signal 11)", "probe timed out after 5000 ms"), not the host. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host_internal.h"

#define MAX_DEVICES 64

static int probe_in_process(const sgl_attn_plugin *d, sgl_attn_caps **caps, uint32_t *n_caps,
                            char *why, size_t why_size) {
    sgl_attn_caps *v = NULL;
    uint32_t n = 0;
    *caps = NULL;
    *n_caps = 0;
    for (uint32_t i = 0; i < MAX_DEVICES; i++) {
        sgl_attn_caps c;
        memset(&c, 0, sizeof c);
        c.struct_size = sizeof c;
        c.arch_major = c.arch_minor = -1;
        c.arch_min_major = c.arch_min_minor = c.arch_max_major = c.arch_max_minor = -1;
        int rc = d->probe(i, &c);
        c.struct_size = sizeof c; /* ours, whatever the plugin wrote there */
        if (rc == SGL_ATTN_E_NOT_FOUND && i > 0) break;
        if (rc != SGL_ATTN_OK) {
            if (i == 0) {
                str_printf(why, why_size, "probe of device 0 failed with %s (%d); index 0 must always answer",
                           sgl_attn_status_name(rc), rc);
                free(v);
                return SGL_ATTN_E_INVALID;
            }
            /* A later device that fails is listed as unavailable, not fatal. */
            memset(&c, 0, sizeof c);
            c.struct_size = sizeof c;
            str_printf(c.reason, sizeof c.reason, "probe failed with %s (%d)", sgl_attn_status_name(rc), rc);
        }
        sgl_attn_caps *nv = realloc(v, (n + 1) * sizeof *v);
        if (!nv) {
            free(v);
            str_copy(why, why_size, "out of memory while probing");
            return SGL_ATTN_E_NOMEM;
        }
        v = nv;
        v[n++] = c;
    }
    *caps = v;
    *n_caps = n;
    return SGL_ATTN_OK;
}

/* What the child sends before the caps array. */
typedef struct probe_reply {
    uint32_t magic;
    int32_t rc;
    uint32_t n_caps;
    uint32_t caps_size;
    char why[256];
} probe_reply;

#define REPLY_MAGIC 0x53474c50u /* "SGLP" */

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

static void child_main(const sgl_attn_plugin *d, int fd) {
    /* Crashes must end the child with their signal, whatever handlers the
     * parent (or a sanitizer) installed, so the parent can name it. */
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
    probe_reply r;
    memset(&r, 0, sizeof r);
    r.magic = REPLY_MAGIC;
    r.caps_size = sizeof(sgl_attn_caps);
    sgl_attn_caps *caps = NULL;
    r.rc = probe_in_process(d, &caps, &r.n_caps, r.why, sizeof r.why);
    int ok = write_all(fd, &r, sizeof r) == 0 &&
             (r.n_caps == 0 || write_all(fd, caps, (size_t)r.n_caps * sizeof *caps) == 0);
    free(caps);
    _exit(ok ? 0 : 111); /* no atexit handlers, no flushing the parent's stdio */
}

static long ms_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* Read everything the child writes until EOF or the deadline.  Returns the
 * byte count, or -1 on timeout. */
static ssize_t read_until_eof(int fd, char **buf, int timeout_ms) {
    size_t n = 0, cap = 0;
    *buf = NULL;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        long left = timeout_ms - ms_since(&t0);
        if (left <= 0) return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) return -1;
        if (pr < 0) return (ssize_t)n;
        if (n == cap) {
            /* One byte more than any honest reply, so an overlong one shows. */
            const size_t limit = sizeof(probe_reply) + (size_t)MAX_DEVICES * sizeof(sgl_attn_caps) + 1;
            if (cap >= limit) return (ssize_t)n;
            cap = cap ? cap * 2 : 4096;
            if (cap > limit) cap = limit;
            char *nb = realloc(*buf, cap);
            if (!nb) return (ssize_t)n;
            *buf = nb;
        }
        ssize_t r = read(fd, *buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return (ssize_t)n;
        n += (size_t)r;
    }
}

static int probe_isolated(const sgl_attn_plugin *d, int timeout_ms, sgl_attn_caps **caps,
                          uint32_t *n_caps, char *why, size_t why_size) {
    *caps = NULL;
    *n_caps = 0;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        str_printf(why, why_size, "cannot isolate the probe: pipe: %s", strerror(errno));
        return SGL_ATTN_E_INTERNAL;
    }
    pid_t pid = fork();
    if (pid < 0) {
        str_printf(why, why_size, "cannot isolate the probe: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return SGL_ATTN_E_INTERNAL;
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(d, fds[1]);
    }
    close(fds[1]);
    char *buf = NULL;
    ssize_t got = read_until_eof(fds[0], &buf, timeout_ms);
    close(fds[0]);
    int status = 0;
    if (got < 0) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        free(buf);
        str_printf(why, why_size, "probe timed out after %d ms", timeout_ms);
        return SGL_ATTN_E_DEVICE;
    }
    /* EOF: the child is exiting or has died; reap it. */
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    int rc = SGL_ATTN_E_DEVICE;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        str_printf(why, why_size, "probe crashed (signal %d, %s)", sig, strsignal(sig));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        str_printf(why, why_size, "probe process exited with status %d", WEXITSTATUS(status));
    } else {
        probe_reply r;
        if ((size_t)got < sizeof r) {
            str_printf(why, why_size, "probe process sent %zd bytes, expected at least %zu", got, sizeof r);
        } else {
            memcpy(&r, buf, sizeof r);
            r.why[sizeof r.why - 1] = 0;
            size_t want = sizeof r + (size_t)r.n_caps * sizeof(sgl_attn_caps);
            if (r.magic != REPLY_MAGIC || r.caps_size != sizeof(sgl_attn_caps) || r.n_caps > MAX_DEVICES ||
                (size_t)got != want) {
                str_printf(why, why_size, "probe process sent a malformed reply (%zd bytes)", got);
            } else if (r.rc != SGL_ATTN_OK) {
                str_copy(why, why_size, r.why);
                rc = r.rc;
            } else if (r.n_caps && !(*caps = malloc((size_t)r.n_caps * sizeof **caps))) {
                str_copy(why, why_size, "out of memory while probing");
                rc = SGL_ATTN_E_NOMEM;
            } else {
                if (r.n_caps) memcpy(*caps, buf + sizeof r, (size_t)r.n_caps * sizeof **caps);
                *n_caps = r.n_caps;
                rc = SGL_ATTN_OK;
            }
        }
    }
    free(buf);
    return rc;
}

int probe_plugin(const sgl_attn_plugin *d, int isolate, int timeout_ms, sgl_attn_caps **caps,
                 uint32_t *n_caps, char *why, size_t why_size) {
    if (timeout_ms <= 0) timeout_ms = 5000;
    int rc = isolate ? probe_isolated(d, timeout_ms, caps, n_caps, why, why_size)
                     : probe_in_process(d, caps, n_caps, why, why_size);
    if (rc != SGL_ATTN_OK) return rc;
    if (*n_caps == 0) {
        str_copy(why, why_size, "probe reported no device at all (index 0 must always answer)");
        free(*caps);
        *caps = NULL;
        return SGL_ATTN_E_INVALID;
    }
    for (uint32_t i = 0; i < *n_caps; i++) {
        char w[200];
        if (plugin_caps_check(&(*caps)[i], w, sizeof w) != 0) {
            str_printf(why, why_size, "device %u: %s", i, w);
            free(*caps);
            *caps = NULL;
            *n_caps = 0;
            return SGL_ATTN_E_INVALID;
        }
    }
    return SGL_ATTN_OK;
}
