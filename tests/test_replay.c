/* test_replay.c — the synthetic replay backend: deterministic, noisy at the
 * stated level, a planted tenth of failures, and reachable through the
 * backend table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "dtune/backend.h"
#include "dtune/target.h"
#include "replay_backend.h"

/* Every vector width, so the spaces do not depend on the machine. */
static const dt_space_opts every_width = { .cpu_max_vec = 16 };

static dt_space make_space(void)
{
    dt_task t = { .kind = DT_OP_CONV2D, .count = 1,
                  .conv = { .n = 1, .c_in = 32, .h = 27, .w = 27, .c_out = 128, .kh = 3, .kw = 3,
                            .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1 } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    dt_space s;
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &every_width, NULL), 0);
    return s;
}

static void test_deterministic_and_seeded(void **state)
{
    (void)state;
    dt_space s = make_space();
    dt_point p;
    int differ = 0;
    for (uint64_t i = 0; i < s.size; i += 997) {
        dt_space_point(&s, i, &p);
        dt_measure_result a, b;
        dt_replay_backend_measure(&s, &p, 3, 17, &a);
        dt_replay_backend_measure(&s, &p, 3, 17, &b);
        assert_int_equal(a.result, b.result);
        assert_true(a.gflops == b.gflops);
        differ += dt_replay_backend_true_gflops(&s, &p, 3) != dt_replay_backend_true_gflops(&s, &p, 4);
    }
    assert_true(differ > 0);
    dt_space_free(&s);
}

static void test_noise_level_and_bounds(void **state)
{
    (void)state;
    dt_space s = make_space();
    dt_point p;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    do
        dt_space_random(&s, rng, &p);
    while (dt_replay_backend_true_gflops(&s, &p, 9) <= 0);
    double truth = dt_replay_backend_true_gflops(&s, &p, 9), sum = 0, sum2 = 0;
    int n = 2000;
    for (int i = 0; i < n; i++) {
        dt_measure_result r;
        dt_replay_backend_measure(&s, &p, 9, (uint64_t)i, &r);
        assert_int_equal(r.result, DT_RESULT_OK);
        double rel = r.gflops / truth - 1.0;
        sum += rel;
        sum2 += rel * rel;
    }
    double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    assert_true(fabs(mean) < 0.005);
    assert_true(fabs(sd - 0.03) < 0.005);
    assert_true(truth <= dt_replay_backend_peak_gflops(&s.task));
    gsl_rng_free(rng);
    dt_space_free(&s);
}

static void test_failure_fraction(void **state)
{
    (void)state;
    dt_space s = make_space();
    int valid = 0, failed = 0;
    dt_point p;
    for (uint64_t i = 0; i < s.size; i++) {
        dt_space_point(&s, i, &p);
        if (!dt_space_valid(&s, &p))
            continue;
        valid++;
        failed += dt_replay_backend_true_gflops(&s, &p, 1) == 0.0;
    }
    double frac = (double)failed / valid;
    assert_true(frac > 0.08 && frac < 0.12);
    dt_space_free(&s);
}

static void test_through_backend_table(void **state)
{
    (void)state;
    const dt_backend_i *b = dt_backend_find("replay");
    assert_non_null(b);
    assert_null(dt_backend_find("nonexistent"));
    dt_space s = make_space();
    dt_backend_params params = { .seed = 21 };
    void *st = NULL;
    assert_int_equal(b->open(&params, &st, NULL), 0);
    int ok = 0, invalid = 0;
    for (uint64_t i = 0; i < 300; i++) {
        dt_point p;
        dt_space_point(&s, (i * 7919) % s.size, &p);
        dt_artifact art;
        dt_measure_result r;
        assert_int_equal(b->build(st, &s, &p, &art, NULL), 0);
        assert_int_equal(b->run(st, &s, &p, &art, &r, NULL), 0);
        bool valid = dt_space_valid(&s, &p);
        invalid += !valid;
        assert_true(valid || r.result == DT_RESULT_INVALID);
        if (r.result == DT_RESULT_OK) {
            ok++;
            assert_true(r.gflops > 0 && r.latency_s > 0);
            assert_true(fabs(r.latency_s * r.gflops * 1e9 - s.task.flops) < 1e-6 * s.task.flops);
        } else {
            assert_true(r.gflops == 0);
        }
    }
    assert_true(ok > 50);
    assert_true(invalid > 0);   /* the invalid-config rule was exercised */
    b->close(st);
    dt_space_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_and_seeded),
        cmocka_unit_test(test_noise_level_and_bounds),
        cmocka_unit_test(test_failure_fraction),
        cmocka_unit_test(test_through_backend_table),
    };
    return cmocka_run_group_tests_name("replay", tests, NULL, NULL);
}
