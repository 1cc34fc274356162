/* load.c - load a plugin file through libltdl, with a precise reason when it
 * fails.
 *
 * Global state: the library's one once-init lives here.  host_once_init()
 * runs lt_dlinit() and initialises `ltdl_mutex`, which serialises every
 * libltdl call because libltdl is not thread-safe (its handle list and error
 * string are process globals).  Nothing else in the host is mutable and
 * global.  lt_dlexit() is never called: other code in the process may share
 * libltdl's reference count, and the cost is one small allocation.
 *
 * libltdl reports most failures as "file not found", so the reason comes from
 * our own checks: the ELF header first (empty, text, truncated, wrong class or
 * machine), then dlopen(RTLD_NOW | RTLD_LOCAL) whose dlerror() names the
 * missing dependency or the undefined symbol at load time rather than at the
 * first call.  Only then does libltdl open the handle we keep (the object is
 * already mapped and bound, so that is a reference count bump). */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <ltdl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_internal.h"

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ltdl_mutex;
static int ltdl_init_errors; /* written once inside host_once, read after */

static void once_body(void) {
    pthread_mutex_init(&ltdl_mutex, NULL);
    ltdl_init_errors = lt_dlinit();
}

void host_once_init(void) { pthread_once(&host_once, once_body); }
void host_ltdl_lock(void) { pthread_mutex_lock(&ltdl_mutex); }
void host_ltdl_unlock(void) { pthread_mutex_unlock(&ltdl_mutex); }

/* ------------------------------------------------------------ ELF checks */

#if defined(__x86_64__)
#define HOST_EM EM_X86_64
#elif defined(__aarch64__)
#define HOST_EM EM_AARCH64
#elif defined(__i386__)
#define HOST_EM EM_386
#elif defined(__powerpc64__)
#define HOST_EM EM_PPC64
#elif defined(__riscv)
#define HOST_EM EM_RISCV
#elif defined(__s390x__)
#define HOST_EM EM_S390
#endif

static const char *machine_name(unsigned em) {
    switch (em) {
    case EM_386: return "Intel 80386";
    case EM_X86_64: return "x86-64";
    case EM_ARM: return "ARM";
    case EM_AARCH64: return "ARM aarch64";
    case EM_PPC: return "PowerPC";
    case EM_PPC64: return "PowerPC64";
    case EM_RISCV: return "RISC-V";
    case EM_S390: return "IBM S/390";
    case EM_MIPS: return "MIPS";
    case EM_CUDA: return "NVIDIA CUDA";
#ifdef EM_AMDGPU
    case EM_AMDGPU: return "AMD GPU";
#endif
    default: return NULL;
    }
}

static void describe_machine(unsigned em, char *buf, size_t size) {
    const char *n = machine_name(em);
    if (n)
        str_copy(buf, size, n);
    else
        str_printf(buf, size, "machine %u", em);
}

static int read_at(int fd, void *buf, size_t n, off_t off) {
    ssize_t r = pread(fd, buf, n, off);
    return r == (ssize_t)n ? 0 : -1;
}

/* The first bytes, shown when the file is not ELF: text as text, else hex. */
static void describe_non_elf(const unsigned char *b, size_t n, char *why, size_t size) {
    size_t text = 0;
    while (text < n && ((b[text] >= 0x20 && b[text] < 0x7f) || b[text] == '\n' || b[text] == '\t' ||
                        b[text] == '\r'))
        text++;
    if (text == n) {
        char shown[32];
        size_t k = 0;
        for (size_t i = 0; i < n && k + 1 < sizeof shown; i++)
            shown[k++] = (b[i] == '\n' || b[i] == '\t' || b[i] == '\r') ? ' ' : (char)b[i];
        shown[k] = 0;
        str_printf(why, size, "not a shared object: a text file (starts \"%s\")", shown);
    } else {
        str_printf(why, size, "not a shared object: not an ELF file (first bytes %02x %02x %02x %02x)",
                   b[0], n > 1 ? b[1] : 0, n > 2 ? b[2] : 0, n > 3 ? b[3] : 0);
    }
}

