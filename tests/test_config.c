/* test_config.c — config.yaml: defaults, a full file, the repository's
 * config.yaml, every kind of problem as exactly one FILE:LINE:COL message,
 * relative paths, cross-key rules, dt_config_set, the key table and
 * `dtune check`.
 *
 * Configs written here go to a fresh folder under /tmp (removed at the end);
 * the bad configs in tests/data/ state their expected messages in their first
 * lines ("# expect: LINE:COL: text"). Runs from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtune/cli.h"
#include "dtune/backend.h"
#include "dtune/config.h"
#include "dtune/util.h"
#include "dtune/target.h"
#include "support/run_cmd.h"

static const char tiny_model[] =
    "name: tiny_test\n"
    "batch: 1\n"
    "ops:\n"
    "  - {name: fc, kind: dense, input: [1, 64], weight: [32, 64], count: 3}\n"
    "  - {name: fc2, kind: dense, input: [1, 32], weight: [10, 32], count: 1}\n";

typedef struct fixture {
    char dir[64];              /* /tmp/dtune_test_config_XXXXXX */
    char path[128];            /* scratch: the last file written */
} fixture;

static const char *write_file(fixture *fx, const char *name, const char *text)
{
    snprintf(fx->path, sizeof fx->path, "%s/%s", fx->dir, name);
    FILE *f = fopen(fx->path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    return fx->path;
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx)
        return -1;
    snprintf(fx->dir, sizeof fx->dir, "/tmp/dtune_test_config_XXXXXX");
    if (!mkdtemp(fx->dir))
        return -1;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    int rc = dt_test_remove_tree(fx->dir);
    free(fx);
    return rc;
}

static int count_lines(const char *msg)
{
    int n = msg[0] ? 1 : 0;
    for (const char *p = msg; *p; p++)
        n += *p == '\n';
    return n;
}

/* Loads text as NAME.yaml in the fixture folder (with m.yaml, the tiny model,
 * beside it) and returns the return code; err gets the messages. */
static int load_text(fixture *fx, const char *text, dt_config *cfg, dt_error *err)
{
    char path[160];
    write_file(fx, "m.yaml", tiny_model);
    snprintf(path, sizeof path, "%s", write_file(fx, "config.yaml", text));
    return dt_config_load(path, cfg, false, err);
}

/* Asserts err holds exactly one message, at line:col of the fixture's config,
 * containing text. */
static void assert_one_message(fixture *fx, const dt_error *err, int line, int col, const char *text)
{
    char prefix[192];
    snprintf(prefix, sizeof prefix, "%s/config.yaml:%d:%d: ", fx->dir, line, col);
    if (count_lines(err->msg) != 1 || strncmp(err->msg, prefix, strlen(prefix)) != 0 ||
        !strstr(err->msg, text))
        fail_msg("want one message '%s...%s', got:\n%s", prefix, text, err->msg);
}

/* ---- defaults and good files ---------------------------------------------------- */

/* The key table with cfg's values, as `dtune check --help` prints it (numbers
 * in digits that read back exactly); the caller frees it. */
static char *printed(const dt_config *cfg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    dt_config_print_keys(f, cfg, "VALUE");
    assert_int_equal(fclose(f), 0);
    return text;
}

/* Every key has the same value in a and b (compared by value: the padding
 * between fields is not part of a config), and so do the file paths. */
static void assert_same_config(const dt_config *a, const dt_config *b)
{
    char *ta = printed(a), *tb = printed(b);
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
    assert_string_equal(a->path, b->path);
    assert_string_equal(a->model, b->model);
}

