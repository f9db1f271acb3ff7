/* cmd_measure.c — `dtune measure MODEL.yaml TASK [...]`: build, check and time
 * one configuration of one task, the way the tuner would, and print the
 * outcome. TASK is a task name or a 0-based index; --config takes a space
 * index, the knobs as printed ("tile_c=[36,16] ... form=2", so a config
 * logged by a dtune whose space numbered it otherwise can be measured) or
 * `random` (a random valid point from --seed). The measurement
 * settings are config.yaml's defaults, with --repeats (measure.max_repeats),
 * --cv (measure.cv_threshold), --threads (measure.threads), --cold-weights
 * (measure.cold_weights) and --spread-input (measure.spread_input) on top, set
 * through dt_config_set so their ranges are the config's. The artifact cache
 * is the default run directory's (output.dir), or --dir.
 *
 * With --best RUN_DIR the config is the run's best of each task (TASK
 * optional: every task of the model), read from RUN_DIR/best.json and
 * re-measured here, and each result carries the task's bound (roofline.h)
 * from this machine's probes at --threads; --json prints one JSON object
 * per task instead (bench/torch_bench reads them).
 *
 * Exit status: 0 when the config measured ok, 1 when it did not (compile
 * error, crash, wrong output, ...) or the backend failed, 2 for bad input.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include <jansson.h>

#include "dtune/cli.h"
#include "dtune/config.h"
#include "dtune/report.h"
#include "dtune/runstate.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/space.h"
#include "dtune/target.h"

typedef struct measure_args {
    const char *model_path;
    const char *task;
    const char *config;           /* "random" or an index */
    const char *dir;              /* NULL: cfg.output_dir */
    const char *best;             /* --best RUN_DIR, or NULL */
    bool json;                    /* --json: one JSON object per task */
    dt_config cfg;
} measure_args;

static void usage(FILE *f)
{
    fprintf(f, "usage: dtune measure MODEL.yaml TASK [--target T] [--config INDEX|KNOBS|random]\n"
               "                     [--repeats N] [--cv X] [--seed N] [--threads N] [--dir DIR]\n"
               "                     [--cold-weights true|false] [--spread-input true|false]\n"
               "       dtune measure MODEL.yaml [TASK] --best RUN_DIR [--json] [...]\n"
               "Builds, checks and times one config of one task (TASK: name or 0-based\n"
               "index) and prints its result class, GFLOPS, latency, repeats, CV, compile\n"
               "and run time. --best RUN_DIR re-measures the run's best config of TASK\n"
               "(of every task without TASK) from RUN_DIR/best.json and adds the task's\n"
               "bound (max of useful FLOPs / peak, bytes read / read stream and bytes moved /\n"
               "the faster stream of the memory level holding its working set; probes at\n"
               "--threads); --json prints one JSON object per task. --cold-weights\n"
               "(default measure.cold_weights, true) evicts the weights from the caches\n"
               "before each timed call, as a network's layer finds them; --spread-input\n"
               "(default measure.spread_input, true) has the kernel's threads rewrite its\n"
               "input and output in turn before each call, at more than one thread.\n"
               "Exit 0 ok, 1 a config or the backend failed, 2 bad input.\n");
}

