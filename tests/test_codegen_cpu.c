/* test_codegen_cpu.c — generated CPU kernels: random configs of every op kind
 * compile and match the reference (checked by the runner), OpenMP kernels
 * too; plan checks agree with space validity; the knobs change the source
 * and the speed.
 *
 * Shapes are small and not round (odd sizes, stride 2, dilation, depthwise
 * multiplier 2, batch 2) so every tile loop and padding path is exercised;
 * the blocked form's transposing conversions are drawn on purpose.
 * The runner child is this binary (see main).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "cpu_backend.h"
#include "cpu_codegen.h"
#include "dtune/config.h"
#include "dtune/db.h"
#include "dtune/measure.h"
#include "cpu_runner.h"
#include "dtune/target.h"
#include "support/run_cmd.h"

/* Every vector width, so the spaces do not depend on the machine. */
static const dt_space_opts every_width = { .cpu_max_vec = 16 };

typedef struct fixture {
    char dir[64];
    dt_measure_params measure;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/dtune-test-codegen-XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    dt_config cfg;
    dt_config_defaults(&cfg);
    f->measure = cfg.measure;
    f->measure.max_repeats = 3;
    f->measure.min_batches = 1;
    f->measure.builders = 2;
    f->measure.check_output = true;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    dt_test_remove_tree(f->dir);
    free(f);
    return 0;
}

static dt_task conv(dt_op_kind kind, int n, int ci, int hw, int co, int k, int s, int p, int d)
{
    dt_task t = { .kind = kind, .count = 1,
                  .conv = { .n = n, .c_in = ci, .h = hw, .w = hw + 1, .c_out = co, .kh = k,
                            .kw = k, .sh = s, .sw = s, .ph = p, .pw = p, .dh = d, .dw = d } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    return t;
}

static dt_task matmul(dt_op_kind kind, int b, int m, int n, int k)
{
    dt_task t = { .kind = kind, .count = 1, .mm = { .b = b, .m = m, .n = n, .k = k } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    return t;
}

/* Measures `count` random valid configs of task that `want` accepts (drawn
 * until it does); all must be ok (checked against the reference). */
static void sampled_configs_ok(fixture *f, const dt_task *task, int count, unsigned long seed,
                               bool (*want)(const dt_space *, const dt_point *))
{
    dt_space space;
    assert_int_equal(dt_target_space_init_opts(&space, task, DT_TARGET_CPU, &every_width, NULL), 0);
    dt_point points[8];
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    for (int i = 0; i < count; i++) {
        int tries = 0;
        do
            dt_space_random(&space, rng, &points[i]);
        while (!(dt_space_valid(&space, &points[i]) && want(&space, &points[i])) &&
               ++tries < 100000);
        assert_true(dt_space_valid(&space, &points[i]) && want(&space, &points[i]));
    }
    gsl_rng_free(rng);
    dt_measurer *m;
    assert_int_equal(dt_measurer_new(&dt_cpu_backend, &f->measure, f->dir, 7, &m, NULL), 0);
    dt_measure_result res[8];
    assert_int_equal(dt_measurer_run(m, &space, points, count, res, NULL), 0);
    for (int i = 0; i < count; i++) {
        char knobs[512];
        dt_space_point_str(&space, &points[i], knobs, sizeof knobs);
        if (res[i].result != DT_RESULT_OK)
            print_error("%s: %s (%s)\n", knobs, dt_result_name(res[i].result), res[i].detail);
        assert_int_equal(res[i].result, DT_RESULT_OK);
        assert_true(res[i].gflops > 0);
    }
    dt_measurer_free(m);
    dt_space_free(&space);
}

static bool any_config(const dt_space *space, const dt_point *point)
{
    return true;
}

static void random_configs_ok(fixture *f, const dt_task *task, int count, unsigned long seed)
{
    sampled_configs_ok(f, task, count, seed, any_config);
}

static bool pixels_form(const dt_space *space, const dt_point *point)
{
    return dt_space_get(space, point, "form", 0, -1) == DT_CPU_FORM_PIXELS;
}

static void pixel_configs_ok(fixture *f, const dt_task *task, int count, unsigned long seed)
{
    sampled_configs_ok(f, task, count, seed, pixels_form);
}

static bool pixels_vectors(const dt_space *space, const dt_point *point)
{
    return pixels_form(space, point) && dt_space_get(space, point, "vec", 0, 1) > 1;
}

/* How often needle occurs in the source of one config of task drawn until
 * `want` accepts it. */
static int count_in_drawn(const dt_task *task, unsigned long seed,
                          bool (*want)(const dt_space *, const dt_point *), const char *needle)
{
    dt_space space;
    assert_int_equal(dt_target_space_init_opts(&space, task, DT_TARGET_CPU, &every_width, NULL), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    dt_point point;
    do
        dt_space_random(&space, rng, &point);
    while (!(dt_space_valid(&space, &point) && want(&space, &point)));
    gsl_rng_free(rng);
    dt_cpu_plan plan;
    dt_cpu_plan_from_point(&space, &point, 1, &plan);
    char *source;
    assert_int_equal(dt_cpu_codegen(&plan, &source, NULL), 0);
    int n = 0;
    for (const char *s = source; (s = strstr(s, needle)); s++)
        n++;
    free(source);
    dt_space_free(&space);
    return n;
}

/* The pixels form against the reference: 1x1 read in place and strided,
 * a 3-channel first layer, depthwise at stride 1 and 2, kernel 3 and 5,
 * multiplier 2, batch 2, dilation; widths whose last vector is partial;
 * stride-2 rows wide enough to be split into phases by vector shuffles. */
static void test_pixels_form(void **state)
{
    fixture *f = *state;
    dt_task t = conv(DT_OP_CONV2D, 1, 6, 12, 10, 1, 1, 0, 1);     /* 1x1 in place */
    pixel_configs_ok(f, &t, 6, 21);
    t = conv(DT_OP_CONV2D, 2, 5, 11, 12, 1, 2, 0, 1);            /* strided 1x1, batch 2 */
    pixel_configs_ok(f, &t, 5, 22);
    t = conv(DT_OP_CONV2D, 1, 3, 17, 8, 3, 2, 1, 1);             /* first layer, 3x3 s2 */
    pixel_configs_ok(f, &t, 5, 23);
    t = conv(DT_OP_CONV2D, 1, 3, 13, 16, 7, 2, 3, 1);            /* first layer, 7x7 s2 */
    pixel_configs_ok(f, &t, 4, 24);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 16, 10, 16, 3, 1, 1, 1);
    pixel_configs_ok(f, &t, 6, 25);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 12, 15, 12, 3, 2, 1, 1);
    pixel_configs_ok(f, &t, 6, 26);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 2, 8, 9, 16, 5, 2, 2, 1);   /* multiplier 2, kernel 5 */
    pixel_configs_ok(f, &t, 5, 27);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 4, 11, 4, 3, 1, 2, 2);   /* dilation 2 */
    pixel_configs_ok(f, &t, 4, 28);
    /* rows wide enough for the stride-2 rows' vector de-interleave: even
     * lanes in the loop, odd lanes for the vector that ends the row */
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 8, 39, 8, 3, 2, 1, 1);
    assert_int_equal(count_in_drawn(&t, 31, pixels_vectors, "SHUF(LD(s), LD(s + VEC)"), 2);
    assert_int_equal(count_in_drawn(&t, 31, pixels_vectors, "memset("), 0);
    sampled_configs_ok(f, &t, 5, 32, pixels_vectors);
    t = conv(DT_OP_CONV2D, 1, 3, 35, 8, 3, 2, 1, 1);
    sampled_configs_ok(f, &t, 4, 33, pixels_vectors);
    t = conv(DT_OP_CONV2D, 1, 4, 36, 8, 1, 2, 0, 1);
    sampled_configs_ok(f, &t, 4, 34, pixels_vectors);
    f->measure.threads = 2;
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 8, 14, 8, 3, 2, 1, 1);
    pixel_configs_ok(f, &t, 4, 29);
    t = conv(DT_OP_CONV2D, 1, 8, 12, 16, 1, 1, 0, 1);
    pixel_configs_ok(f, &t, 3, 30);
}