static void test_defaults(void **state)
{
    dt_config c;
    dt_config_defaults(&c);
    assert_string_equal(c.model, "");
    assert_string_equal(c.path, "");
    assert_int_equal(c.target, DT_TARGET_CPU);
    assert_string_equal(c.backend, "");
    assert_true(c.seed == 1);
    assert_true(c.budget.total_seconds == 600 && c.budget.slot_seconds == 10);
    assert_true(c.budget.slot_trials == 0 && c.budget.target_latency_ms == 0);
    assert_true(c.budget.max_slots == 0);
    assert_string_equal(c.scheduler.policy, "dynatune");
    assert_true(c.scheduler.ucb_c == 0.05 && c.scheduler.gamma == 1e9);
    assert_true(c.scheduler.prior_slots == 100 && c.scheduler.ceiling == 1.2);
    assert_true(c.scheduler.bandwidth_gbs == 0);
    assert_int_equal(c.scheduler.headroom, DT_SCHED_HEADROOM_COST_MODEL);
    assert_true(c.scheduler.finish_after == 200 && c.scheduler.epsilon == 0.05);
    assert_true(c.scheduler.softmax_temperature == 1);
    assert_string_equal(c.scheduler.hazard, "0.46,0.050,0.015,0.0070,0.0064,0.0064,0.0044,0.0029");
    assert_string_equal(c.scheduler.prior_hazard, "0.80,0.35,0.092,0.047,0.035,0.035,0.018,0.018");
    assert_int_equal(c.belief.family, DT_CURVE_LOG_POWER);
    assert_true(c.belief.walkers == 10 && c.belief.steps == 500);
    assert_true(c.belief.burn_in == 250 && c.belief.jump_threshold == 0.20);
    assert_true(c.belief.min_segment_points == 10 && c.belief.threads == 2);
    assert_true(c.belief.min_points == 5 && c.belief.level_max == 1.0 && c.belief.ball_scale == 1e-4);
    assert_string_equal(c.tuner.strategy, "chameleon");
    assert_true(c.tuner.batch_size == 64 && c.tuner.random_fraction == 0.05);
    assert_true(c.tuner.neighbours == 4 && c.tuner.transfer);
    assert_true(c.budget.retime_top == 4 && c.budget.retime_rounds == 5);
    const dt_ppo_params *p = &c.tuner.ppo;
    assert_true(p->learning_rate == 1e-3 && p->gamma == 0.9 && p->gae_lambda == 0.99);
    assert_true(p->epochs == 3 && p->clip == 0.3 && p->value_coef == 1.0 && p->entropy_coef == 0.1);
    assert_true(p->episodes == 128 && p->max_steps == 500 && p->hidden == 64);
    assert_true(p->episodes_per_config == 16);
    assert_true(c.tuner.sampling.knee_threshold == 2.5 && c.tuner.sampling.k_min == 4);
    assert_string_equal(c.tuner.cost_model.objective, "rank:pairwise");
    assert_true(c.tuner.cost_model.threads == 1 && c.tuner.cost_model.max_depth == 3);
    assert_true(c.tuner.cost_model.eta == 0.3 && c.tuner.cost_model.rounds == 100);
    const dt_measure_params *m = &c.measure;
    assert_true(m->cv_threshold == 0.10 && m->min_batches == 3 && m->micro_batch == 0);
    assert_true(m->max_repeats == 20 && m->timeout_seconds == 10 && m->builders == 2);
    assert_true(m->threads == 1 && m->check_output && m->tolerance == 1e-3 && !m->flush_l2);
    assert_int_equal(m->cache_mb, 1024);
    /* compile limit: 0 = max(60, 6 x timeout_seconds) */
    assert_true(m->compile_timeout_seconds == 0 && dt_measure_compile_timeout(m) == 60);
    dt_measure_params slow = *m;
    slow.timeout_seconds = 20;
    assert_true(dt_measure_compile_timeout(&slow) == 120);
    slow.compile_timeout_seconds = 7;
    assert_true(dt_measure_compile_timeout(&slow) == 7);
    assert_string_equal(c.output_dir, "runs/latest");
    assert_string_equal(c.warm_start, "");
    assert_string_equal(c.server_listen, "127.0.0.1:8080");
}

static void test_defaults_validate_but_for_model(void **state)
{
    dt_config c;
    dt_error err;
    dt_config_defaults(&c);
    assert_int_equal(dt_config_validate(&c, &err), DT_EINVAL);
    assert_int_equal(count_lines(err.msg), 1);
    assert_string_equal(err.msg, "model: must not be empty");
    assert_int_equal(dt_config_set(&c, "model", "models/tiny.yaml", &err), 0);
    assert_int_equal(dt_config_validate(&c, &err), 0);
    assert_string_equal(err.msg, "");
}

static const char full_config[] =
    "# every key, none at its default\n"
    "model: m.yaml\n"
    "target: cuda\n"
    "backend: replay\n"
    "seed: 18446744073709551615\n"
    "budget: {total_seconds: 7200.5, slot_seconds: 0, slot_trials: 96, target_latency_ms: 1.75}\n"
    "scheduler:\n"
    "  policy: eps_greedy\n"
    "  ucb_c: 0.2\n"
    "  gamma: 12345.5\n"
    "  finish_after: 333\n"
    "  epsilon: 0.125\n"
    "  softmax_temperature: 0.37\n"
    "  belief: {curve: pow4, walkers: 16, steps: 1200, burn_in: 600, jump_threshold: 0.35,\n"
    "           min_segment_points: 7, threads: 5}\n"
    "tuner:\n"
    "  strategy: autotvm\n"
    "  batch_size: 48\n"
    "  random_fraction: 0.15\n"
    "  ppo: {learning_rate: 3.5e-4, gamma: 0.97, gae_lambda: 0.93, epochs: 5, clip: 0.15,\n"
    "        value_coef: 0.55, entropy_coef: 0.015, episodes: 33, max_steps: 77, hidden: 96,\n"
    "        episodes_per_config: 5}\n"
    "  sampling: {knee_threshold: 3.25, k_min: 6}\n"
    "  cost_model: {objective: reg:squarederror, threads: 3, max_depth: 6, eta: 0.125, rounds: 250}\n"
    "measure:\n"
    "  cv_threshold: 0.035\n"
    "  min_batches: 4\n"
    "  micro_batch: 17\n"
    "  max_repeats: 41\n"
    "  timeout_seconds: 2.5\n"
    "  compile_timeout_seconds: 30\n"
    "  builders: 7\n"
    "  threads: 3\n"
    "  check_output: no\n"
    "  tolerance: 2.5e-4\n"
    "  flush_l2: True\n"
    "  cuda_device: 3\n"
    "output: {dir: /var/tmp/dtune_run, warm_start: m.yaml}\n"
    "server: {listen: \"[::1]:0\"}\n";

