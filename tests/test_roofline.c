/* test_roofline.c — the bound (roofline.h): which memory level holds a
 * planted working set, the bound's arithmetic against a task's FLOPs and
 * bytes, the cache levels read from sysfs, and the guard that keeps a
 * task's share of its bound at most 100 %. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtune/roofline.h"
#include "dtune/runstate.h"

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

/* A planted machine: 48 KiB L1, 1.25 MiB L2, 36 MiB L3, DRAM; streams that
 * differ per level so a wrong pick shows. */
static dt_roofline planted(void)
{
    dt_roofline r = { .peak_gflops = 187.5, .threads = 1, .nlevels = 4 };
    snprintf(r.probe, sizeof r.probe, "fma 512-bit x16 chains");
    const struct { const char *name; double cap, read, rw; } l[] = {
        { "L1", 48 * KIB, 301.25, 288.5 }, { "L2", 1.25 * MIB, 143.75, 151.5 },
        { "L3", 36 * MIB, 71.25, 60.5 }, { "DRAM", INFINITY, 23.75, 19.5 },
    };
    for (int i = 0; i < 4; i++) {
        snprintf(r.levels[i].name, sizeof r.levels[i].name, "%s", l[i].name);
        r.levels[i].capacity_bytes = l[i].cap;
        r.levels[i].read_gbs = l[i].read;
        r.levels[i].rw_gbs = l[i].rw;
    }
    return r;
}