static bool plane_form(const dt_space *space, const dt_point *point)
{
    return dt_space_get(space, point, "form", 0, -1) == DT_CPU_FORM_PLANE;
}

static void plane_configs_ok(fixture *f, const dt_task *task, int count, unsigned long seed)
{
    sampled_configs_ok(f, task, count, seed, plane_form);
}

static bool plane_at_8(const dt_space *space, const dt_point *point)
{
    return plane_form(space, point) && dt_space_get(space, point, "vec", 0, -1) == 8;
}

static bool plane_at_4(const dt_space *space, const dt_point *point)
{
    return plane_form(space, point) && dt_space_get(space, point, "vec", 0, -1) == 4;
}

/* The source of task's plan in the plane form at vec lanes, unroll_kw
 * `unroll` (malloc'd). */
static char *plane_source(const dt_task *task, int vec, int unroll)
{
    dt_cpu_plan plan;
    dt_cpu_plan_default(task, 1, &plan);
    plan.form = DT_CPU_FORM_PLANE;
    plan.vec = vec;
    plan.unroll = unroll;
    char *source = NULL;
    int rc = dt_cpu_codegen(&plan, &source, NULL);
    assert_int_equal(rc, 0);
    assert_non_null(source);
    return source;
}

/* How often needle occurs in [from, end). */
static int occurrences(const char *from, const char *end, const char *needle)
{
    int n = 0;
    for (const char *s = from; (s = strstr(s, needle)) && s < end; s++)
        n++;
    return n;
}

/* The checks the plane and pairs forms share: p (16 lanes) passes, and
 * fails with 1 lane or an unroll of 9. */
static void inplace_checks_ok(const dt_cpu_plan *plan)
{
    dt_cpu_plan p = *plan;
    dt_error err;
    assert_int_equal(dt_cpu_plan_check(&p, &err), 0);
    p.vec = 1;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "lanes"));
    p.vec = 16;
    p.row_block = 9;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "unrolls"));
}

/* The plane form against the reference: rows narrower than a vector (one
 * or two a vector), rows cut into chunks with a partial last one, kernel 5,
 * multiplier 2 and batch 2 where window rows roll down; stride 2 and
 * dilation 2 where taps are picked from two loads; 4 and 8 lanes; 2 threads. Its plan
 * checks, and what its source does and does not hold. */
static void test_plane_form(void **state)
{
    fixture *f = *state;
    dt_task t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 16, 10, 16, 3, 1, 1, 1);   /* 10 x 11 */
    plane_configs_ok(f, &t, 6, 41);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 8, 5, 8, 3, 1, 1, 1);             /* 5 x 6: 2 rows a vector */
    plane_configs_ok(f, &t, 4, 42);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 4, 20, 4, 3, 1, 1, 1);            /* 20 x 21: chunks */
    plane_configs_ok(f, &t, 4, 43);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 2, 8, 9, 16, 5, 1, 2, 1);            /* kernel 5, multiplier 2 */
    plane_configs_ok(f, &t, 4, 44);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 12, 15, 12, 3, 2, 1, 1);          /* stride 2 */
    plane_configs_ok(f, &t, 5, 45);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 8, 39, 8, 3, 2, 1, 1);            /* stride 2, chunks */
    plane_configs_ok(f, &t, 4, 46);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 2, 8, 9, 16, 5, 2, 2, 1);            /* stride 2, kernel 5 */
    plane_configs_ok(f, &t, 4, 47);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 4, 11, 4, 3, 1, 2, 2);            /* dilation 2 */
    plane_configs_ok(f, &t, 4, 48);
    /* every narrower width the machine has, where masked loads, stores and
     * picks take other instructions (AVX-512VL's, AVX's or lane by lane) */
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 8, 7, 8, 3, 1, 1, 1);             /* 7 x 8 */
    sampled_configs_ok(f, &t, 2, 50, plane_at_4);
    if (dt_cpu_plan_native_lanes() >= 8)
        sampled_configs_ok(f, &t, 2, 51, plane_at_8);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 8, 14, 8, 3, 2, 1, 1);            /* stride 2 */
    sampled_configs_ok(f, &t, 2, 52, plane_at_4);
    if (dt_cpu_plan_native_lanes() >= 8)
        sampled_configs_ok(f, &t, 2, 53, plane_at_8);
    f->measure.threads = 2;
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 8, 14, 8, 3, 1, 1, 1);
    plane_configs_ok(f, &t, 3, 49);

    /* stride 1 rolls (masked loads only, three window rows loaded a group
     * in the loop); stride 2 picks; neither copies the input */
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 16, 10, 16, 3, 1, 1, 1);
    for (int unroll = 0; unroll <= 1; unroll++) {
        char *src = plane_source(&t, 16, unroll);
        assert_int_equal(strstr(src, "PICK(0x") != NULL, unroll == 0);
        assert_null(strstr(src, "memcpy("));
        assert_null(strstr(src, "memset("));
        /* one window row a group: three column loads, or one load and two picks */
        const char *loop = strstr(src, "for (int q = 1; q < 9; q++)");
        assert_non_null(loop);
        const char *end = strstr(loop, "MST(");
        int loads = occurrences(loop, end, "MLD(0x"), picks = occurrences(loop, end, "PICK(0x");
        assert_int_equal(loads, unroll ? 3 : 1);
        assert_int_equal(picks, unroll ? 0 : 2);
        free(src);
    }
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 12, 15, 12, 3, 2, 1, 1);
    char *src = plane_source(&t, 16, 1);
    assert_non_null(strstr(src, "PICK(0x"));
    assert_null(strstr(src, "memcpy("));
    free(src);

    dt_cpu_plan p;
    dt_error err;
    dt_cpu_plan_default(&t, 1, &p);
    p.form = DT_CPU_FORM_PLANE;
    p.vec = 16;
    inplace_checks_ok(&p);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 4, 40, 4, 3, 3, 1, 1);            /* stride 3: 40 floats a tap */
    dt_cpu_plan_default(&t, 1, &p);
    p.form = DT_CPU_FORM_PLANE;
    p.vec = 16;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "two vectors"));
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 4, 20, 4, 9, 1, 4, 1);
    dt_cpu_plan_default(&t, 1, &p);
    p.form = DT_CPU_FORM_PLANE;
    p.vec = 16;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "windows up to"));
}