/* 0 when `path` looks like a shared object this process can map. */
int module_check_elf(const char *path, char *why, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        str_printf(why, size, "cannot open: %s", strerror(errno));
        return -1;
    }
    int rc = -1;
    struct stat st;
    unsigned char id[64];
    if (fstat(fd, &st) != 0) {
        str_printf(why, size, "cannot stat: %s", strerror(errno));
        goto out;
    }
    size_t fsize = (size_t)st.st_size;
    if (fsize == 0) {
        str_copy(why, size, "not a shared object: empty file (0 bytes)");
        goto out;
    }
    size_t head = fsize < sizeof id ? fsize : sizeof id;
    if (read_at(fd, id, head, 0) != 0) {
        str_printf(why, size, "cannot read: %s", strerror(errno));
        goto out;
    }
    if (head < SELFMAG || memcmp(id, ELFMAG, SELFMAG) != 0) {
        describe_non_elf(id, head < 24 ? head : 24, why, size);
        goto out;
    }
    if (head < EI_NIDENT) {
        str_printf(why, size, "truncated ELF (%zu bytes, the identification alone is %d)", fsize,
                   EI_NIDENT);
        goto out;
    }
    const int host_class = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
    if (id[EI_CLASS] != host_class) {
        if (id[EI_CLASS] == ELFCLASS32 || id[EI_CLASS] == ELFCLASS64)
            str_printf(why, size, "ELF class %s-bit, this host is %s-bit",
                       id[EI_CLASS] == ELFCLASS32 ? "32" : "64", host_class == ELFCLASS32 ? "32" : "64");
        else
            str_printf(why, size, "bad ELF class %u", id[EI_CLASS]);
        goto out;
    }
    const int host_data = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
    if (id[EI_DATA] != host_data) {
        str_printf(why, size, "ELF byte order %s, this host is %s",
                   id[EI_DATA] == ELFDATA2LSB ? "little-endian" : "big-endian",
                   host_data == ELFDATA2LSB ? "little-endian" : "big-endian");
        goto out;
    }
    ElfW(Ehdr) eh;
    if (fsize < sizeof eh) {
        str_printf(why, size, "truncated ELF (%zu bytes, the ELF header alone is %zu)", fsize,
                   sizeof eh);
        goto out;
    }
    memcpy(&eh, id, sizeof eh < head ? sizeof eh : head);
#ifdef HOST_EM
    if (eh.e_machine != HOST_EM) {
        char theirs[48], ours[48];
        describe_machine(eh.e_machine, theirs, sizeof theirs);
        describe_machine(HOST_EM, ours, sizeof ours);
        str_printf(why, size, "ELF for another machine (%s), this host is %s", theirs, ours);
        goto out;
    }
#endif
    if (eh.e_type != ET_DYN) {
        str_printf(why, size, "not a shared object: ELF type %s",
                   eh.e_type == ET_EXEC ? "EXEC (an executable)"
                   : eh.e_type == ET_REL ? "REL (an object file, not linked)"
                   : eh.e_type == ET_CORE ? "CORE (a core dump)" : "unknown");
        goto out;
    }
    /* Every header table and loadable segment must lie inside the file. */
    unsigned long long need = 0;
    if (eh.e_phnum && eh.e_phentsize == sizeof(ElfW(Phdr))) {
        need = (unsigned long long)eh.e_phoff + (unsigned long long)eh.e_phnum * eh.e_phentsize;
        if (need <= fsize) {
            for (unsigned i = 0; i < eh.e_phnum; i++) {
                ElfW(Phdr) ph;
                if (read_at(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (ElfW(Off))i * sizeof ph)) != 0)
                    break;
                unsigned long long end = (unsigned long long)ph.p_offset + ph.p_filesz;
                if (ph.p_type == PT_LOAD && end > need) need = end;
            }
        }
    }
    if (eh.e_shoff) {
        unsigned long long sh = (unsigned long long)eh.e_shoff + (unsigned long long)eh.e_shnum * eh.e_shentsize;
        if (sh > need) need = sh;
    }
    if (need > fsize) {
        str_printf(why, size, "truncated ELF (%zu bytes, its headers need %llu)", fsize, need);
        goto out;
    }
    rc = 0;