static int parse_long(const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int bad(const char *fmt, const char *what)
{
    fprintf(stderr, "dtune measure: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n");
    return 2;
}

/* Flag -> config key; a NULL key is a flag of this command alone. */
static const struct { const char *flag, *key; } flags[] = {
    { "--target", "target" },
    { "--repeats", "measure.max_repeats" },
    { "--cv", "measure.cv_threshold" },
    { "--seed", "seed" },
    { "--threads", "measure.threads" },
    { "--cold-weights", "measure.cold_weights" },
    { "--spread-input", "measure.spread_input" },
    { "--config", NULL },
    { "--dir", NULL },
    { "--best", NULL },
};

/* One flag with its value at argv[*i + 1]; returns 0 or the exit status 2. */
static int parse_flag(measure_args *a, int argc, char **argv, int *i)
{
    const char *flag = argv[*i];
    size_t f = 0, nflags = sizeof flags / sizeof flags[0];
    while (f < nflags && strcmp(flag, flags[f].flag) != 0)
        f++;
    if (f == nflags)
        return bad("unknown flag '%s'", flag);
    if (*i + 1 >= argc)
        return bad("%s needs a value", flag);
    const char *v = argv[++*i];
    dt_error err;
    if (flags[f].key && dt_config_set(&a->cfg, flags[f].key, v, &err) != 0) {
        fprintf(stderr, "dtune measure: %s: %s\n", flag, err.msg);
        return 2;
    }
    if (strcmp(flag, "--best") == 0)
        a->best = v;
    else if (strcmp(flag, "--config") == 0)
        a->config = v;
    else if (strcmp(flag, "--dir") == 0)
        a->dir = v;
    else if (a->cfg.measure.min_batches > a->cfg.measure.max_repeats)
        a->cfg.measure.min_batches = a->cfg.measure.max_repeats;  /* --repeats below the default */
    return 0;
}

static int parse_args(measure_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    dt_config_defaults(&a->cfg);
    a->config = "random";
    a->cfg.measure.builders = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return -1;
        }
        if (strcmp(argv[i], "--json") == 0) {
            a->json = true;
        } else if (strncmp(argv[i], "--", 2) == 0) {
            int rc = parse_flag(a, argc, argv, &i);
            if (rc)
                return rc;
        } else if (!a->model_path) {
            a->model_path = argv[i];
        } else if (!a->task) {
            a->task = argv[i];
        } else {
            return bad("unexpected argument '%s'", argv[i]);
        }
    }
    if (!a->model_path || (!a->task && !a->best)) {
        usage(stderr);
        return 2;
    }
    if (a->json && !a->best)
        return bad("%s", "--json goes with --best RUN_DIR");
    return 0;
}

static int find_task(const dt_model *m, const char *name)
{
    int k = dt_model_find_task(m, name);
    long idx;
    if (k < 0 && parse_long(name, 0, m->ntasks - 1, &idx) == 0)
        k = (int)idx;
    return k;
}