/* strided_forms_ok's choice of point: the form, and the width where > 0 */
static int wanted_form, wanted_vec;

static bool wanted_point(const dt_space *space, const dt_point *point)
{
    return dt_space_get(space, point, "form", 0, -1) == wanted_form &&
           (wanted_vec == 0 || dt_space_get(space, point, "vec", 0, -1) == wanted_vec);
}

/* A stride-2 form (pairs, slots) against the reference, points of it
 * sampled with seeds from seed up: one chunk a row (with padding on the
 * left, the right and below), a row wider than a vector with a partial
 * last one, kernel 5 with padding 2, multiplier 2 and batch 2, no padding;
 * 4 and 8 lanes; 2 threads. */
static void strided_forms_ok(fixture *f, int form, unsigned long seed)
{
    wanted_form = form;
    wanted_vec = 0;
    dt_task t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 12, 15, 12, 3, 2, 1, 1);    /* 8 x 8 out */
    sampled_configs_ok(f, &t, 4, seed, wanted_point);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 4, 69, 4, 3, 2, 1, 1);             /* 35 x 35 out */
    sampled_configs_ok(f, &t, 4, seed + 1, wanted_point);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 2, 8, 9, 16, 5, 2, 2, 1);             /* kernel 5, mult. 2 */
    sampled_configs_ok(f, &t, 4, seed + 2, wanted_point);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 6, 12, 6, 3, 2, 0, 1);             /* no padding */
    sampled_configs_ok(f, &t, 3, seed + 3, wanted_point);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 8, 14, 8, 3, 2, 1, 1);             /* 7 x 8 out */
    wanted_vec = 4;
    sampled_configs_ok(f, &t, 2, seed + 4, wanted_point);
    wanted_vec = 8;
    if (dt_cpu_plan_native_lanes() >= 8)
        sampled_configs_ok(f, &t, 2, seed + 5, wanted_point);
    wanted_vec = 0;
    f->measure.threads = 2;
    sampled_configs_ok(f, &t, 3, seed + 6, wanted_point);
}

/* The source of a stride-2 form at 16 lanes for a 35 x 35 output (70
 * input columns), its plan in p; neither form picks from two vectors nor
 * copies. */
static char *strided_source(int form, dt_cpu_plan *p)
{
    dt_task t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 4, 69, 4, 3, 2, 1, 1);
    dt_cpu_plan_default(&t, 1, p);
    p->form = form;
    p->vec = 16;
    char *src = NULL;
    assert_int_equal(dt_cpu_codegen(p, &src, NULL), 0);
    assert_null(strstr(src, "PICK(0x"));
    assert_null(strstr(src, "memcpy("));
    assert_null(strstr(src, "memset("));
    return src;
}

/* The pairs form against the reference (strided_forms_ok: chunks with a
 * loop of whole ones and a partial last one). Its source shuffles in lanes
 * and never picks from two vectors nor copies; its plan checks. */
static void test_pairs_form(void **state)
{
    fixture *f = *state;
    strided_forms_ok(f, DT_CPU_FORM_PAIRS, 61);

    dt_cpu_plan p;
    char *src = strided_source(DT_CPU_FORM_PAIRS, &p);
    /* the whole chunks in a loop; a row of it loads two window rows (one is
     * carried), two loads a row and channel, three shuffles a row */
    const char *loop = strstr(src, "for (int j0 = 8; j0 < 32; j0 += 8)");
    assert_non_null(loop);
    const char *rows = strstr(loop, "for (int r = 1; r < OH; r++)");
    assert_non_null(rows);
    const char *end = strstr(rows, "MST(");
    int loads = occurrences(rows, end, "LD(AT(x"), shuffles = 0;
    for (const char *s = rows; (s = strstr(s, "SHUF(a")) && s < end; s++)
        shuffles += s[6] >= '0' && s[6] <= '9';         /* not the sum's SHUF(acc */
    assert_int_equal(loads, 8);
    assert_int_equal(shuffles, 6);
    /* the last chunk (3 of 8 columns) moves window column 2 out of column 0 */
    const char *last = strstr(src, "ya + 0 + 32");
    assert_non_null(last);
    assert_non_null(strstr(last, "t1_2 = SHUF(t1_0, t1_0"));
    free(src);

    dt_error err;
    inplace_checks_ok(&p);
    dt_task t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 4, 14, 4, 3, 1, 1, 1);     /* stride 1 */
    dt_cpu_plan_default(&t, 1, &p);
    p.form = DT_CPU_FORM_PAIRS;
    p.vec = 16;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "stride 2"));
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 3, 14, 3, 3, 2, 1, 1);             /* odd channels */
    dt_cpu_plan_default(&t, 1, &p);
    p.form = DT_CPU_FORM_PAIRS;
    p.vec = 16;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "even channel count"));
}

/* The slots form against the reference (strided_forms_ok: pair offsets
 * -1 and 0 at padding 1, -1, 0 and 1 at kernel 5, 0 and 1 without
 * padding; several vectors a row at 4 lanes). Its source neither picks
 * taps nor copies, loads each window row's vectors once a row, and checks
 * its registers. */
