/* test_bench_timing.c - attnctl bench's timing loop (attnctl/harness/timing.c)
 * on a simulated device: a call queues work that runs for kernel_s on the
 * device after the calls before it, the host spends launch_s per call, and
 * the launch queue holds `depth` calls (a call past it waits on the host for
 * the oldest to finish), as CUDA's does.  Everything is counted on the
 * simulation's clock, so the bounds hold on any machine.
 *
 * The case that matters: a call of a quarter second (a 128k-token prefill).
 * A warm-up that queues calls until the host's clock passes its target
 * without synchronising fills the whole queue (hundreds of calls, minutes)
 * before its first synchronize; the loop may queue at most two calls of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"

#define SIM_DEPTH_MAX 4096

typedef struct sim {
    double launch_s, kernel_s;
    int depth;
    double host, dev_end;
    double done[SIM_DEPTH_MAX]; /* end times of the queued calls, oldest at head */
    int head, count;
    long calls, syncs, fail_at;
    int max_queued; /* the most calls in the queue at once */
} sim;

static void sim_init(sim *s, double launch_s, double kernel_s, int depth) {
    memset(s, 0, sizeof *s);
    s->launch_s = launch_s;
    s->kernel_s = kernel_s;
    s->depth = depth;
    s->fail_at = -1;
}

static void retire(sim *s) {
    while (s->count && s->done[s->head] <= s->host) {
        s->head = (s->head + 1) % SIM_DEPTH_MAX;
        s->count--;
    }
}

static int sim_call(void *state, char *err, size_t err_size) {
    sim *s = state;
    if (s->calls == s->fail_at) {
        snprintf(err, err_size, "forward returned E_DEVICE: simulated");
        return -1;
    }
    s->calls++;
    s->host += s->launch_s;
    retire(s);
    if (s->count == s->depth) { /* the queue is full: wait for its oldest call */
        s->host = s->done[s->head];
        retire(s);
    }
    const double start = s->dev_end > s->host ? s->dev_end : s->host;
    s->dev_end = start + s->kernel_s;
    s->done[(s->head + s->count) % SIM_DEPTH_MAX] = s->dev_end;
    s->count++;
    if (s->count > s->max_queued) s->max_queued = s->count;
    return 0;
}

static double sim_now(void *ctx) { return ((sim *)ctx)->host; }

static int sim_sync(void *ctx, char *err, size_t err_size) {
    (void)err, (void)err_size;
    sim *s = ctx;
    s->syncs++;
    if (s->dev_end > s->host) s->host = s->dev_end;
    retire(s);
    return 0;
}

static void run(sim *s, double min_time, hbench_stats *st) {
    hbench b = {.state = s, .call = sim_call};
    hbench_clock k = {sim_now, sim_sync, s};
    char err[256] = "";
    assert_int_equal(hbench_time_on(&b, &k, min_time, st, err, sizeof err), 0);
    assert_int_equal(st->calls + st->warmup_calls, s->calls);
}

/* A 128k-token prefill: 0.26 s a call, two launches a call into a queue of
 * 1024.  Three warm-up calls (1 + 2), five timed batches of one call. */
static void test_long_call_queues_two_at_most(void **state) {
    (void)state;
    static sim s;
    hbench_stats st;
    sim_init(&s, 10e-6, 0.26, 512);
    run(&s, 0.3, &st);
    assert_int_equal(st.warmup_calls, 3);
    assert_int_equal(st.calls_per_batch, 1);
    assert_int_equal(st.batches, 5);
    assert_int_equal(s.calls, 8);
    assert_true(s.max_queued <= 2);
    assert_true(s.host <= 8 * 0.26 + 1e-3); /* the whole bench of the case: 2.1 s, not minutes */
    assert_true(st.median_s > 0.26 * 0.999 && st.median_s < 0.26 * 1.001);
}

/* Longer still (a slow kernel): the same eight calls. */
static void test_slow_call_is_bounded(void **state) {
    (void)state;
    static sim s;
    hbench_stats st;
    sim_init(&s, 10e-6, 3.0, 512);
    run(&s, 1.0, &st);
    assert_int_equal(s.calls, 8);
    assert_true(s.max_queued <= 2);
    assert_true(s.host <= 8 * 3.0 + 1e-3);
}

/* A decode step of 20 us (device-bound: the host queues a call in 5 us):
 * the calls stay pipelined within a batch, the time stays near the
 * targets, and the median is the device's time per call. */
static void test_short_call_pipelines(void **state) {
    (void)state;
    static sim s;
    hbench_stats st;
    sim_init(&s, 5e-6, 20e-6, 512);
    run(&s, 0.3, &st);
    assert_true(st.calls_per_batch >= 1000); /* min_time / 10 / 20 us */
    assert_true(st.warmup_calls >= 10000);   /* 0.2 s of warm-up */
    assert_true(s.host < 2 * 0.2 + 0.3 + 2 * 0.03 + 0.01);
    assert_true(st.median_s > 20e-6 * 0.99 && st.median_s < 20e-6 * 1.01);
    assert_true(s.max_queued == 512); /* a batch fills the queue: pipelined */
}

/* Host-bound calls (1 us of device work, 5 us to queue): the host's time. */
static void test_host_bound_call(void **state) {
    (void)state;
    static sim s;
    hbench_stats st;
    sim_init(&s, 5e-6, 1e-6, 512);
    run(&s, 0.3, &st);
    assert_true(st.median_s > 5e-6 * 0.99 && st.median_s < 5e-6 * 1.01);
}

/* A call that fails stops the loop with its message, in the warm-up and in
 * the timed batches. */
static void test_failed_call(void **state) {
    (void)state;
    static sim s;
    hbench_stats st;
    for (long at = 0; at < 12; at += 5) {
        sim_init(&s, 10e-6, 0.26, 512);
        s.fail_at = at;
        hbench b = {.state = &s, .call = sim_call};
        hbench_clock k = {sim_now, sim_sync, &s};
        char err[256] = "";
        assert_int_equal(hbench_time_on(&b, &k, 0.3, &st, err, sizeof err), at < 8 ? -1 : 0);
        if (at < 8) assert_non_null(strstr(err, "simulated"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_call_queues_two_at_most),
        cmocka_unit_test(test_slow_call_is_bounded),
        cmocka_unit_test(test_short_call_pipelines),
        cmocka_unit_test(test_host_bound_call),
        cmocka_unit_test(test_failed_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