out:
    close(fd);
    return rc;
}

/* dlerror() text, turned into what the user needs to act on. */
void module_describe_dlerror(const char *path, const char *err, char *why, size_t size) {
    size_t plen = strlen(path);
    const char *msg = err;
    if (!strncmp(err, path, plen) && err[plen] == ':' && err[plen + 1] == ' ') msg = err + plen + 2;
    const char *cant = strstr(msg, ": cannot open shared object file");
    const char *undef = strstr(msg, "undefined symbol: ");
    if (cant) {
        str_printf(why, size, "missing dependency %.*s (dlopen: %s)", (int)(cant - msg), msg, msg);
    } else if (undef) {
        const char *sym = undef + strlen("undefined symbol: ");
        size_t n = strcspn(sym, " ,(");
        str_printf(why, size, "undefined symbol %.*s (dlopen: %s)", (int)n, sym, msg);
    } else {
        str_printf(why, size, "dlopen failed: %s", msg);
    }
}

int module_load(const char *path, loaded_module *m, char *why, size_t why_size) {
    memset(m, 0, sizeof *m);
    host_once_init();
    if (ltdl_init_errors) {
        str_printf(why, why_size, "libltdl failed to initialise (%d errors)", ltdl_init_errors);
        return SGL_ATTN_PLUGIN_LOAD_ERROR;
    }
    if (module_check_elf(path, why, why_size) != 0) return SGL_ATTN_PLUGIN_LOAD_ERROR;

    /* RTLD_NOW: an undefined symbol fails here, with its name, not at the
     * first call into the plugin.  dlerror is thread-local in glibc. */
    int threads0 = host_thread_count();
    void *probe = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!probe) {
        const char *e = dlerror();
        module_describe_dlerror(path, e ? e : "unknown error", why, why_size);
        return SGL_ATTN_PLUGIN_LOAD_ERROR;
    }
    /* Constructors that started threads: the code those threads run must
     * stay mapped whatever becomes of the file, so it is never unloaded. */
    if (threads0 > 0 && host_thread_count() > threads0) {
        void *pin = dlopen(path, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        if (pin) dlclose(pin);
        m->pinned = 1;
    }

    int rc = SGL_ATTN_PLUGIN_USABLE;
    host_ltdl_lock();
    lt_dladvise adv;
    lt_dlhandle h = NULL;
    if (lt_dladvise_init(&adv) == 0) {
        lt_dladvise_local(&adv);
        h = lt_dlopenadvise(path, adv);
        lt_dladvise_destroy(&adv);
    }
    if (!h) {
        const char *e = lt_dlerror();
        str_printf(why, why_size, "libltdl could not open it: %s", e ? e : "unknown error");
        rc = SGL_ATTN_PLUGIN_LOAD_ERROR;
    } else {
        void *sym = lt_dlsym(h, SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
        if (!sym) {
            str_copy(why, why_size, "no entry point " SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
            lt_dlclose(h);
            rc = SGL_ATTN_PLUGIN_LOAD_ERROR;
        } else {
            m->handle = h;
            memcpy(&m->entry, &sym, sizeof m->entry); /* object -> function pointer, POSIX-style */
        }
    }
    host_ltdl_unlock();
    dlclose(probe); /* libltdl's reference keeps the object mapped */
    return rc;
}

void module_unload(loaded_module *m, int never_unload) {
    if (!m->handle) return;
    if (!never_unload && !m->pinned) {
        host_ltdl_lock();
        lt_dlclose((lt_dlhandle)m->handle);
        host_ltdl_unlock();
    }
    m->handle = NULL;
    m->entry = NULL;
    m->pinned = 0;
}

int host_thread_count(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}