static void test_slots_form(void **state)
{
    fixture *f = *state;
    strided_forms_ok(f, DT_CPU_FORM_SLOTS, 71);

    dt_cpu_plan p;
    char *src = strided_source(DT_CPU_FORM_SLOTS, &p);
    /* 70 of 70 columns in 5 vectors (the last 6 lanes), 2 pair offsets:
     * 3 window rows x 5 loads, 2 x 5 accumulators a row; 35 outputs in
     * 3 stores (the last 3 lanes) */
    const char *rows = strstr(src, "for (int r = 0; r < OH; r++)");
    assert_non_null(rows);
    const char *end = src + strlen(src);
    assert_int_equal(occurrences(rows, end, "= LD(xr + "), 12);
    assert_int_equal(occurrences(rows, end, "= MLD(0x3fu, xr + 64)"), 3);
    assert_int_equal(occurrences(rows, end, "vf a1_4 = (vf){ 0 }"), 1);
    assert_null(strstr(rows, "a2_0"));
    assert_int_equal(occurrences(rows, end, "+= t"), 30);
    assert_int_equal(occurrences(rows, end, " ST(y + r * OW + "), 2);
    assert_int_equal(occurrences(rows, end, "MST(0x7u, y + r * OW + 32, o)"), 1);
    free(src);

    dt_error err;
    inplace_checks_ok(&p);
    p.vec = 4;                                   /* 18 vectors x 2 offsets */
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "accumulators"));
    dt_task t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 4, 14, 4, 3, 1, 1, 1);     /* stride 1 */
    dt_cpu_plan_default(&t, 1, &p);
    p.form = DT_CPU_FORM_SLOTS;
    p.vec = 16;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "stride 2"));
}

static void test_conv2d_random_configs(void **state)
{
    fixture *f = *state;
    dt_task t = conv(DT_OP_CONV2D, 1, 12, 9, 16, 3, 1, 1, 1);
    random_configs_ok(f, &t, 6, 1);
    t = conv(DT_OP_CONV2D, 2, 6, 11, 24, 3, 2, 1, 1);     /* batch 2, stride 2 */
    random_configs_ok(f, &t, 5, 2);
    t = conv(DT_OP_CONV2D, 1, 8, 10, 8, 3, 1, 2, 2);      /* dilation 2 */
    random_configs_ok(f, &t, 4, 3);
    t = conv(DT_OP_CONV2D, 1, 3, 13, 16, 7, 2, 3, 1);     /* conv1-like: 3 channels, 7x7 */
    random_configs_ok(f, &t, 4, 4);
}

static void test_depthwise_random_configs(void **state)
{
    fixture *f = *state;
    dt_task t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 16, 10, 16, 3, 1, 1, 1);
    random_configs_ok(f, &t, 5, 5);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 2, 8, 9, 16, 5, 2, 2, 1);   /* multiplier 2 */
    random_configs_ok(f, &t, 5, 6);
}

/* A blocked config whose input (conv2d: red_order 0, a channel tile of whole
 * vectors) and output are converted by VEC x VEC transposes. */
static bool transposed(const dt_space *space, const dt_point *point)
{
    dt_cpu_plan plan;
    dt_cpu_plan_from_point(space, point, 1, &plan);
    return plan.form == DT_CPU_FORM_BLOCKED && plan.vec > 1 &&
           (plan.task.kind == DT_OP_DEPTHWISE_CONV2D ||
            (plan.red_order == 0 && plan.ci_block % plan.vec == 0));
}

/* The blocked form's NCHW <-> blocked conversions in vector squares: both
 * convert by transposes (depthwise with a multiplier only the output, its
 * input channels repeat), and the kernels match the reference with widths
 * and pixel counts that leave partial squares, at every vector width the
 * draws give, batch 2, stride 2, and 2 threads. */
static void test_blocked_transposes(void **state)
{
    fixture *f = *state;
    dt_task t = conv(DT_OP_CONV2D, 1, 16, 9, 32, 3, 1, 1, 1);
    assert_int_equal(count_in_drawn(&t, 40, transposed, "TRANSPOSE();"), 2);
    sampled_configs_ok(f, &t, 6, 41, transposed);
    t = conv(DT_OP_CONV2D, 2, 32, 7, 16, 1, 2, 0, 1);            /* strided 1x1, batch 2 */
    sampled_configs_ok(f, &t, 5, 42, transposed);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 32, 11, 32, 3, 2, 1, 1);
    assert_int_equal(count_in_drawn(&t, 43, transposed, "TRANSPOSE();"), 2);
    sampled_configs_ok(f, &t, 6, 44, transposed);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 2, 8, 9, 16, 5, 2, 2, 1);   /* multiplier 2 */
    assert_int_equal(count_in_drawn(&t, 45, transposed, "TRANSPOSE();"), 1);
    sampled_configs_ok(f, &t, 4, 46, transposed);
    f->measure.threads = 2;
    t = conv(DT_OP_CONV2D, 1, 16, 12, 16, 3, 1, 1, 1);
    sampled_configs_ok(f, &t, 3, 47, transposed);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 16, 13, 16, 3, 1, 1, 1);
    sampled_configs_ok(f, &t, 3, 48, transposed);
}

static void test_matmul_random_configs(void **state)
{
    fixture *f = *state;
    dt_task t = matmul(DT_OP_DENSE, 1, 6, 40, 48);
    random_configs_ok(f, &t, 6, 7);
    t = matmul(DT_OP_DENSE, 1, 1, 24, 36);                        /* a GEMV like fc */
    random_configs_ok(f, &t, 4, 8);
    t = matmul(DT_OP_BATCH_MATMUL, 3, 10, 32, 24);
    random_configs_ok(f, &t, 6, 9);
}

static dt_task with_epilogue(dt_task t, bool bias, bool residual, dt_act act)
{
    t.epilogue = (dt_task_epilogue){ .bias = bias, .residual = residual, .act = act };
    return t;
}

/* wanted_form, where a space without a form knob is blocked */
static bool wanted_form_of(const dt_space *space, const dt_point *point)
{
    int form = dt_space_get(space, point, "form", 0, DT_CPU_FORM_BLOCKED);
    return form == wanted_form;
}

/* Tasks with an epilogue: every form of every kind, with the combinations
 * of bias, residual, relu and relu6, checked by the runner against the
 * reference with seeded bias and residual (the runner calls
 * dt_kernel_epilogue); the blocked form applies it as it unpacks the
 * output; a task without one has no such entry, and its source does not
 * change. */