static int pick_point(const measure_args *a, const dt_space *space, dt_point *point)
{
    if (strcmp(a->config, "random") == 0) {
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        if (!rng)
            return bad("%s", "out of memory");
        gsl_rng_set(rng, (unsigned long)a->cfg.seed);
        dt_space_random(space, rng, point);
        gsl_rng_free(rng);
        return 0;
    }
    if (strchr(a->config, '=')) {
        if (!dt_space_point_parse(space, a->config, point))
            return bad("--config '%s' names no config of this space (knobs as `dtune measure` "
                       "prints them)", a->config);
        dt_space_canonical(space, point);
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long idx = strtoull(a->config, &end, 10);
    if (errno || end == a->config || *end || a->config[0] == '-' || idx >= space->size)
        return bad("--config '%s' is not 'random' or an index below the space size", a->config);
    dt_space_point(space, idx, point);
    dt_space_canonical(space, point);   /* another name of a kernel measures the kernel */
    return 0;
}

static void print_result(const dt_task *t, const dt_space *space, const dt_point *point,
                         const dt_measure_result *r)
{
    char shape[128], knobs[512];
    dt_task_shape_str(t, shape, sizeof shape);
    dt_space_point_str(space, point, knobs, sizeof knobs);
    printf("task     %s (%s %s)\n", t->name, dt_op_kind_name(t->kind), shape);
    printf("config   %llu: %s\n", (unsigned long long)dt_space_index(space, point), knobs);
    printf("result   %s%s%s\n", dt_result_name(r->result), r->detail[0] ? " — " : "", r->detail);
    printf("gflops   %.2f\n", r->gflops);
    printf("latency  %.6f ms\n", r->latency_s * 1e3);   /* microsecond kernels: 6 places */
    printf("repeats  %d\n", r->repeats);
    printf("cv       %.4f\n", r->cv);
    printf("compile  %.1f ms\n", r->compile_ms);
    printf("run      %.1f ms\n", r->run_ms);
}

static int measure_point(const measure_args *a, const dt_space *space, const dt_point *point)
{
    const dt_backend_i *backend = dt_backend_choose(a->cfg.target, a->cfg.backend);
    if (!backend)
        return bad("no backend for target '%s' in this dtune", dt_target_name(a->cfg.target));
    dt_measurer *m;
    dt_error err;
    dt_measure_result r;
    int rc = dt_measurer_new(backend, &a->cfg.measure, a->dir ? a->dir : a->cfg.output_dir,
                             a->cfg.seed, &m, &err);
    if (rc == 0) {
        rc = dt_measurer_run(m, space, point, 1, &r, &err);
        dt_measurer_free(m);
    }
    if (rc < 0) {
        fprintf(stderr, "dtune measure: %s\n", err.msg);
        return 1;
    }
    print_result(&space->task, space, point, &r);
    return r.result == DT_RESULT_OK ? 0 : 1;
}

/* ---- --best RUN_DIR: the run's best configs, re-measured, with their bound ---- */

static void print_best_json(const dt_task *t, const dt_space *space, const dt_point *point,
                            const dt_measure_result *r, const dt_roofline *roof,
                            const dt_task_bound *b, int threads)
{
    char shape[128], knobs[512];
    dt_task_shape_str(t, shape, sizeof shape);
    dt_space_point_str(space, point, knobs, sizeof knobs);
    json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:f, s:f, s:i, s:f, s:f, s:f, s:f, "
                          "s:s, s:f, s:f, s:s, s:i}",
                          "task", t->name, "kind", dt_op_kind_name(t->kind), "shape", shape,
                          "count", t->count, "config", (json_int_t)dt_space_index(space, point),
                          "knobs", knobs, "result", dt_result_name(r->result),
                          "latency_ms", r->latency_s * 1e3, "gflops", r->gflops,
                          "repeats", r->repeats, "cv", r->cv, "flops", t->flops, "bytes", t->bytes,
                          "bound_ms", b->seconds * 1e3, "bound_level", b->level,
                          "bandwidth_gbs", b->bandwidth_gbs, "peak_gflops", roof->peak_gflops,
                          "probe", roof->probe, "threads", threads);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (text)
        printf("%s\n", text);
    free(text);
    json_decref(o);
}

static void print_bound(const dt_measure_result *r, const dt_roofline *roof, const dt_task_bound *b)
{
    printf("bound    %.6f ms (%s%s%.1f GFLOPS from %s)\n", b->seconds * 1e3,
           b->level[0] ? b->level : "", b->level[0] ? " stream, peak " : "peak ",
           roof->peak_gflops, roof->probe[0] ? roof->probe : "no probe");
    if (r->result == DT_RESULT_OK && b->seconds > 0)
        printf("share    %.1f %% of the bound%s\n", 100 * b->seconds / r->latency_s,
               r->latency_s < b->seconds ? " (beats it: the probes read low)" : "");
}