static void test_full_config(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    char want[160];
    int rc = load_text(fx, full_config, &c, &err);
    if (rc)
        fail_msg("%s", err.msg);
    snprintf(want, sizeof want, "%s/m.yaml", fx->dir);
    assert_string_equal(c.model, want);
    assert_string_equal(c.warm_start, want);
    assert_string_equal(c.output_dir, "/var/tmp/dtune_run");
    assert_int_equal(c.target, DT_TARGET_CUDA);
    assert_string_equal(c.backend, "replay");
    assert_true(c.seed == UINT64_MAX);
    assert_true(c.budget.total_seconds == 7200.5 && c.budget.slot_seconds == 0);
    assert_true(c.budget.slot_trials == 96 && c.budget.target_latency_ms == 1.75);
    assert_string_equal(c.scheduler.policy, "eps_greedy");
    assert_true(c.scheduler.ucb_c == 0.2 && c.scheduler.gamma == 12345.5);
    assert_true(c.scheduler.finish_after == 333 && c.scheduler.epsilon == 0.125);
    assert_true(c.scheduler.softmax_temperature == 0.37);
    const dt_belief_params *b = &c.belief;
    assert_int_equal(b->family, DT_CURVE_POW4);
    assert_true(b->walkers == 16 && b->steps == 1200 && b->burn_in == 600);
    assert_true(b->jump_threshold == 0.35 && b->min_segment_points == 7 && b->threads == 5);
    assert_string_equal(c.tuner.strategy, "autotvm");
    assert_true(c.tuner.batch_size == 48 && c.tuner.random_fraction == 0.15);
    const dt_ppo_params *p = &c.tuner.ppo;
    assert_true(p->learning_rate == 3.5e-4 && p->gamma == 0.97 && p->gae_lambda == 0.93);
    assert_true(p->epochs == 5 && p->clip == 0.15 && p->value_coef == 0.55);
    assert_true(p->entropy_coef == 0.015 && p->episodes == 33 && p->max_steps == 77);
    assert_true(p->hidden == 96 && p->episodes_per_config == 5);
    assert_true(c.tuner.sampling.knee_threshold == 3.25 && c.tuner.sampling.k_min == 6);
    const dt_costmodel_params *cm = &c.tuner.cost_model;
    assert_string_equal(cm->objective, "reg:squarederror");
    assert_true(cm->threads == 3 && cm->max_depth == 6 && cm->eta == 0.125 && cm->rounds == 250);
    const dt_measure_params *m = &c.measure;
    assert_true(m->cv_threshold == 0.035 && m->min_batches == 4 && m->micro_batch == 17);
    assert_true(m->max_repeats == 41 && m->timeout_seconds == 2.5 && m->builders == 7);
    assert_true(m->compile_timeout_seconds == 30 && dt_measure_compile_timeout(m) == 30);
    assert_true(m->threads == 3 && !m->check_output && m->tolerance == 2.5e-4 && m->flush_l2);
    assert_int_equal(m->cuda_device, 3);
    assert_string_equal(c.server_listen, "[::1]:0");
    assert_int_equal(dt_config_validate(&c, &err), 0);
}

/* The shipped config.yaml is the defaults with a five-minute budget (its
 * slots are the default 10 s). */
static void test_repository_config(void **state)
{
    dt_config loaded, want;
    dt_error err;
    int rc = dt_config_load("config.yaml", &loaded, true, &err);
    if (rc)
        fail_msg("%s", err.msg);
    dt_config_defaults(&want);
    snprintf(want.path, sizeof want.path, "config.yaml");
    snprintf(want.model, sizeof want.model, "models/resnet18.yaml");
    want.budget.total_seconds = 300;
    assert_same_config(&loaded, &want);
}

