/* test_space.c — knob spaces: factorisation counts and space sizes against
 * hand counts, index round trips, features, neighbours, validity filters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include <math.h>
#include <string.h>

#include "cpu_codegen.h"
#include "dtune/space.h"
#include "dtune/target.h"

/* Every vector width, so the spaces do not depend on the machine. */
static const dt_space_opts every_width = { .cpu_max_vec = 16 };

static dt_task conv_task(int c_in, int hw, int c_out, int k, int stride, int pad)
{
    dt_task t = { .kind = DT_OP_CONV2D, .count = 1,
                  .conv = { .n = 1, .c_in = c_in, .h = hw, .w = hw, .c_out = c_out, .kh = k,
                            .kw = k, .sh = stride, .sw = stride, .ph = pad, .pw = pad,
                            .dh = 1, .dw = 1 } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    return t;
}

static void test_factorisation_counts(void **state)
{
    (void)state;
    /* 2^6 into 4 parts: C(6+3, 3) = 84; 56 = 2^3 * 7: C(6,3) * C(4,3) = 80. */
    assert_int_equal(dt_count_factorisations(64, 4), 84);
    assert_int_equal(dt_count_factorisations(56, 4), 80);
    assert_int_equal(dt_count_factorisations(7, 4), 4);
    assert_int_equal(dt_count_factorisations(64, 2), 7);
    assert_int_equal(dt_count_factorisations(1000, 2), 16);
    assert_int_equal(dt_count_factorisations(3, 2), 2);
    assert_int_equal(dt_count_factorisations(1, 4), 1);
}

static void test_split_rows_multiply_to_axis(void **state)
{
    (void)state;
    dt_task t = conv_task(64, 56, 64, 3, 1, 1);
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    int f = dt_space_knob(&s, "tile_f");
    assert_true(f >= 0);
    const dt_knob *k = &s.knobs[f];
    assert_int_equal(k->noptions, 84);
    for (int i = 0; i < k->noptions; i++) {
        int prod = 1;
        for (int p = 0; p < k->parts; p++)
            prod *= k->options[i * k->parts + p];
        assert_int_equal(prod, 64);
        for (int j = 0; j < i; j++)
            assert_true(memcmp(&k->options[i * 4], &k->options[j * 4], 4 * sizeof(int)) != 0);
    }
    dt_space_free(&s);
}

static void test_cuda_conv_size(void **state)
{
    (void)state;
    /* resnet18 layer1 3x3: tile_f 84, tile_y 80, tile_x 80, tile_rc 7, ry 2, rx 2,
     * tile_kt 6, 3 x 2 unroll */
    dt_task t = conv_task(64, 56, 64, 3, 1, 1);
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    assert_int_equal(s.nknobs, 9);
    assert_true(s.size == 84ULL * 80 * 80 * 7 * 2 * 2 * 6 * 3 * 2);
    /* features: 3 x 4 + 3 x 2 split factors + 3 choices */
    assert_int_equal(s.nfeatures, 21);
    dt_space_free(&s);
    /* layer4 3x3 (512 @ 7): 220 * 4 * 4 * 10 * 2 * 2 * 6 * 6 */
    t = conv_task(512, 7, 512, 3, 1, 1);
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    assert_true(s.size == 220ULL * 4 * 4 * 10 * 2 * 2 * 6 * 6);
    dt_space_free(&s);
}

static void test_cpu_conv_size(void **state)
{
    (void)state;
    /* Hand count from the CPU conv template: tile_co 2-way of 64 (7), tile_oh and
     * tile_ow 2-way of 56 (8 each), tile_ci 2-way of 64 (7), order 6, red_order 2,
     * unroll_kw 2, vec 4, pack 2. */
    dt_task t = conv_task(64, 56, 64, 3, 1, 1);
    dt_space s;
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &every_width, NULL), 0);
    uint64_t want = 1;
    for (int i = 0; i < s.nknobs; i++) {
        const dt_knob *k = &s.knobs[i];
        int expect = k->type == DT_KNOB_SPLIT ? dt_count_factorisations(k->axis_len, k->parts)
                                              : k->noptions;
        assert_int_equal(k->noptions, expect);
        want *= (uint64_t)expect;
    }
    assert_true(s.size == want);
    assert_true(s.size == 7ULL * 8 * 8 * 7 * 6 * 2 * 2 * 4 * 2);
    dt_space_free(&s);
}