static void test_epilogue_each_form(void **state)
{
    fixture *f = *state;
    const struct { int form; dt_task task; } forms[] = {
        { DT_CPU_FORM_BLOCKED, conv(DT_OP_CONV2D, 2, 6, 11, 24, 3, 2, 1, 1) },
        { DT_CPU_FORM_PIXELS, conv(DT_OP_CONV2D, 2, 5, 11, 12, 1, 2, 0, 1) },
        { DT_CPU_FORM_PIXELS, conv(DT_OP_CONV2D, 1, 3, 17, 8, 3, 2, 1, 1) },
        { DT_CPU_FORM_BLOCKED, conv(DT_OP_DEPTHWISE_CONV2D, 2, 8, 9, 16, 5, 2, 2, 1) },
        { DT_CPU_FORM_PIXELS, conv(DT_OP_DEPTHWISE_CONV2D, 1, 16, 10, 16, 3, 1, 1, 1) },
        { DT_CPU_FORM_PLANE, conv(DT_OP_DEPTHWISE_CONV2D, 1, 16, 10, 16, 3, 1, 1, 1) },
        { DT_CPU_FORM_PAIRS, conv(DT_OP_DEPTHWISE_CONV2D, 1, 12, 15, 12, 3, 2, 1, 1) },
        { DT_CPU_FORM_SLOTS, conv(DT_OP_DEPTHWISE_CONV2D, 1, 12, 15, 12, 3, 2, 1, 1) },
    };
    wanted_vec = 0;
    for (int i = 0; i < (int)(sizeof forms / sizeof forms[0]); i++) {
        dt_task t = forms[i].task;
        wanted_form = forms[i].form;
        sampled_configs_ok(f, &(dt_task[1]){ with_epilogue(t, true, false, DT_ACT_RELU) }[0], 2, 60 + i, wanted_form_of);
        sampled_configs_ok(f, &(dt_task[1]){ with_epilogue(t, true, true, DT_ACT_RELU6) }[0], 2, 70 + i, wanted_form_of);
        sampled_configs_ok(f, &(dt_task[1]){ with_epilogue(t, false, true, DT_ACT_NONE) }[0], 1, 80 + i, wanted_form_of);
    }
    dt_task d = matmul(DT_OP_DENSE, 1, 3, 40, 36);
    random_configs_ok(f, &(dt_task[1]){ with_epilogue(d, true, false, DT_ACT_NONE) }[0], 4, 90);
    random_configs_ok(f, &(dt_task[1]){ with_epilogue(d, true, true, DT_ACT_RELU) }[0], 4, 91);
    d = matmul(DT_OP_DENSE, 1, 7, 24, 20);
    random_configs_ok(f, &(dt_task[1]){ with_epilogue(d, false, false, DT_ACT_RELU6) }[0], 3, 92);
    /* the blocked form applies it as it unpacks the output, in VEC x VEC
     * squares and in the partial ones at a plane's end (81 pixels) */
    dt_task sq = conv(DT_OP_CONV2D, 2, 16, 9, 32, 3, 1, 1, 1);
    sampled_configs_ok(f, &(dt_task[1]){ with_epilogue(sq, true, true, DT_ACT_RELU6) }[0], 3, 94, transposed);
    sq = conv(DT_OP_DEPTHWISE_CONV2D, 1, 32, 9, 32, 3, 1, 1, 1);
    sampled_configs_ok(f, &(dt_task[1]){ with_epilogue(sq, true, false, DT_ACT_RELU) }[0], 2, 95, transposed);
    f->measure.threads = 2;
    dt_task t = conv(DT_OP_CONV2D, 1, 16, 12, 16, 3, 1, 1, 1);
    random_configs_ok(f, &(dt_task[1]){ with_epilogue(t, true, true, DT_ACT_RELU) }[0], 3, 93);

    dt_cpu_plan plan;
    char *plain, *fused;
    dt_cpu_plan_default(&t, 1, &plan);
    assert_int_equal(dt_cpu_codegen(&plan, &plain, NULL), 0);
    assert_null(strstr(plain, "dt_kernel_epilogue"));
    plan.task = with_epilogue(t, true, false, DT_ACT_RELU);
    assert_int_equal(dt_cpu_codegen(&plan, &fused, NULL), 0);
    assert_non_null(strstr(fused, "void dt_kernel_epilogue("));
    assert_non_null(strstr(fused, "+bias+relu"));
    /* blocked: in unpack_y, no pass over the whole output */
    assert_int_equal(plan.form, DT_CPU_FORM_BLOCKED);
    assert_non_null(strstr(fused, "ep_apply("));
    assert_null(strstr(fused, "static void epilogue("));
    free(plain);
    free(fused);
}

static void test_openmp_kernels(void **state)
{
    fixture *f = *state;
    f->measure.threads = 2;
    dt_task t = conv(DT_OP_CONV2D, 1, 8, 12, 16, 3, 1, 1, 1);
    random_configs_ok(f, &t, 3, 10);
    t = matmul(DT_OP_BATCH_MATMUL, 2, 8, 16, 32);
    random_configs_ok(f, &t, 3, 11);
}

/* Every point of a small space: valid exactly when the generator accepts it. */
static void test_validity_matches_plan_check(void **state)
{
    (void)state;
    dt_task t = conv(DT_OP_CONV2D, 1, 4, 4, 8, 3, 1, 1, 1);
    dt_space space;
    assert_int_equal(dt_target_space_init_opts(&space, &t, DT_TARGET_CPU, &every_width, NULL), 0);
    int valid = 0;
    for (uint64_t i = 0; i < space.size; i += 7) {
        dt_point p;
        dt_space_point(&space, i, &p);
        dt_cpu_plan plan;
        dt_cpu_plan_from_point(&space, &p, 1, &plan);
        char *src = NULL;
        int rc = dt_cpu_codegen(&plan, &src, NULL);
        assert_int_equal(rc == 0, dt_space_valid(&space, &p));
        valid += rc == 0;
        free(src);
    }
    assert_true(valid > 0);
    dt_space_free(&space);
}

