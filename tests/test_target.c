/* test_target.c — the target table: names and ids round trip, the backend
 * a run measures with, the measurement process an argv[1] starts, spaces
 * built through a target's row, and copies of a space. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "dtune/backend.h"
#include "cpu_backend.h"
#include "cuda_backend.h"
#include "cpu_runner.h"
#include "dtune/target.h"

/* Every vector width, so the space does not depend on the machine. */
static const dt_space_opts every_width = { .cpu_max_vec = 16 };

static dt_task dense_task(void)
{
    dt_task t = { .kind = DT_OP_DENSE, .count = 1, .mm = { .b = 1, .m = 24, .n = 40, .k = 56 } };
    assert_int_equal(dt_task_finish(&t, NULL), 0);
    return t;
}

static void test_names_round_trip(void **state)
{
    (void)state;
    int n = 0;
    for (const char *name; (name = dt_target_at(n)) != NULL; n++) {
        dt_target id;
        assert_int_equal(dt_target_parse(name, &id), 0);
        assert_int_equal(id, n);
        assert_string_equal(dt_target_name(id), name);
        assert_string_equal(dt_target_get(id)->backend->name, name);
        assert_int_equal(dt_target_get(id)->backend->target, id);
    }
    assert_int_equal(n, DT_TARGET_COUNT);
    assert_null(dt_target_get(DT_TARGET_COUNT));
    assert_string_equal(dt_target_name(DT_TARGET_COUNT), "?");
}

static void test_backend_choice(void **state)
{
    (void)state;
    assert_ptr_equal(dt_backend_choose(DT_TARGET_CPU, ""), &dt_cpu_backend);
    assert_ptr_equal(dt_backend_choose(DT_TARGET_CUDA, NULL), &dt_cuda_backend);
    assert_ptr_equal(dt_backend_choose(DT_TARGET_CUDA, "replay"), &dt_replay_backend);
    assert_null(dt_backend_choose(DT_TARGET_CPU, "tpu"));
    /* every target's own backend by name, in target order, then replay */
    assert_string_equal(dt_backend_at(0), "cpu");
    assert_string_equal(dt_backend_at(1), "cuda");
    assert_string_equal(dt_backend_at(2), "replay");
    assert_null(dt_backend_at(3));
    assert_ptr_equal(dt_backend_find("cuda"), &dt_cuda_backend);
}

static void test_runner_dispatch(void **state)
{
    (void)state;
    const dt_target_i *cpu = dt_target_for_runner(DT_CPU_RUNNER_ARG);
    assert_ptr_equal(cpu, dt_target_get(DT_TARGET_CPU));
    assert_ptr_equal(cpu->runner_main, dt_cpu_runner_main);
    const dt_target_i *cuda = dt_target_for_runner(DT_CUDA_RUNNER_ARG);
    assert_ptr_equal(cuda, dt_target_get(DT_TARGET_CUDA));
    assert_ptr_equal(cuda->runner_main, dt_cuda_backend_runner_main);
    assert_null(dt_target_for_runner("tune"));
    assert_null(dt_target_for_runner(""));
}

static void test_space_through_target(void **state)
{
    (void)state;
    dt_task t = dense_task();
    dt_space s;
    dt_error err = { 0 };
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &every_width, &err), 0);
    assert_int_equal(s.target, DT_TARGET_CPU);
    assert_true(s.size > 1);
    dt_space_free(&s);
    t.kind = DT_OP_KIND_COUNT;
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CPU, &err), DT_ENOTSUP);
    assert_non_null(strstr(err.msg, "no cpu template"));
    t = dense_task();
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_COUNT, &err), DT_ENOTSUP);
    /* an epilogue: the CPU target generates it, the CUDA target says it does not */
    t.epilogue = (dt_task_epilogue){ .bias = true, .act = DT_ACT_RELU };
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &every_width, &err), 0);
    dt_space_free(&s);
    assert_int_equal(dt_target_space_init(&s, &t, DT_TARGET_CUDA, &err), DT_ENOTSUP);
    assert_non_null(strstr(err.msg, "does not generate a task's epilogue (bias+relu)"));
}

static void test_space_copy(void **state)
{
    (void)state;
    dt_task t = dense_task();
    dt_space s, c;
    assert_int_equal(dt_target_space_init_opts(&s, &t, DT_TARGET_CPU, &every_width, NULL), 0);
    assert_int_equal(dt_space_copy(&c, &s), 0);
    assert_int_equal(c.size, s.size);
    assert_int_equal(c.nknobs, s.nknobs);
    for (int i = 0; i < s.nknobs; i++) {
        size_t n = (size_t)s.knobs[i].noptions * (size_t)s.knobs[i].parts;
        assert_ptr_not_equal(c.knobs[i].options, s.knobs[i].options);
        assert_memory_equal(c.knobs[i].options, s.knobs[i].options, n * sizeof(int));
    }
    int64_t valid = dt_space_count_valid(&s, 10000000);
    assert_true(valid > 0 && (uint64_t)valid < s.size);  /* the validity rule is shared too */
    dt_space_free(&s);                                   /* the copy outlives the original */
    assert_int_equal(dt_space_count_valid(&c, 10000000), valid);
    dt_space_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_backend_choice),
        cmocka_unit_test(test_runner_dispatch),
        cmocka_unit_test(test_space_through_target),
        cmocka_unit_test(test_space_copy),
    };
    return cmocka_run_group_tests_name("target", tests, NULL, NULL);
}