/* The vec knob offers the widths up to the machine's (or the width asked
 * for); every other knob is unchanged. */
static void test_cpu_vec_follows_width(void **state)
{
    (void)state;
    dt_task t = conv_task(64, 56, 64, 3, 1, 1);
    static const struct { int lanes, nvec; } cases[] = { { 16, 4 }, { 8, 3 }, { 4, 2 } };
    uint64_t full = 0;
    dt_space s;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        dt_space_opts opts = { .cpu_max_vec = cases[c].lanes };
        assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &opts, NULL), 0);
        assert_int_equal(s.cpu_max_vec, cases[c].lanes);
        const dt_knob *vec = &s.knobs[dt_space_knob(&s, "vec")];
        assert_int_equal(vec->noptions, cases[c].nvec);
        assert_int_equal(vec->options[vec->noptions - 1], cases[c].lanes);
        if (c == 0)
            full = s.size;
        assert_true(s.size * 4 == full * (uint64_t)cases[c].nvec);
        dt_space_free(&s);
    }
    /* the defaults: this machine's width */
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CPU, NULL), 0);
    assert_int_equal(s.cpu_max_vec, dt_cpu_plan_native_lanes());
    const dt_knob *vec = &s.knobs[dt_space_knob(&s, "vec")];
    assert_int_equal(vec->options[vec->noptions - 1], dt_cpu_plan_native_lanes());
    dt_space_free(&s);
    dt_error err;
    dt_space_opts bad = { .cpu_max_vec = 12 };
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &bad, &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "12"));
}

static void test_index_round_trip(void **state)
{
    (void)state;
    dt_task t = conv_task(48, 13, 192, 3, 1, 1);
    dt_space s;
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &every_width, NULL), 0);
    dt_point p;
    for (uint64_t i = 0; i < s.size; i += 7919) {
        dt_space_point(&s, i, &p);
        assert_true(dt_space_index(&s, &p) == i);
    }
    dt_space_point(&s, s.size - 1, &p);
    for (int k = 0; k < s.nknobs; k++)
        assert_int_equal(p.opt[k], s.knobs[k].noptions - 1);
    dt_space_free(&s);
}

/* A config's printed knobs name it again (dt_space_point_parse), and text
 * that names no point of the space (a value the knob lacks, a missing or
 * foreign knob, another order) names none. */
static void test_parse_printed_knobs(void **state)
{
    (void)state;
    dt_task t = conv_task(48, 13, 192, 3, 1, 1);
    dt_space s;
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &every_width, NULL), 0);
    dt_point p, q;
    char text[512], bad[600];
    for (uint64_t i = 0; i < s.size; i += 104729) {
        dt_space_point(&s, i, &p);
        dt_space_point_str(&s, &p, text, sizeof text);
        assert_true(dt_space_point_parse(&s, text, &q));
        assert_true(dt_space_index(&s, &q) == i);
    }
    dt_space_point(&s, 12345, &p);
    dt_space_point_str(&s, &p, text, sizeof text);
    snprintf(bad, sizeof bad, "%s extra=1", text);             /* a knob the space lacks */
    assert_false(dt_space_point_parse(&s, bad, &q));
    snprintf(bad, sizeof bad, "%s", strstr(text, " ") + 1);    /* the first knob missing */
    assert_false(dt_space_point_parse(&s, bad, &q));
    snprintf(bad, sizeof bad, "%s", text);
    char *vec = strstr(bad, "vec=");
    assert_non_null(vec);
    vec[4] = '3';                                             /* no such width */
    assert_false(dt_space_point_parse(&s, bad, &q));
    assert_false(dt_space_point_parse(&s, "", &q));
    dt_space_free(&s);
}

/* Draws `draws` random points of a depthwise space of stride `stride`;
 * returns how many take `form`, each checked to be its kernel's one point:
 * the knobs the form does not read (tile_c, and `unread` where not NULL) at
 * their first option, the same point with another value of one invalid,
 * canonicalisation and neighbours consistent. */