static void test_plan_check_rejects(void **state)
{
    (void)state;
    dt_task t = conv(DT_OP_CONV2D, 1, 16, 8, 32, 3, 1, 1, 1);
    dt_cpu_plan p;
    dt_cpu_plan_default(&t, 1, &p);
    assert_int_equal(dt_cpu_plan_check(&p, NULL), 0);
    p.co_block = 32;
    p.vec = 16;
    p.ow_block = 9;                       /* the whole 9-wide row: 2 x 9 accumulators */
    dt_error err;
    assert_int_equal(dt_cpu_plan_check(&p, &err), 0);
    p.ow_block = 2;                       /* does not divide 9 */
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    p.ow_block = 3;
    p.co_block = 16;
    p.vec = 16;
    assert_int_equal(dt_cpu_plan_check(&p, NULL), 0);
    p.vec = 32;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    p.vec = 16;
    p.co_block = 8;                       /* vec does not divide the channel tile */
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "vec"));
    dt_task big = conv(DT_OP_CONV2D, 1, 16, 28, 64, 3, 1, 1, 1);
    dt_cpu_plan_default(&big, 1, &p);
    p.co_block = 64;
    p.vec = 16;
    p.ow_block = 29;                      /* 4 x 29 accumulators */
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "register"));

    /* pixels form: any width (the last vector partial), its own loop
     * orders, ci tiles, both reduction orders where the window is not 1x1,
     * pixel vectors counted with the accumulators */
    dt_cpu_plan_default(&big, 1, &p);
    p.form = DT_CPU_FORM_PIXELS;
    p.vec = 16;
    p.ow_block = 29;                      /* the whole row: 2 vectors, 13 lanes of the second */
    p.co_block = 8;                       /* 16 accumulators + 2 pixel vectors */
    p.ci_block = 4;
    p.order = DT_CPU_CONV_ORDERS - 1;
    p.red_order = 1;
    assert_int_equal(dt_cpu_plan_check(&p, &err), 0);
    p.co_block = 16;                      /* 32 + 2 */
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "register"));
    p.co_block = 8;
    p.order = DT_CPU_CONV_ORDERS;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "pixels form"));
    p.order = 0;
    p.form = DT_CPU_FORM_PLANE;               /* depthwise only */
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "depthwise"));
    p.form = 3;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "form"));
    dt_task one = conv(DT_OP_CONV2D, 1, 16, 28, 64, 1, 1, 0, 1);
    dt_cpu_plan_default(&one, 1, &p);
    p.form = DT_CPU_FORM_PIXELS;
    assert_int_equal(dt_cpu_plan_check(&p, &err), 0);
    p.red_order = 1;                      /* no window to order */
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    dt_task dw = conv(DT_OP_DEPTHWISE_CONV2D, 1, 32, 28, 32, 3, 1, 1, 1);
    dt_cpu_plan_default(&dw, 1, &p);
    p.form = DT_CPU_FORM_PIXELS;
    p.vec = 16;
    p.ow_block = 29;                      /* 2 vectors */
    p.co_block = 8;                       /* 16 accumulators; depthwise keeps no pixel vectors */
    assert_int_equal(dt_cpu_plan_check(&p, &err), 0);
    p.co_block = 16;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    p.co_block = 2;
    p.order = DT_CPU_PIXELS_DEPTHWISE_ORDERS - 1;
    assert_int_equal(dt_cpu_plan_check(&p, &err), 0);
    p.order = DT_CPU_PIXELS_DEPTHWISE_ORDERS;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    p.order = 0;
    p.oh_block = 14;
    p.row_block = 2;                      /* 2 x 2 x 2 accumulators + 2 pixel vectors */
    assert_int_equal(dt_cpu_plan_check(&p, &err), 0);
    p.row_block = 4;                      /* does not divide the band */
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "row block"));
    p.oh_block = 28;
    p.co_block = 4;                       /* 4 x 4 x 2 */
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "register"));
    p.form = DT_CPU_FORM_BLOCKED;
    p.co_block = 16;
    p.row_block = 2;
    assert_int_equal(dt_cpu_plan_check(&p, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "row block"));
}

/* The form knob is where the blocked form falls short (depthwise, 1x1,
 * a first layer of 3 channels) and nowhere else, and the schema hash sees
 * it: a space with the knob never shares a hash with one without. */
static void test_form_knob_where_offered(void **state)
{
    (void)state;
    const struct { dt_task task; bool form; } cases[] = {
        { conv(DT_OP_CONV2D, 1, 16, 14, 32, 3, 1, 1, 1), false },
        { conv(DT_OP_CONV2D, 1, 16, 14, 32, 1, 1, 0, 1), true },
        { conv(DT_OP_CONV2D, 1, 16, 14, 32, 1, 2, 0, 1), true },
        { conv(DT_OP_CONV2D, 1, 3, 22, 32, 3, 2, 1, 1), true },
        { conv(DT_OP_DEPTHWISE_CONV2D, 1, 16, 14, 16, 3, 1, 1, 1), true },
        { matmul(DT_OP_DENSE, 1, 1, 24, 36), false },
    };
    char plain[24] = "", with[24] = "", without[24];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_space s;
        assert_int_equal(dt_target_space_init_opts(&s, &cases[i].task, DT_TARGET_CPU, &every_width, NULL), 0);
        int k = dt_space_knob(&s, "form");
        assert_int_equal(k >= 0, cases[i].form);
        assert_int_equal(dt_space_knob(&s, "tile_rows") >= 0,
                         cases[i].task.kind == DT_OP_DEPTHWISE_CONV2D);
        if (i == 0)
            dt_db_space_hash(&s, plain, sizeof plain);
        if (i == 1) {
            dt_db_space_hash(&s, with, sizeof with);
            assert_int_equal(k, s.nknobs - 1);
            s.nknobs--;                   /* the same space less the knob */
            dt_db_space_hash(&s, without, sizeof without);
            s.nknobs++;
            assert_string_not_equal(with, without);
        }
        dt_space_free(&s);
    }
    assert_string_not_equal(plain, with);
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* A blocked plan of 16-lane vectors with the kw loop unrolled. */
static dt_cpu_plan unrolled_plan(const dt_task *t, int co_block, int ow_block, int ci_block)
{
    dt_cpu_plan p;
    dt_cpu_plan_default(t, 1, &p);
    p.co_block = co_block;
    p.vec = 16;
    p.ow_block = ow_block;
    p.ci_block = ci_block;
    p.unroll = 1;
    return p;
}

static void test_knobs_change_source(void **state)
{
    (void)state;
    dt_task t = conv(DT_OP_CONV2D, 1, 16, 8, 32, 3, 1, 1, 1);
    dt_cpu_plan p = unrolled_plan(&t, 32, 3, 4);
    char *a, *b, *c, *d;
    assert_int_equal(dt_cpu_codegen(&p, &a, NULL), 0);
    p.unroll = 0;
    assert_int_equal(dt_cpu_codegen(&p, &b, NULL), 0);
    p.threads = 4;
    assert_int_equal(dt_cpu_codegen(&p, &c, NULL), 0);
    p.threads = 1;
    p.pack_weight = 0;
    assert_int_equal(dt_cpu_codegen(&p, &d, NULL), 0);
    /* register tile 3 pixels x 2 vectors, in every copy of the kw loop of
     * the nine copies of the tile (three row classes, column tiles 0 and 2
     * at the edges and the interior); pixel 2 of the last column tile reads
     * padding at s = 2 */
    /* vf, vfu and the transposes' lane indices */
    assert_int_equal(count(a, "vector_size(64)"), 3);
    assert_int_equal(count(a, "a2_1 += w1 * x;"), 3 * (3 + 3 + 2));
    assert_non_null(strstr(a, "const int s = 2;"));
    assert_int_equal(count(b, "a2_1 += w1 * x;"), 3);
    assert_non_null(strstr(b, "for (int s = 0; s < KW; s++)"));
    assert_non_null(strstr(c, "#pragma omp parallel for collapse(2) num_threads(4)"));
    assert_null(strstr(b, "#pragma omp"));
    assert_non_null(strstr(a, "void dt_kernel_prepare(const float *restrict weight, float *restrict ws)\n{\n    pack_w"));
    /* the measurement's spread helper: multi-threaded sources only */
    assert_int_equal(count(c, "void " DT_CPU_KERNEL_SPREAD "("), 1);
    assert_int_equal(count(a, DT_CPU_KERNEL_SPREAD), 0);
    assert_non_null(strstr(d, "    pack_w(weight, ws);\n    for (int n"));
    free(a);
    free(b);
    free(c);
    free(d);
}