static void test_empty_values_and_sections(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    int rc = load_text(fx, "model: m.yaml\nserver:\noutput: {warm_start: }\nbackend: ~\n"
                           "measure: {check_output: OFF, flush_l2: yes}\n", &c, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_string_equal(c.server_listen, "127.0.0.1:8080");
    assert_string_equal(c.warm_start, "");
    assert_string_equal(c.backend, "");
    assert_false(c.measure.check_output);
    assert_true(c.measure.flush_l2);
    /* which keys the file set: the MPI workers keep a measure.cuda_device set there */
    assert_true(dt_config_given(&c, "measure.flush_l2"));
    assert_false(dt_config_given(&c, "measure.cuda_device"));
    assert_false(dt_config_given(&c, "measure.no_such_key"));
    assert_int_equal(dt_config_set(&c, "measure.cuda_device", "0", &err), 0);
    assert_true(dt_config_given(&c, "measure.cuda_device"));
}

/* ---- one problem, one message ----------------------------------------------------- */

static void test_unknown_key(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    assert_int_equal(load_text(fx, "model: m.yaml\nbudget:\n  total_seconds: 300\n  slot_secs: 20\n",
                               &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 4, 3, "unknown key 'slot_secs' in budget (known: total_seconds, "
                       "slot_seconds, slot_trials, max_slots, target_latency_ms, retime_top, retime_rounds)");
    assert_true(c.budget.total_seconds == 300);
    assert_int_equal(load_text(fx, "model: m.yaml\nmodle: x\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 1, "unknown key 'modle' (known: model, target, backend, seed, "
                       "budget, scheduler, tuner, measure, output, server, db)");
}

static void test_wrong_type(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    assert_int_equal(load_text(fx, "model: m.yaml\nmeasure:\n  cv_threshold: abc\n", &c, &err),
                     DT_EINVAL);
    assert_one_message(fx, &err, 3, 17, "measure.cv_threshold: expected a number, got 'abc'");
    assert_true(c.measure.cv_threshold == 0.10);
    assert_int_equal(load_text(fx, "model: m.yaml\ntuner: {ppo: {epochs: [3]}}\n", &c, &err),
                     DT_EINVAL);
    assert_one_message(fx, &err, 2, 23, "tuner.ppo.epochs: expected an integer, got a list");
    assert_int_equal(load_text(fx, "model: m.yaml\nseed: \"7\"\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 7, "seed: expected a non-negative integer, got the quoted string '7'");
    assert_int_equal(load_text(fx, "model: m.yaml\nmeasure: 3\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 10, "measure: expected a mapping of cv_threshold, min_batches");
    assert_int_equal(load_text(fx, "model: m.yaml\nmeasure: {threads: 2.5}\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 20, "measure.threads: expected an integer, got '2.5'");
    assert_int_equal(load_text(fx, "model: m.yaml\nmeasure: {flush_l2: 1}\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 21, "measure.flush_l2: expected true or false, got '1'");
    assert_int_equal(load_text(fx, "model: m.yaml\nbudget: {total_seconds: }\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 25, "budget.total_seconds: expected a number, got nothing");
    assert_int_equal(load_text(fx, "model: m.yaml\nbudget: {total_seconds: 1e999}\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 25, "budget.total_seconds: '1e999' is out of range");
    assert_int_equal(load_text(fx, "model: m.yaml\nbudget:\n\ttotal_seconds: 10\n", &c, &err), DT_EPARSE);
    assert_one_message(fx, &err, 3, 1, "a tab; YAML indents with spaces only");
}

static void test_out_of_range(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    assert_int_equal(load_text(fx, "model: m.yaml\nmeasure:\n  min_batches: 3\n  cv_threshold: 1.5\n",
                               &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 4, 17, "measure.cv_threshold: 1.5 is out of range [0.001, 1]");
    assert_int_equal(load_text(fx, "model: m.yaml\nscheduler: {belief: {walkers: 1}}\n", &c, &err),
                     DT_EINVAL);
    assert_one_message(fx, &err, 2, 31, "scheduler.belief.walkers: 1 is out of range [2, 10000]");
    assert_int_equal(load_text(fx, "model: m.yaml\nmeasure: {cuda_device: -1}\n", &c, &err),
                     DT_EINVAL);
    assert_one_message(fx, &err, 2, 24, "measure.cuda_device: -1 is out of range [0, 1000000]");
    assert_int_equal(load_text(fx, "model: m.yaml\ntuner: {batch_size: 99999999999}\n", &c, &err),
                     DT_EINVAL);
    assert_one_message(fx, &err, 2, 21, "tuner.batch_size: 99999999999 is out of range [1, 65536]");
    assert_int_equal(load_text(fx, "model: m.yaml\nbudget: {retime_top: 65}\n", &c, &err),
                     DT_EINVAL);
    assert_one_message(fx, &err, 2, 22, "budget.retime_top: 65 is out of range [0, 64]");
    assert_int_equal(load_text(fx, "model: m.yaml\nserver: {listen: \"localhost:http\"}\n", &c, &err),
                     DT_EINVAL);
    assert_one_message(fx, &err, 2, 18, "server.listen: 'localhost:http' is not HOST:PORT or off");
    assert_int_equal(load_text(fx, "model: m.yaml\ntarget: gpu\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 9, "target: 'gpu' is not one of cpu, cuda");
}

static void test_missing_model_file(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    char want[192];
    assert_int_equal(load_text(fx, "target: cpu\nmodel: models/nope.yaml\n", &c, &err), DT_ENOTFOUND);
    snprintf(want, sizeof want, "model file '%s/models/nope.yaml' not found", fx->dir);
    assert_one_message(fx, &err, 2, 8, want);
    assert_int_equal(load_text(fx, "target: cpu\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 1, 1, "missing required key 'model'");
    assert_int_equal(load_text(fx, "model: .\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 1, 8, "' is a folder");
}

static void test_syntax_error(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    assert_int_equal(load_text(fx, "model: m.yaml\nbudget:\n  total_seconds: 300\n slot_seconds: 20\n",
                               &c, &err), DT_EPARSE);
    assert_one_message(fx, &err, 4, 2, "YAML syntax error: did not find expected key");
    assert_int_equal(load_text(fx, "model: m.yaml\nbudget: {total_seconds: 300\n", &c, &err), DT_EPARSE);
    assert_int_equal(count_lines(err.msg), 1);
    assert_non_null(strstr(err.msg, "YAML syntax error"));
}

static void test_duplicate_key(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    assert_int_equal(load_text(fx, "model: m.yaml\nseed: 5\nbudget: {}\nseed: 6\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 4, 1, "duplicate key 'seed' (first at 2:1)");
    assert_true(c.seed == 1);      /* refused whole at load, as a syntax error is */
}

static void test_two_errors_two_lines(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    char first[192], second[192];
    assert_int_equal(load_text(fx, "model: m.yaml\nbudget: {slot_secs: 20}\nmeasure:\n  builders: lots\n",
                               &c, &err), DT_EINVAL);
    assert_int_equal(count_lines(err.msg), 2);
    snprintf(first, sizeof first, "%s/config.yaml:2:10: unknown key 'slot_secs' in budget", fx->dir);
    snprintf(second, sizeof second, "\n%s/config.yaml:4:13: measure.builders: expected an integer, "
             "got 'lots'", fx->dir);
    assert_int_equal(strncmp(err.msg, first, strlen(first)), 0);
    assert_non_null(strstr(err.msg, second));
}

static void test_rules_blame_the_written_key(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    assert_int_equal(load_text(fx, "model: m.yaml\nscheduler:\n  belief: {steps: 200}\n", &c, &err),
                     DT_EINVAL);
    assert_one_message(fx, &err, 3, 19, "scheduler.belief.burn_in (250) must be below "
                       "scheduler.belief.steps (200)");
    assert_int_equal(load_text(fx, "model: m.yaml\nmeasure: {max_repeats: 8, min_batches: 9}\n", &c,
                               &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 40, "measure.min_batches (9) must not exceed measure.max_repeats (8)");
    assert_int_equal(load_text(fx, "model: m.yaml\nbudget: {slot_seconds: 0}\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 24, "slot_seconds or slot_trials must be above 0");
    assert_int_equal(load_text(fx, "model: m.yaml\ntarget: cuda\nbackend: cpu\n", &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 3, 10, "backend 'cpu' cannot measure target 'cuda'");
    /* a rule over a value already reported says nothing more */
    assert_int_equal(load_text(fx, "model: m.yaml\nscheduler: {belief: {steps: abc, burn_in: 600}}\n",
                               &c, &err), DT_EINVAL);
    assert_one_message(fx, &err, 2, 29, "scheduler.belief.steps: expected an integer, got 'abc'");
}

/* ---- paths and the model ------------------------------------------------------------ */

static void test_relative_paths_follow_the_config(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    char sub[96], cfg_path[160], want[192];
    write_file(fx, "m.yaml", tiny_model);
    snprintf(sub, sizeof sub, "%s/sub", fx->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(cfg_path, sizeof cfg_path, "%s", write_file(fx, "sub/run.yaml",
             "model: ../m.yaml\noutput: {dir: out}\n"));
    int rc = dt_config_load(cfg_path, &c, true, &err);
    if (rc)
        fail_msg("%s", err.msg);
    snprintf(want, sizeof want, "%s/sub/../m.yaml", fx->dir);
    assert_string_equal(c.model, want);
    snprintf(want, sizeof want, "%s/sub/out", fx->dir);
    assert_string_equal(c.output_dir, want);
    assert_string_equal(c.path, cfg_path);
    snprintf(want, sizeof want, "model: %s/m.yaml\n", fx->dir);
    write_file(fx, "sub/abs.yaml", want);
    assert_int_equal(dt_config_load(fx->path, &c, true, &err), 0);
    snprintf(want, sizeof want, "%s/m.yaml", fx->dir);
    assert_string_equal(c.model, want);
    assert_int_equal(remove(fx->path), 0);
    assert_int_equal(remove(cfg_path), 0);
}

static void test_model_problems_are_appended(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    char want[192];
    write_file(fx, "bad_model.yaml", "name: broken\nbatch: 1\nops:\n  - {kind: conv3d, count: 1}\n");
    snprintf(want, sizeof want, "%s", write_file(fx, "config.yaml",
             "model: bad_model.yaml\nseed: x\n"));
    assert_int_equal(dt_config_load(want, &c, false, &err), DT_EINVAL);
    assert_int_equal(count_lines(err.msg), 1);
    assert_int_equal(dt_config_load(want, &c, true, &err), DT_EINVAL);
    assert_int_equal(count_lines(err.msg), 2);
    snprintf(want, sizeof want, "\n%s/bad_model.yaml:4:", fx->dir);
    assert_non_null(strstr(err.msg, want));
    assert_non_null(strstr(err.msg, "conv3d"));
}

static void test_missing_config_file(void **state)
{
    dt_config c;
    dt_error err;
    assert_int_equal(dt_config_load("/tmp/dtune_no_such_dir/config.yaml", &c, false, &err),
                     DT_ENOTFOUND);
    assert_non_null(strstr(err.msg, "/tmp/dtune_no_such_dir/config.yaml: cannot open config file"));
}

/* Every problem reaches the report stream in full, even past err->msg's size. */
static void test_many_problems_all_reported(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    char text[4096] = "model: m.yaml\n";
    for (int i = 0; i < 60; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "unknown_%d: 1\n", i);
    write_file(fx, "m.yaml", tiny_model);
    write_file(fx, "config.yaml", text);
    FILE *sink = tmpfile();
    assert_non_null(sink);
    assert_int_equal(dt_config_load_report(fx->path, &c, false, sink, &err), DT_EINVAL);
    rewind(sink);
    int lines = 0;
    for (int ch; (ch = fgetc(sink)) != EOF;)
        lines += ch == '\n';
    fclose(sink);
    assert_int_equal(lines, 60);
    assert_true(strlen(err.msg) < sizeof err.msg);
    assert_string_equal(err.msg + strlen(err.msg) - 3, "...");
}

/* ---- dt_config_set, validate, the key table ------------------------------------------ */

/* A choice key takes exactly its module table's names: every name sets, a
 * name outside is refused with all of them listed. */
static void check_choice_key(const char *key, dt_name_at_fn name_at)
{
    char all[512];
    dt_config c;
    dt_error err;
    dt_config_defaults(&c);
    int n = 0;
    for (; name_at(n); n++)
        if (dt_config_set(&c, key, name_at(n), &err) != 0)
            fail_msg("%s = %s: %s", key, name_at(n), err.msg);
    assert_true(n >= 2);
    assert_int_equal(dt_config_set(&c, key, "no_such_name", &err), DT_EINVAL);
    dt_names_join(name_at, all, sizeof all);
    assert_non_null(strstr(err.msg, all));
}

static void test_choices_come_from_the_modules(void **state)
{
    check_choice_key("target", dt_target_at);
    check_choice_key("backend", dt_backend_at);
    check_choice_key("scheduler.policy", dt_scheduler_policy_at);
    check_choice_key("scheduler.belief.curve", dt_curve_family_at);
    check_choice_key("tuner.strategy", dt_tuner_strategy_at);
    check_choice_key("tuner.cost_model.objective", dt_costmodel_objective_at);
    /* the default of each is its table's first */
    dt_config c;
    dt_config_defaults(&c);
    assert_string_equal(c.scheduler.policy, dt_scheduler_policy_at(0));
    assert_string_equal(c.tuner.strategy, dt_tuner_strategy_at(0));
    assert_string_equal(c.tuner.cost_model.objective, dt_costmodel_objective_at(0));
}

/* dt_config_defaults composes the modules' own defaults. */
static void test_defaults_are_the_modules(void **state)
{
    dt_config c;
    dt_config_defaults(&c);
    dt_scheduler_params s = dt_scheduler_params_default();
    dt_belief_params b = dt_belief_params_default();
    dt_tuner_params t = dt_tuner_params_default();
    dt_measure_params m = dt_measure_params_default();
    assert_string_equal(c.scheduler.hazard, s.hazard);
    assert_true(c.scheduler.ucb_c == s.ucb_c && c.scheduler.prior_slots == s.prior_slots);
    assert_true(c.belief.walkers == b.walkers && c.belief.threads == b.threads);
    assert_true(c.belief.min_points == b.min_points && c.belief.ball_scale == b.ball_scale);
    assert_true(c.tuner.batch_size == t.batch_size && c.tuner.ppo.hidden == t.ppo.hidden);
    assert_true(c.tuner.sampling.k_min == t.sampling.k_min);
    assert_true(c.tuner.cost_model.rounds == t.cost_model.rounds);
    assert_true(c.measure.cv_threshold == m.cv_threshold && c.measure.builders == m.builders);
    assert_true(dt_ppo_params_default().clip == t.ppo.clip);
    assert_true(c.tuner.ppo.episodes_per_config == t.ppo.episodes_per_config);
    assert_true(dt_sampling_params_default().knee_threshold == t.sampling.knee_threshold);
    assert_true(dt_costmodel_params_default().eta == t.cost_model.eta);
    assert_string_equal(c.db.path, dt_db_params_default().path);
}

/* db.path: a relative path is the config folder's, "off" stays "off". */
static void test_db_path(void **state)
{
    fixture *fx = *state;
    dt_config c;
    dt_error err;
    char want[200], resolved[DT_PATH_MAX];
    assert_int_equal(load_text(fx, "model: m.yaml\ndb: {path: tuning/x.db}\n", &c, &err), 0);
    snprintf(want, sizeof want, "%s/tuning/x.db", fx->dir);
    assert_string_equal(c.db.path, want);
    assert_int_equal(dt_db_resolve_path(&c.db, resolved, sizeof resolved, &err), 0);
    assert_string_equal(resolved, want);
    assert_int_equal(load_text(fx, "model: m.yaml\ndb: {path: off}\n", &c, &err), 0);
    assert_string_equal(c.db.path, "off");
    assert_int_equal(dt_db_resolve_path(&c.db, resolved, sizeof resolved, &err), 0);
    assert_string_equal(resolved, "");
    /* the default: $DTUNE_DB, else XDG_DATA_HOME, else HOME */
    dt_config_defaults(&c);
    char *saved = getenv(DT_DB_ENV) ? strdup(getenv(DT_DB_ENV)) : NULL;
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *xdg = getenv("XDG_DATA_HOME") ? strdup(getenv("XDG_DATA_HOME")) : NULL;
    unsetenv(DT_DB_ENV);
    setenv("XDG_DATA_HOME", "/srv/data", 1);
    assert_int_equal(dt_db_resolve_path(&c.db, resolved, sizeof resolved, &err), 0);
    assert_string_equal(resolved, "/srv/data/dtune/dtune.db");
    unsetenv("XDG_DATA_HOME");
    setenv("HOME", "/home/someone", 1);
    assert_int_equal(dt_db_resolve_path(&c.db, resolved, sizeof resolved, &err), 0);
    assert_string_equal(resolved, "/home/someone/.local/share/dtune/dtune.db");
    setenv(DT_DB_ENV, "/tmp/elsewhere.db", 1);
    assert_int_equal(dt_db_resolve_path(&c.db, resolved, sizeof resolved, &err), 0);
    assert_string_equal(resolved, "/tmp/elsewhere.db");
    const char *names[] = { DT_DB_ENV, "HOME", "XDG_DATA_HOME" };
    char *values[] = { saved, home, xdg };
    for (int i = 0; i < 3; i++) {
        if (values[i])
            setenv(names[i], values[i], 1);
        else
            unsetenv(names[i]);
        free(values[i]);
    }
}

static void test_set_and_validate(void **state)
{
    dt_config c;
    dt_error err;
    dt_config_defaults(&c);
    assert_int_equal(dt_config_set(&c, "scheduler.belief.steps", "900", &err), 0);
    assert_int_equal(c.belief.steps, 900);
    assert_int_equal(dt_config_set(&c, "target", "cuda", &err), 0);
    assert_int_equal(c.target, DT_TARGET_CUDA);
    assert_int_equal(dt_config_set(&c, "scheduler.headroom", "cost_model", &err), 0);
    assert_int_equal(c.scheduler.headroom, DT_SCHED_HEADROOM_COST_MODEL);
    assert_int_equal(dt_config_set(&c, "scheduler.headroom", "costmodel", &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "'costmodel' is not one of roofline, cost_model"));
    assert_int_equal(dt_config_set(&c, "measure.cv_threshold", "7", &err), DT_EINVAL);
    assert_string_equal(err.msg, "measure.cv_threshold: 7 is out of range [0.001, 1]");
    assert_true(c.measure.cv_threshold == 0.10);
    assert_int_equal(dt_config_set(&c, "measure.cv", "0.2", &err), DT_EINVAL);
    assert_non_null(strstr(err.msg, "unknown config key 'measure.cv'"));
    assert_int_equal(dt_config_set(&c, "budget", "3", &err), DT_EINVAL);
    assert_int_equal(dt_config_set(&c, "model", "/tmp/dtune_no_such.yaml", &err), DT_ENOTFOUND);
    assert_string_equal(c.model, "");
    assert_int_equal(dt_config_set(&c, "model", "models/tiny.yaml", &err), 0);
    assert_int_equal(dt_config_set(&c, "backend", "cuda", &err), 0);
    c.measure.min_batches = 50;
    c.budget.slot_seconds = 0;
    assert_int_equal(dt_config_validate(&c, &err), DT_EINVAL);
    assert_int_equal(count_lines(err.msg), 2);
    assert_non_null(strstr(err.msg, "measure.min_batches (50) must not exceed measure.max_repeats (20)"));
    assert_non_null(strstr(err.msg, "budget: slot_seconds or slot_trials must be above 0"));
    snprintf(c.tuner.strategy, sizeof c.tuner.strategy, "annealing");
    c.measure.tolerance = -1;
    assert_int_equal(dt_config_validate(&c, &err), DT_EINVAL);
    assert_int_equal(count_lines(err.msg), 4);
    assert_non_null(strstr(err.msg, "tuner.strategy: 'annealing' is not one of chameleon"));
}

/* Each printed row names a key that dt_config_set knows, and its printed
 * default, set into a zeroed config, gives every key its default back. */
static void test_print_keys(void **state)
{
    char line[512], key[64], def[64];
    dt_config c, defaults;
    dt_error err;
    int rows = 0;
    FILE *f = tmpfile();
    assert_non_null(f);
    dt_config_defaults(&defaults);
    dt_config_print_keys(f, &defaults, "DEFAULT");
    rewind(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_int_equal(strncmp(line, "KEY", 3), 0);
    memset(&c, 0, sizeof c);
    while (fgets(line, sizeof line, f)) {
        assert_int_equal(sscanf(line, "%63s %63s", key, def), 2);
        rows++;
        if (strcmp(key, "model") == 0)
            continue;
        if (dt_config_set(&c, key, strcmp(def, "\"\"") == 0 ? "" : def, &err) != 0)
            fail_msg("%s = %s: %s", key, def, err.msg);
    }
    fclose(f);
    assert_int_equal(rows, 77);
    assert_same_config(&c, &defaults);
}

/* ---- the user's guide's copy of the table -------------------------------------------- */

/* The file that holds the config.yaml table, under a heading "## config.yaml". */
#define CONFIG_TABLE_DOC "docs/config.md"

/* The text between the next pair of backticks after *p, into buf; *p moves
 * past it. False when there is none before the cell ends. */
static bool next_quoted(const char **p, char *buf, size_t len)
{
    const char *open = strchr(*p, '`'), *bar = strchr(*p, '|');
    if (!open || (bar && bar < open))
        return false;
    const char *close = strchr(open + 1, '`');
    assert_non_null(close);
    snprintf(buf, len, "%.*s", (int)(close - open - 1), open + 1);
    *p = close + 1;
    return true;
}

/* One row of the guide's table "| `a.b.c` / `d` | `1` / `2` | ...": each key (later ones
 * beside the first, in its section) set to its written default leaves the
 * defaults unchanged. Returns how many keys the row documents (0 for a row
 * of `section.*`, which documents no default by key). */
static int check_doc_row(const char *row, const dt_config *defaults, char covered[][128],
                            int ncovered)
{
    char key[64], first[64], value[128], full[128];
    const char *keys = row + 1, *values = strchr(keys, '|') + 1;
    char *want = printed(defaults);
    dt_error err;
    int n = 0;
    for (; next_quoted(&keys, key, sizeof key); n++) {
        if (strchr(key, '*')) {
            free(want);
            return 0;
        }
        if (n == 0)
            snprintf(first, sizeof first, "%s", key);
        const char *dot = strrchr(first, '.');
        snprintf(full, sizeof full, "%.*s%s", n && dot ? (int)(dot - first + 1) : 0, first, key);
        snprintf(covered[ncovered + n], 128, "%s", full);
        if (!next_quoted(&values, value, sizeof value))
            continue;   /* "(required)" */
        dt_config c = *defaults;
        if (dt_config_set(&c, full, strcmp(value, "\"\"") == 0 ? "" : value, &err) != 0)
            fail_msg(CONFIG_TABLE_DOC ": %s = %s: %s", full, value, err.msg);
        char *got = printed(&c);
        if (strcmp(got, want) != 0)
            fail_msg(CONFIG_TABLE_DOC ": %s = %s is not its default", full, value);
        free(got);
    }
    free(want);
    return n;
}

/* A choice key's row in the guide names every name of its module's table. */
static void check_doc_names(const char *row)
{
    static const struct { const char *key; dt_name_at_fn names; } choices[] = {
        { "target", dt_target_at },
        { "scheduler.policy", dt_scheduler_policy_at },
        { "scheduler.belief.curve", dt_curve_family_at },
        { "tuner.strategy", dt_tuner_strategy_at },
        { "tuner.cost_model.objective", dt_costmodel_objective_at },
    };
    char key[64];
    if (sscanf(row, "| `%63[^`]`", key) != 1)
        return;
    for (size_t c = 0; c < sizeof choices / sizeof choices[0]; c++)
        for (int i = 0; strcmp(key, choices[c].key) == 0 && choices[c].names(i); i++)
            if (!strstr(row, choices[c].names(i)))
                fail_msg(CONFIG_TABLE_DOC "'s row of %s does not name %s", key, choices[c].names(i));
}

/* The guide's config.yaml table (CONFIG_TABLE_DOC) agrees with the defaults, names every key (a
 * `section.*` row covers its section) and every choice's names. */
static void test_config_doc_table(void **state)
{
    char line[1024], covered[128][128], stars[8][64];
    int ncovered = 0, nstars = 0;
    dt_config defaults;
    dt_config_defaults(&defaults);
    FILE *f = fopen(CONFIG_TABLE_DOC, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f) && strncmp(line, "## config.yaml", 14) != 0)
        ;
    while (fgets(line, sizeof line, f) && strncmp(line, "## ", 3) != 0) {
        if (strncmp(line, "| `", 3) != 0)
            continue;
        assert_true(ncovered < 120);
        int n = check_doc_row(line, &defaults, covered, ncovered);
        check_doc_names(line);
        if (n == 0 && nstars < 8)
            sscanf(line, "| `%63[^*]", stars[nstars++]);
        ncovered += n;
    }
    fclose(f);
    char *table = printed(&defaults), *row = strchr(table, '\n') + 1;
    for (char key[64]; sscanf(row, "%63s", key) == 1; row = strchr(row, '\n') + 1) {
        bool found = false;
        for (int i = 0; i < ncovered && !found; i++)
            found = strcmp(covered[i], key) == 0;
        for (int i = 0; i < nstars && !found; i++)
            found = strncmp(stars[i], key, strlen(stars[i])) == 0;
        if (!found)
            fail_msg(CONFIG_TABLE_DOC "'s config.yaml table has no row for %s", key);
    }
    free(table);
}

/* ---- the bad configs in tests/data ------------------------------------------------- */

/* Checks one file: its "# expect: L:C: text" lines, in order, are its messages. */
static void check_data_file(const char *path)
{
    char expect[8][320], line[320];
    int nexpect = 0;
    dt_config c;
    dt_error err;
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    while (nexpect < 8 && fgets(line, sizeof line, f) && strncmp(line, "# expect: ", 10) == 0) {
        line[strcspn(line, "\n")] = '\0';
        snprintf(expect[nexpect++], sizeof expect[0], "%s:%s", path, line + 10);
    }
    fclose(f);
    if (nexpect == 0)
        fail_msg("%s has no '# expect: ' line", path);
    assert_true(dt_config_load(path, &c, true, &err) != 0);
    if (count_lines(err.msg) != nexpect)
        fail_msg("%s: want %d messages, got:\n%s", path, nexpect, err.msg);
    const char *msg = err.msg;
    for (int i = 0; i < nexpect; i++, msg = strchr(msg, '\n') + 1)
        if (strncmp(msg, expect[i], strlen(expect[i])) != 0)
            fail_msg("want '%s', got:\n%s", expect[i], err.msg);
}

static void test_data_files(void **state)
{
    glob_t files;
    assert_int_equal(glob("tests/data/config_*.yaml", 0, NULL, &files), 0);
    assert_true(files.gl_pathc >= 10);
    for (size_t i = 0; i < files.gl_pathc; i++)
        check_data_file(files.gl_pathv[i]);
    globfree(&files);
}

/* ---- dtune check ---------------------------------------------------------------------- */

/* Runs dt_cmd_check with stdout and stderr sent to out_path. */
static int run_check(const char *out_path, int argc, char **argv)
{
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved_out >= 0 && saved_err >= 0 && fd >= 0);
    assert_true(dup2(fd, 1) >= 0 && dup2(fd, 2) >= 0);
    close(fd);
    int status = dt_cmd_check(argc, argv);
    fflush(stdout);
    fflush(stderr);
    assert_true(dup2(saved_out, 1) >= 0 && dup2(saved_err, 2) >= 0);
    close(saved_out);
    close(saved_err);
    return status;
}

static void assert_file_has(const char *path, const char *text)
{
    char buf[8192];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (!strstr(buf, text))
        fail_msg("want '%s' in:\n%s", text, buf);
}

static void test_cmd_check(void **state)
{
    fixture *fx = *state;
    char out[128];
    char *good[] = { "check", "config.yaml" };
    char *bad[] = { "check", "tests/data/config_two_errors.yaml" };
    char *help[] = { "check", "--help" };
    char *none[] = { "check" };
    char *two[] = { "check", "config.yaml", "config.yaml" };
    snprintf(out, sizeof out, "%s/check.out", fx->dir);
    assert_int_equal(run_check(out, 2, good), 0);
    assert_file_has(out, "config.yaml: ok (model resnet18, 13 tasks, target cpu)");
    assert_int_equal(run_check(out, 2, bad), 2);
    assert_file_has(out, "tests/data/config_two_errors.yaml:4:10: unknown key 'slot_secs'");
    assert_file_has(out, "\ntests/data/config_two_errors.yaml:6:12: seed:");
    assert_int_equal(run_check(out, 2, help), 0);
    assert_file_has(out, "measure.cv_threshold");
    assert_int_equal(run_check(out, 1, none), 2);
    assert_file_has(out, "usage: dtune check");
    assert_int_equal(run_check(out, 3, two), 2);
    assert_int_equal(remove(out), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_defaults_validate_but_for_model),
        cmocka_unit_test(test_full_config),
        cmocka_unit_test(test_repository_config),
        cmocka_unit_test(test_empty_values_and_sections),
        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_wrong_type),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_missing_model_file),
        cmocka_unit_test(test_syntax_error),
        cmocka_unit_test(test_duplicate_key),
        cmocka_unit_test(test_two_errors_two_lines),
        cmocka_unit_test(test_rules_blame_the_written_key),
        cmocka_unit_test(test_relative_paths_follow_the_config),
        cmocka_unit_test(test_model_problems_are_appended),
        cmocka_unit_test(test_missing_config_file),
        cmocka_unit_test(test_many_problems_all_reported),
        cmocka_unit_test(test_choices_come_from_the_modules),
        cmocka_unit_test(test_defaults_are_the_modules),
        cmocka_unit_test(test_db_path),
        cmocka_unit_test(test_set_and_validate),
        cmocka_unit_test(test_print_keys),
        cmocka_unit_test(test_config_doc_table),
        cmocka_unit_test(test_data_files),
        cmocka_unit_test(test_cmd_check),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