static int canonical_draws(int stride, int form_value, const char *unread, int draws)
{
    dt_task t = { .kind = DT_OP_DEPTHWISE_CONV2D, .count = 1,
                  .conv = { .n = 1, .c_in = 24, .h = 14, .w = 14, .c_out = 24, .kh = 3, .kw = 3,
                            .sh = stride, .sw = stride, .ph = 1, .pw = 1, .dh = 1, .dw = 1 } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    dt_space s;
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &every_width, NULL), 0);
    int form = dt_space_knob(&s, "form"), tile_c = dt_space_knob(&s, "tile_c");
    int other = unread ? dt_space_knob(&s, unread) : -1;
    assert_true(form >= 0 && tile_c >= 0 && (!unread || other >= 0));
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    int taken = 0;
    dt_point p, q, near[2 * DT_MAX_KNOBS];
    for (int i = 0; i < draws; i++) {
        dt_space_random(&s, rng, &p);
        assert_true(dt_space_valid(&s, &p));
        if (dt_space_get(&s, &p, "form", 0, -1) != form_value)
            continue;
        taken++;
        assert_int_equal(p.opt[tile_c], 0);
        if (other >= 0)
            assert_int_equal(p.opt[other], 0);
        q = p;
        q.opt[tile_c] = 1;                       /* the same kernel under another name */
        assert_false(dt_space_valid(&s, &q));
        dt_space_canonical(&s, &q);
        assert_true(dt_space_index(&s, &q) == dt_space_index(&s, &p));
        int n = dt_space_neighbours(&s, &p, near);
        for (int j = 0; j < n; j++) {
            assert_true(dt_space_valid(&s, &near[j]));
            assert_false(dt_space_index(&s, &near[j]) == dt_space_index(&s, &p));
            for (int k = 0; k < j; k++)
                assert_false(dt_space_index(&s, &near[j]) == dt_space_index(&s, &near[k]));
        }
    }
    gsl_rng_free(rng);
    dt_space_free(&s);
    return taken;
}

/* Where a form reads only some knobs (the CPU plane, pairs and slots forms
 * of depthwise), a kernel has one valid point: the others at their first
 * option. Random points, neighbours and canonicalisation land there; the
 * same point with another value of an unread knob is invalid. The pairs
 * and slots forms are offered at stride 2 only. */
static void test_plane_points_are_canonical(void **state)
{
    (void)state;
    /* about a quarter of the draws (a third take the form, three of the
     * four widths are valid in it), as many as without canonical points */
    assert_true(canonical_draws(1, DT_CPU_FORM_PLANE, NULL, 3000) > 600);
    assert_int_equal(canonical_draws(1, DT_CPU_FORM_PAIRS, NULL, 3000), 0);
    assert_int_equal(canonical_draws(1, DT_CPU_FORM_SLOTS, NULL, 3000), 0);
    /* at stride 2 a fifth take each form, three widths of four (~450) */
    assert_true(canonical_draws(2, DT_CPU_FORM_PAIRS, "unroll_kw", 3000) > 350);
    assert_true(canonical_draws(2, DT_CPU_FORM_SLOTS, "unroll_kw", 3000) > 350);
    assert_true(canonical_draws(2, DT_CPU_FORM_PLANE, NULL, 3000) > 350);
}

static void test_features_and_coords(void **state)
{
    (void)state;
    dt_task t = { .kind = DT_OP_DENSE, .count = 1, .mm = { .b = 1, .m = 12, .n = 40, .k = 96 } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    dt_space s;
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &every_width, NULL), 0);
    dt_point p;
    dt_space_point(&s, 12345 % s.size, &p);
    float feat[DT_MAX_FEATURES];
    double coords[DT_MAX_KNOBS];
    dt_space_features(&s, &p, feat);
    dt_space_normalised(&s, &p, coords);
    int f = 0;
    for (int k = 0; k < s.nknobs; k++) {
        const dt_knob *kn = &s.knobs[k];
        assert_true(coords[k] >= 0.0 && coords[k] <= 1.0);
        if (kn->type == DT_KNOB_SPLIT) {
            double sum = 0;
            for (int q = 0; q < kn->parts; q++)
                sum += feat[f++];
            /* log2 of the factors adds up to log2 of the axis */
            assert_true(fabs(sum - log2((double)kn->axis_len)) < 1e-5);
        } else {
            assert_float_equal(feat[f++], (float)p.opt[k], 0);
        }
    }
    assert_int_equal(f, s.nfeatures);
    dt_space_free(&s);
}