/* Re-measures task t's best config of rs (its row of the same name). */
static int measure_best_task(const measure_args *a, dt_measurer *m, const dt_run_state *rs,
                             const dt_task *t)
{
    const dt_task_state *ts = NULL;
    for (int j = 0; j < rs->ntasks && !ts; j++)
        if (strcmp(rs->tasks[j].name, t->name) == 0)
            ts = &rs->tasks[j];
    if (!ts || !(ts->best_gflops > 0) || ts->failed[0]) {
        fprintf(stderr, "dtune measure: %s/best.json has no tuned config of task %s\n", a->best, t->name);
        return 1;
    }
    dt_space space;
    dt_error err;
    if (dt_target_space_init(&space, t, a->cfg.target, &err) != 0) {
        fprintf(stderr, "dtune measure: %s\n", err.msg);
        return 2;
    }
    int status = 0;
    dt_point point;
    /* by index, or by the logged knobs where this space numbers the config
     * otherwise (a knob gained a value since the run) */
    if (!dt_space_point_named(&space, ts->best_config, ts->best_knobs, &point) &&
        !(ts->best_knobs[0] && dt_space_point_parse(&space, ts->best_knobs, &point))) {
        if (!ts->best_knobs[0])
            fprintf(stderr, "dtune measure: %s/best.json: task %s's config %llu is past its space "
                    "(%llu)\n", a->best, t->name, (unsigned long long)ts->best_config,
                    (unsigned long long)space.size);
        else
            fprintf(stderr, "dtune measure: %s/best.json: task %s's config %llu was logged as '%s', "
                    "which names no config of this dtune's space (a run of another space)\n",
                    a->best, t->name, (unsigned long long)ts->best_config, ts->best_knobs);
        status = 2;
    } else {
        dt_measure_result r;
        dt_roofline roof;
        dt_task_bound b;
        /* a run before its space had one point per kernel may have logged
         * another name of the kernel */
        dt_space_canonical(&space, &point);
        if (dt_measurer_run(m, &space, &point, 1, &r, &err) != 0) {
            fprintf(stderr, "dtune measure: %s\n", err.msg);
            status = 1;
        } else {
            (void)dt_measurer_roofline(m, t, &roof);
            dt_roofline_task_bound(&roof, t, &b);
            if (a->json) {
                print_best_json(t, &space, &point, &r, &roof, &b, a->cfg.measure.threads);
            } else {
                print_result(t, &space, &point, &r);
                print_bound(&r, &roof, &b);
            }
            status = r.result == DT_RESULT_OK ? 0 : 1;
        }
    }
    dt_space_free(&space);
    return status;
}

static int measure_best(const measure_args *a, const dt_model *model)
{
    dt_run_state rs;
    dt_error err;
    int k = a->task ? find_task(model, a->task) : -1;
    if (a->task && k < 0)
        return bad("no task '%s' (a task name or an index below the task count)", a->task);
    int rc = dt_report_load_best(a->best, &rs, &err);
    if (rc != 0) {
        fprintf(stderr, "dtune measure: %s\n", err.msg);
        return 2;
    }
    const dt_backend_i *backend = dt_backend_choose(a->cfg.target, a->cfg.backend);
    dt_measurer *m = NULL;
    int status = 0;
    if (!backend) {
        status = bad("no backend for target '%s' in this dtune", dt_target_name(a->cfg.target));
    } else if (dt_measurer_new(backend, &a->cfg.measure, a->dir ? a->dir : a->cfg.output_dir,
                               a->cfg.seed, &m, &err) != 0) {
        fprintf(stderr, "dtune measure: %s\n", err.msg);
        status = 1;
    }
    for (int i = 0; i < model->ntasks && m; i++) {
        if (k >= 0 && i != k)
            continue;
        int one = measure_best_task(a, m, &rs, &model->tasks[i]);
        status = status > one ? status : one;
        if (!a->json && k < 0 && i + 1 < model->ntasks)
            printf("\n");
        fflush(stdout);
    }
    dt_measurer_free(m);
    dt_run_state_destroy(&rs);
    return status;
}

int dt_cmd_measure(int argc, char **argv)
{
    measure_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    dt_model *model;
    dt_error err;
    if ((rc = dt_target_load_model(a.model_path, a.cfg.target, &model, &err)) != 0) {
        fprintf(stderr, "dtune measure: %s\n", err.msg);
        return dt_error_exit_status(rc);
    }
    if (a.best) {
        int status = measure_best(&a, model);
        dt_model_free(model);
        return status;
    }
    int k = find_task(model, a.task);
    dt_space space;
    int status;
    if (k < 0) {
        status = bad("no task '%s' (a task name or an index below the task count)", a.task);
    } else if (dt_target_space_init(&space, &model->tasks[k], a.cfg.target, &err) != 0) {
        fprintf(stderr, "dtune measure: %s\n", err.msg);
        status = 2;
    } else {
        dt_point point;
        status = pick_point(&a, &space, &point);
        if (status == 0)
            status = measure_point(&a, &space, &point);
        dt_space_free(&space);
    }
    dt_model_free(model);
    return status;
}
