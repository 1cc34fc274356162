/* rng.c - xoshiro256** seeded by splitmix64: reproducible inputs from one
 * 64-bit seed on every machine. */
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void hrng_seed(hrng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t hrng_next(hrng *r) {
    uint64_t *s = r->s;
    const uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double hrng_uniform(hrng *r) { return (double)(hrng_next(r) >> 11) * 0x1p-53; }

double hrng_normal(hrng *r) {
    double u1 = 1.0 - hrng_uniform(r); /* (0, 1]: log is finite */
    double u2 = hrng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int64_t hrng_range(hrng *r, int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(span ? hrng_next(r) % span : hrng_next(r));
}

void hrng_shuffle(hrng *r, int64_t *v, size_t n) {
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(hrng_next(r) % i);
        int64_t t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

uint64_t hrng_fresh_seed(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    return splitmix(&x);
}

uint64_t hrng_case_seed(uint64_t run_seed, const char *case_text) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the case text */
    for (const unsigned char *p = (const unsigned char *)case_text; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
    uint64_t x = run_seed ^ h;
    return splitmix(&x);
}