static void test_neighbours(void **state)
{
    (void)state;
    dt_task t = conv_task(32, 27, 128, 3, 1, 1);
    dt_space s;
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &every_width, NULL), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    dt_point p, nb[2 * DT_MAX_KNOBS];
    for (int trial = 0; trial < 50; trial++) {
        dt_space_random(&s, rng, &p);
        assert_true(dt_space_valid(&s, &p));
        int n = dt_space_neighbours(&s, &p, nb);
        assert_true(n >= 0 && n <= 2 * s.nknobs);
        for (int i = 0; i < n; i++) {
            int diff = 0;
            for (int k = 0; k < s.nknobs; k++) {
                int d = nb[i].opt[k] - p.opt[k];
                assert_true(d >= -1 && d <= 1);
                diff += d != 0;
            }
            assert_int_equal(diff, 1);
            assert_true(dt_space_valid(&s, &nb[i]));
        }
    }
    gsl_rng_free(rng);
    dt_space_free(&s);
}

static void test_cuda_thread_limit(void **state)
{
    (void)state;
    dt_task t = conv_task(64, 56, 64, 3, 1, 1);
    dt_space s;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, NULL), 0);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    int invalid = 0, over_limit = 0;
    for (int i = 0; i < 2000; i++) {
        dt_point p;
        dt_space_point(&s, gsl_rng_get(rng) % s.size, &p);
        int threads = dt_space_get(&s, &p, "tile_f", 2, 0) * dt_space_get(&s, &p, "tile_y", 2, 0) *
                      dt_space_get(&s, &p, "tile_x", 2, 0);
        bool valid = dt_space_valid(&s, &p);
        assert_true(threads <= 1024 || !valid);
        over_limit += threads > 1024;
        invalid += !valid;
    }
    assert_true(over_limit > 0);   /* the thread limit was exercised */
    assert_true(invalid > 0);
    assert_int_equal(dt_space_get(&s, &(dt_point){ 0 }, "no_such_knob", 0, -3), -3);
    gsl_rng_free(rng);
    dt_space_free(&s);
}

/* Whether some point of s is valid, by index order up to the first one
 * (the spaces here are too large to count whole). */
static bool has_valid_point(const dt_space *s)
{
    dt_point p;
    for (uint64_t i = 0; i < s->size; i++) {
        dt_space_point(s, i, &p);
        if (dt_space_valid(s, &p))
            return true;
    }
    return false;
}

static void test_every_kind_every_target(void **state)
{
    (void)state;
    dt_task tasks[4] = {
        conv_task(16, 14, 32, 3, 1, 1),
        { .kind = DT_OP_DEPTHWISE_CONV2D, .count = 1,
          .conv = { 1, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0 } },
        { .kind = DT_OP_DENSE, .count = 1, .mm = { 1, 1, 64, 256 } },
        { .kind = DT_OP_BATCH_MATMUL, .count = 1, .mm = { 4, 16, 24, 8 } },
    };
    for (int k = 0; k < 4; k++) {
        assert_int_equal(dt_task_finish(&tasks[k], NULL), 0);
        for (int target = 0; target < DT_TARGET_COUNT; target++) {
            dt_space s;
            assert_int_equal(dt_target_space_init(&s, &tasks[k], (dt_target)target, NULL), 0);
            assert_true(s.size > 1);
            assert_true(has_valid_point(&s));
            char buf[256];
            dt_point p = { 0 };
            dt_space_point_str(&s, &p, buf, sizeof buf);
            assert_non_null(strstr(buf, s.knobs[0].name));
            dt_space_free(&s);
        }
    }
    dt_target tg;
    assert_int_equal(dt_target_parse("cuda", &tg), 0);
    assert_int_equal(tg, DT_TARGET_CUDA);
    assert_int_equal(dt_target_parse("tpu", &tg), DT_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_factorisation_counts),
        cmocka_unit_test(test_split_rows_multiply_to_axis),
        cmocka_unit_test(test_cuda_conv_size),
        cmocka_unit_test(test_cpu_conv_size),
        cmocka_unit_test(test_cpu_vec_follows_width),
        cmocka_unit_test(test_index_round_trip),
        cmocka_unit_test(test_parse_printed_knobs),
        cmocka_unit_test(test_plane_points_are_canonical),
        cmocka_unit_test(test_features_and_coords),
        cmocka_unit_test(test_neighbours),
        cmocka_unit_test(test_cuda_thread_limit),
        cmocka_unit_test(test_every_kind_every_target),
    };
    return cmocka_run_group_tests_name("space", tests, NULL, NULL);
}