/* The spread helper of a multi-threaded measurement source keeps every
 * value of the buffers it rewrites, whatever their length against its
 * stripes, and skips a NULL one; an export's source (named entries) has
 * none. */
static void test_spread_helper_keeps_values(void **state)
{
    fixture *f = *state;
    dt_task t = conv(DT_OP_CONV2D, 1, 16, 8, 32, 3, 1, 1, 1);
    dt_cpu_plan p = unrolled_plan(&t, 32, 3, 4);
    p.threads = 2;
    char *source, *named;
    dt_error err;
    if (dt_cpu_codegen(&p, &source, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(dt_cpu_codegen_named(&p, "net_conv", &named, NULL), 0);
    assert_null(strstr(named, "_spread("));
    free(named);
    dt_backend_params params = { .measure = &f->measure, .work_dir = f->dir, .seed = 3 };
    dt_cpu_options opts;
    dt_cpu_backend_default_options(&f->measure, &opts);
    void *backend;
    assert_int_equal(dt_cpu_backend_open(&params, &opts, &backend, NULL), 0);
    dt_artifact a;
    assert_int_equal(dt_cpu_backend_build_source(backend, source, 2, &a, NULL), 0);
    free(source);
    assert_int_equal(a.result, DT_RESULT_OK);
    void *so = dlopen(a.path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(so);
    void (*spread)(float *const *, const size_t *, int) =
        (void (*)(float *const *, const size_t *, int))dlsym(so, DT_CPU_KERNEL_SPREAD);
    assert_non_null(spread);
    const size_t lengths[] = { 7, 100003, 257 };
    float *buf[3], *copy[3];
    for (int b = 0; b < 3; b++) {
        buf[b] = malloc(lengths[b] * sizeof(float));
        copy[b] = malloc(lengths[b] * sizeof(float));
        assert_true(buf[b] && copy[b]);
        for (size_t i = 0; i < lengths[b]; i++)
            buf[b][i] = copy[b][i] = (float)(i % 997) * 0.37f - (float)b * 1.9f;
    }
    float *const buffers[] = { buf[0], NULL, buf[1], buf[2] };
    const size_t floats[] = { lengths[0], 12345, lengths[1], lengths[2] };
    for (int round = 0; round < 3; round++)
        spread(buffers, floats, 4);
    for (int b = 0; b < 3; b++) {
        assert_memory_equal(buf[b], copy[b], lengths[b] * sizeof(float));
        free(buf[b]);
        free(copy[b]);
    }
    dlclose(so);
    dt_cpu_backend.close(backend);
}

/* How often needle occurs in the source of plan. */
static int count_in_plan(const dt_cpu_plan *plan, const char *needle)
{
    char *text;
    assert_int_equal(dt_cpu_codegen(plan, &text, NULL), 0);
    int n = count(text, needle);
    free(text);
    return n;
}

static bool blocked_unrolled(const dt_space *space, const dt_point *point)
{
    dt_cpu_plan plan;
    dt_cpu_plan_from_point(space, point, 1, &plan);
    return plan.form == DT_CPU_FORM_BLOCKED && plan.unroll;
}

/* The blocked kernels leave out the taps that read padding: one copy of the
 * tile per class of output rows (kernel rows as constants, from
 * dt_conv_taps) and per column tile at an edge, whose FMA lines are one per
 * (pixel, s) pair inside the input when the kw loop is unrolled (the useful
 * taps along the width); a rolled kw loop gets the row copies only, an
 * unpadded task one tile; and such kernels match the reference (conv2d both
 * reduction orders, depthwise, stride 2, a padding of 3 around a 7x7
 * kernel, dilation). */
static void test_padded_taps_left_out(void **state)
{
    fixture *f = *state;
    dt_task t = conv(DT_OP_CONV2D, 1, 16, 7, 32, 3, 1, 1, 1);      /* 7 x 8 input, pad 1 */
    dt_cpu_plan p = unrolled_plan(&t, 32, 8, 16);
    int cols = 0;
    for (int ow = 0; ow < t.conv.ow; ow++) {
        int first, end;
        dt_conv_taps(t.conv.w, ow, t.conv.kw, t.conv.sw, t.conv.pw, t.conv.dw, &first, &end);
        cols += end - first;
    }
    assert_int_equal(cols, 3 * 8 - 2);
    for (int red = 0; red < 2; red++) {
        p.red_order = red;
        /* rows 0 (kernel rows 1-2), 6 (0-1) and the rest, one column tile */
        assert_int_equal(count_in_plan(&p, "static inline __attribute__((always_inline)) void"), 3 + 1);
        assert_int_equal(count_in_plan(&p, "for (int r = 1; r < 3; r++)"), 1);
        assert_int_equal(count_in_plan(&p, "for (int r = 0; r < 2; r++)"), 1);
        assert_int_equal(count_in_plan(&p, "for (int r = 0; r < 3; r++)"), 1);
        assert_int_equal(count_in_plan(&p, "    case 0:\n        switch (ow_o) {\n"
                                           "        default: case 0: tile_r0_c0("), 1);
        assert_int_equal(count_in_plan(&p, "    case 6:\n"), 1);
        assert_int_equal(count_in_plan(&p, "+= w1 * x;"), 3 * cols);
    }
    p.ow_block = 2;                       /* four column tiles: edges 0 and 3, the interior */
    assert_int_equal(count_in_plan(&p, "+= w1 * x;"), 3 * ((3 * 2 - 1) + (3 * 2 - 1) + 3 * 2));
    assert_int_equal(count_in_plan(&p, "case 3: tile_rin_c3("), 1);
    assert_int_equal(count_in_plan(&p, "default: tile_rin_cin("), 1);
    p.unroll = 0;
    assert_int_equal(count_in_plan(&p, "_c0("), 0);
    assert_int_equal(count_in_plan(&p, "+= w1 * x;"), 3 * 2);
    t = conv(DT_OP_CONV2D, 1, 16, 5, 16, 3, 1, 0, 1);                /* no padding */
    dt_cpu_plan_default(&t, 1, &p);
    p.unroll = 1;
    assert_int_equal(count_in_plan(&p, "tile_r"), 0);
    assert_int_equal(count_in_plan(&p, "for (int r = 0; r < 3; r++)"), 1);
    /* 56 x 57: 1.2 % of each dimension's taps on padding, under
     * SPLIT_MIN_PADDED, so one tile; 28 x 29 (2.4 %) is split */
    t = conv(DT_OP_CONV2D, 1, 16, 56, 16, 3, 1, 1, 1);
    p = unrolled_plan(&t, 16, 3, 16);
    assert_int_equal(count_in_plan(&p, "tile_r"), 0);
    assert_int_equal(count_in_plan(&p, "for (int r = 0; r < 3; r++)"), 1);
    t = conv(DT_OP_CONV2D, 1, 16, 28, 16, 3, 1, 1, 1);
    p = unrolled_plan(&t, 16, 1, 16);
    assert_int_equal(count_in_plan(&p, "tile_r0_c0("), 2);      /* defined and called */
    t = conv(DT_OP_CONV2D, 1, 16, 9, 16, 3, 1, 1, 1);
    sampled_configs_ok(f, &t, 6, 61, blocked_unrolled);
    t = conv(DT_OP_CONV2D, 1, 3, 13, 16, 7, 2, 3, 1);
    sampled_configs_ok(f, &t, 4, 62, blocked_unrolled);
    t = conv(DT_OP_CONV2D, 1, 8, 10, 8, 3, 1, 2, 2);
    sampled_configs_ok(f, &t, 4, 63, blocked_unrolled);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 32, 11, 32, 3, 2, 1, 1);
    sampled_configs_ok(f, &t, 5, 64, blocked_unrolled);
    t = conv(DT_OP_DEPTHWISE_CONV2D, 2, 8, 9, 16, 5, 2, 2, 1);
    sampled_configs_ok(f, &t, 4, 65, blocked_unrolled);
}

/* dt_cpu_codegen_named puts its own entry name on all three entry points
 * and leaves the rest of the source as dt_cpu_codegen writes it. */
static void test_named_entry_points(void **state)
{
    (void)state;
    dt_task t = conv(DT_OP_DEPTHWISE_CONV2D, 1, 12, 9, 24, 3, 2, 1, 1);
    dt_cpu_plan p;
    dt_cpu_plan_default(&t, 1, &p);
    char *plain, *named;
    dt_error err;
    assert_int_equal(dt_cpu_codegen(&p, &plain, NULL), 0);
    assert_int_equal(dt_cpu_codegen_named(&p, "resnet_layer1", &named, NULL), 0);
    assert_non_null(strstr(named, "size_t resnet_layer1_workspace_bytes(void)"));
    assert_non_null(strstr(named, "void resnet_layer1_prepare(const float *restrict weight"));
    assert_non_null(strstr(named, "void resnet_layer1(const float *restrict input"));
    assert_null(strstr(named, "dt_kernel"));
    assert_non_null(strstr(plain, "void dt_kernel(const float *restrict input"));
    const char *a = strstr(plain, "static void compute"), *b = strstr(named, "static void compute");
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(strncmp(a, b, 200), 0);
    free(plain);
    free(named);
    const char *bad[] = { "", "2fast", "has-dash", "x y" };
    for (int i = 0; i < 4; i++) {
        assert_int_equal(dt_cpu_codegen_named(&p, bad[i], &named, &err), DT_EINVAL);
        assert_null(named);
        assert_non_null(strstr(err.msg, "is not a C identifier"));
    }
}

/* A register-blocked AVX-512 plan against a scalar, untiled one. */
static void test_configs_differ_in_speed(void **state)
{
    fixture *f = *state;
    f->measure.max_repeats = 10;
    f->measure.min_batches = 3;
    dt_task t = conv(DT_OP_CONV2D, 1, 32, 14, 64, 3, 1, 1, 1);
    t.conv.w = 14;
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    dt_cpu_plan fast, slow;
    /* The fast plan uses the machine's own vector width: 16 lanes where
     * AVX-512 is there, else 8 (AVX2), with a register tile that fits its
     * vector registers (32 zmm; 16 ymm). A 16-lane plan on an AVX2 machine
     * spills and runs slower than the scalar one. */
    bool avx512 = dt_cpu_plan_native_lanes() >= 16;
    dt_cpu_plan_default(&t, 1, &fast);
    fast.co_block = avx512 ? 32 : 16;
    fast.vec = avx512 ? 16 : 8;
    fast.ow_block = 7;
    fast.ci_block = 32;
    fast.order = 3;
    fast.unroll = 1;
    dt_cpu_plan_default(&t, 1, &slow);
    slow.order = 2;
    slow.unroll = 0;
    dt_backend_params params = { .measure = &f->measure, .work_dir = f->dir, .seed = 1 };
    dt_cpu_options opts;
    dt_cpu_backend_default_options(&f->measure, &opts);
    void *cpu;
    assert_int_equal(dt_cpu_backend_open(&params, &opts, &cpu, NULL), 0);
    double gflops[2];
    const dt_cpu_plan *plans[2] = { &fast, &slow };
    for (int i = 0; i < 2; i++) {
        char *src;
        dt_artifact a;
        dt_measure_result r;
        assert_int_equal(dt_cpu_codegen(plans[i], &src, NULL), 0);
        assert_int_equal(dt_cpu_backend_build_source(cpu, src, 1, &a, NULL), 0);
        free(src);
        assert_int_equal(a.result, DT_RESULT_OK);
        assert_int_equal(dt_cpu_backend_run_artifact(cpu, &t, &a, &r, NULL), 0);
        assert_int_equal(r.result, DT_RESULT_OK);
        gflops[i] = r.gflops;
    }
    dt_cpu_backend.close(cpu);
    if (!(gflops[0] > 3 * gflops[1]))
        fail_msg("fast %.2f GFLOPS, slow %.2f GFLOPS", gflops[0], gflops[1]);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], DT_CPU_RUNNER_ARG) == 0)
        return dt_cpu_runner_main(argc, argv);
    if (argc > 1)   /* one test (or a glob of them) by name */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_conv2d_random_configs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_depthwise_random_configs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pixels_form, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plane_form, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pairs_form, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slots_form, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocked_transposes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_random_configs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_openmp_kernels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spread_helper_keeps_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epilogue_each_form, setup, teardown),
        cmocka_unit_test(test_validity_matches_plan_check),
        cmocka_unit_test(test_plan_check_rejects),
        cmocka_unit_test(test_form_knob_where_offered),
        cmocka_unit_test(test_knobs_change_source),
        cmocka_unit_test_setup_teardown(test_padded_taps_left_out, setup, teardown),
        cmocka_unit_test(test_named_entry_points),
        cmocka_unit_test_setup_teardown(test_configs_differ_in_speed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