static void test_level_for_planted_sets(void **state)
{
    (void)state;
    dt_roofline r = planted();
    const struct { double bytes; const char *level; } cases[] = {
        { 1000, "L1" }, { 48 * KIB, "L1" }, { 48 * KIB + 4, "L2" }, { 1.25 * MIB, "L2" },
        { 1.25 * MIB + 4, "L3" }, { 35.9 * MIB, "L3" }, { 36 * MIB + 4, "DRAM" }, { 3e9, "DRAM" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(dt_roofline_level_for(&r, cases[i].bytes)->name, cases[i].level);
    r.nlevels = 0;
    assert_null(dt_roofline_level_for(&r, 1000));
}

/* A conv2d 1x13x17x19 k3x3 s1 p1 -> 24: FLOPs and bytes by hand, then the
 * bound: its 57.7 KiB working set sits in L2, where the faster stream is the
 * read+write one. */
static void test_bound_arithmetic(void **state)
{
    (void)state;
    dt_task t = { .name = "c", .kind = DT_OP_CONV2D, .count = 1,
                  .conv = { .n = 1, .c_in = 13, .h = 17, .w = 19, .c_out = 24, .kh = 3, .kw = 3,
                            .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1 } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    double out = 24.0 * 17 * 19, flops = 2 * out * 13 * 9;
    double bytes = 4 * (13.0 * 17 * 19 + 24.0 * 13 * 9 + out);
    assert_true(fabs(t.flops - flops) <= 1e-12 * flops);
    assert_true(fabs(t.bytes - bytes) <= 1e-12 * bytes);
    assert_true(fabs(t.write_bytes - 4 * out) <= 1e-12 * bytes);
    /* the bound counts the taps inside the input: 17 x 3 - 2 rows, 19 x 3 - 2 columns */
    double useful = 2 * 24.0 * 13 * (17 * 3 - 2) * (19 * 3 - 2);
    assert_true(fabs(t.useful_flops - useful) <= 1e-12 * useful);

    dt_roofline r = planted();
    dt_task_bound b;
    dt_roofline_task_bound(&r, &t, &b);
    assert_string_equal(b.level, "L2");
    assert_true(fabs(b.bandwidth_gbs - 151.5) < 1e-12);
    assert_true(fabs(b.compute_s - useful / 187.5e9) <= 1e-12 * b.compute_s);
    assert_true(fabs(b.memory_s - bytes / 151.5e9) <= 1e-12 * b.memory_s);
    assert_true(b.seconds == fmax(b.compute_s, b.memory_s));
    assert_true(b.seconds == b.compute_s); /* 3x3 over 13 channels: compute-bound */

    /* memory-bound: 2 FLOPs per 12 bytes moved, 96 MB in DRAM */
    dt_roofline_bound(&r, 16e6, 96e6, 32e6, &b);
    assert_string_equal(b.level, "DRAM");
    assert_true(fabs(b.seconds - 96e6 / 23.75e9) <= 1e-12 * b.seconds);

    /* a dense layer's 1 MiB of weights in L2, where the read+write stream
     * (151.5) is the faster: reading them takes the read stream's time
     * (143.75), which a bound counting every byte at 151.5 would miss */
    dt_task fc = { .name = "fc", .kind = DT_OP_DENSE, .count = 1, .mm = { 1, 1, 1024, 256 } };
    assert_int_equal(dt_task_finish(&fc, NULL), 0);
    assert_true(fabs(fc.write_bytes - 4 * 1024.0) < 1e-9);
    dt_roofline_task_bound(&r, &fc, &b);
    assert_string_equal(b.level, "L2");
    double reads = fc.bytes - fc.write_bytes;
    assert_true(reads / 143.75e9 > fc.bytes / 151.5e9);
    assert_true(fabs(b.memory_s - reads / 143.75e9) <= 1e-12 * b.memory_s);
    assert_true(fabs(b.bandwidth_gbs - fc.bytes / b.memory_s / 1e9) <= 1e-9);
    assert_true(b.seconds == b.memory_s);
    /* as much written as read: all bytes at the faster stream rule */
    dt_roofline_bound(&r, 0, 1e6, 5e5, &b);
    assert_true(fabs(b.memory_s - 1e6 / 151.5e9) <= 1e-12 * b.memory_s);

    /* no bandwidth known: FLOPs at the peak; no peak: unknown */
    r.nlevels = 0;
    dt_roofline_bound(&r, 16e6, 96e6, 32e6, &b);
    assert_string_equal(b.level, "");
    assert_true(fabs(b.seconds - 16e6 / 187.5e9) <= 1e-12 * b.seconds);
    r.peak_gflops = 0;
    dt_roofline_bound(&r, 16e6, 96e6, 32e6, &b);
    assert_true(b.seconds == 0);
}

/* Useful FLOPs against a count of every (output, tap) pair inside the input,
 * over strides, paddings, dilations and depthwise; a task without padding
 * and a dense task have useful = all FLOPs. */
static void test_useful_flops(void **state)
{
    (void)state;
    const struct { dt_op_kind kind; int c, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw; } cases[] = {
        { DT_OP_CONV2D, 3, 224, 224, 8, 7, 7, 2, 2, 3, 3, 1, 1 },
        { DT_OP_CONV2D, 4, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1 },
        { DT_OP_CONV2D, 2, 13, 11, 3, 3, 5, 2, 3, 2, 4, 2, 1 },
        { DT_OP_DEPTHWISE_CONV2D, 6, 15, 15, 6, 3, 3, 2, 2, 1, 1, 1, 1 },
        { DT_OP_CONV2D, 5, 9, 9, 2, 3, 3, 1, 1, 0, 0, 1, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_task t = { .name = "c", .kind = cases[i].kind, .count = 1,
                      .conv = { .n = 1, .c_in = cases[i].c, .h = cases[i].h, .w = cases[i].w,
                                .c_out = cases[i].co, .kh = cases[i].kh, .kw = cases[i].kw,
                                .sh = cases[i].sh, .sw = cases[i].sw, .ph = cases[i].ph,
                                .pw = cases[i].pw, .dh = cases[i].dh, .dw = cases[i].dw } };
        assert_int_equal(dt_task_finish(&t, NULL), 0);
        const dt_conv_shape *c = &t.conv;
        double inside = 0;
        for (int oh = 0; oh < c->oh; oh++)
            for (int ow = 0; ow < c->ow; ow++)
                for (int y = 0; y < c->kh; y++)
                    for (int x = 0; x < c->kw; x++) {
                        int ih = oh * c->sh - c->ph + y * c->dh, iw = ow * c->sw - c->pw + x * c->dw;
                        inside += ih >= 0 && ih < c->h && iw >= 0 && iw < c->w;
                    }
        double per_tap = 2.0 * c->c_out * (t.kind == DT_OP_CONV2D ? c->c_in : 1);
        assert_true(fabs(t.useful_flops - per_tap * inside) <= 1e-9 * t.useful_flops);
        assert_true(t.useful_flops <= t.flops);
        if (c->ph == 0 && c->pw == 0)
            assert_true(t.useful_flops == t.flops);
        else
            assert_true(t.useful_flops < t.flops);
    }
    dt_task d = { .name = "d", .kind = DT_OP_DENSE, .count = 1, .mm = { 1, 1, 1000, 512 } };
    assert_int_equal(dt_task_finish(&d, NULL), 0);
    assert_true(d.useful_flops == d.flops);
}

/* This machine's levels: smallest first, DRAM last and holding any size,
 * each stream's working set below the level's capacity. */
static void test_cpu_levels(void **state)
{
    (void)state;
    dt_mem_level one[DT_ROOFLINE_MAX_LEVELS], two[DT_ROOFLINE_MAX_LEVELS];
    int n = dt_roofline_cpu_levels(1, one, DT_ROOFLINE_MAX_LEVELS);
    assert_int_equal(dt_roofline_cpu_levels(2, two, DT_ROOFLINE_MAX_LEVELS), n);
    assert_true(n >= 1 && n <= DT_ROOFLINE_MAX_LEVELS);
    assert_string_equal(one[n - 1].name, "DRAM");
    assert_true(isinf(one[n - 1].capacity_bytes));
    for (int i = 0; i + 1 < n; i++) {
        assert_true(one[i].capacity_bytes < one[i + 1].capacity_bytes);
        assert_true(one[i].probe_bytes > 0 && one[i].probe_bytes < one[i].capacity_bytes);
        if (strcmp(one[i].name, "L1") == 0 || strcmp(one[i].name, "L2") == 0)
            assert_true(two[i].capacity_bytes == 2 * one[i].capacity_bytes);
    }
    assert_true(one[n - 1].probe_bytes >= 64 * MIB);
}

/* A task's peak in the tuner's GFLOPS: the bare peak for a dense task and
 * an unpadded convolution, scaled by flops / useful_flops for a padded one
 * (a 3x3 on a 7x7 plane: 441 / 361 of it), the bare peak where no tap reads
 * the input, 0 without a peak. */
static void test_task_peak_gflops(void **state)
{
    (void)state;
    dt_roofline r = { .peak_gflops = 117.5 };
    dt_task d = { .name = "d", .kind = DT_OP_DENSE, .count = 1, .mm = { 1, 1, 1000, 512 } };
    assert_int_equal(dt_task_finish(&d, NULL), 0);
    assert_true(dt_roofline_task_peak_gflops(&r, &d) == 117.5);
    dt_task c = { .name = "c", .kind = DT_OP_CONV2D, .count = 1,
                  .conv = { .n = 1, .c_in = 8, .h = 7, .w = 7, .c_out = 8, .kh = 3, .kw = 3,
                            .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1 } };
    assert_int_equal(dt_task_finish(&c, NULL), 0);
    assert_true(fabs(dt_roofline_task_peak_gflops(&r, &c) - 117.5 * 441.0 / 361.0) < 1e-9);
    c.conv.ph = c.conv.pw = 0;
    assert_int_equal(dt_task_finish(&c, NULL), 0);
    assert_true(dt_roofline_task_peak_gflops(&r, &c) == 117.5);
    c.useful_flops = 0;
    assert_true(dt_roofline_task_peak_gflops(&r, &c) == 117.5);
    r.peak_gflops = 0;
    assert_true(dt_roofline_task_peak_gflops(&r, &c) == 0);
}

/* A kernel faster than the bound (the probes read low) moves the bound to
 * its latency and the peak to its rate of useful FLOPs: the share stays at
 * most 1. A padded task's kernel that skips the taps on padding reads more
 * GFLOPS (of all its FLOPs) than the peak without beating it. */
static void test_share_never_over_one(void **state)
{
    (void)state;
    dt_task_state t = { .gflop = 0.025, .useful_gflop = 0.02, .best_gflops = 0,
                        .peak_gflops = 160, .bound_ms = 0.125 };
    assert_true(dt_task_state_bound_share(&t) == 0); /* untuned */
    assert_false(dt_task_state_hold_bound(&t));
    t.best_latency_ms = 0.140625;
    t.best_gflops = t.gflop / (t.best_latency_ms * 1e-3);
    assert_true(t.best_gflops > t.peak_gflops);
    assert_false(dt_task_state_hold_bound(&t));
    assert_true(t.peak_gflops == 160 && !t.peak_from_kernel && !t.bound_from_kernel);
    assert_true(fabs(dt_task_state_bound_share(&t) - 0.125 / 0.140625) < 1e-12);
    t.best_latency_ms = 0.1171875;
    t.best_gflops = t.gflop / (t.best_latency_ms * 1e-3);
    assert_true(dt_task_state_hold_bound(&t));
    assert_true(t.bound_from_kernel && t.peak_from_kernel);
    assert_true(t.bound_ms == t.best_latency_ms);
    assert_true(fabs(t.peak_gflops - t.useful_gflop / (t.best_latency_ms * 1e-3)) < 1e-9);
    assert_true(dt_task_state_bound_share(&t) == 1);
    t.bound_ms = 0.5; /* even unguarded, the share is capped */
    assert_true(dt_task_state_bound_share(&t) <= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_for_planted_sets),
        cmocka_unit_test(test_bound_arithmetic),
        cmocka_unit_test(test_useful_flops),
        cmocka_unit_test(test_cpu_levels),
        cmocka_unit_test(test_task_peak_gflops),
        cmocka_unit_test(test_share_never_over_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
