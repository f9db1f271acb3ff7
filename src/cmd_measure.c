/* cmd_measure.c — `dtune measure MODEL.yaml TASK [...]`: build, check and time
 * one configuration of one task, the way the tuner would, and print the
 * outcome. TASK is a task name or a 0-based index; --config takes a space
 * index or `random` (a random valid point from --seed). The measurement
 * settings are config.yaml's defaults, with --repeats (measure.max_repeats),
 * --cv (measure.cv_threshold) and --threads (measure.threads) on top, set
 * through dt_config_set so their ranges are the config's. The artifact cache
 * is the default run directory's (output.dir), or --dir.
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

#include "dtune/cli.h"
#include "dtune/config.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/space.h"
#include "dtune/target.h"

typedef struct measure_args {
    const char *model_path;
    const char *task;
    const char *config;           /* "random" or an index */
    const char *dir;              /* NULL: cfg.output_dir */
    dt_config cfg;
} measure_args;

static void usage(FILE *f)
{
    fprintf(f, "usage: dtune measure MODEL.yaml TASK [--target T] [--config INDEX|random]\n"
               "                     [--repeats N] [--cv X] [--seed N] [--threads N] [--dir DIR]\n"
               "Builds, checks and times one config of one task (TASK: name or 0-based\n"
               "index) and prints its result class, GFLOPS, latency, repeats, CV, compile\n"
               "and run time. Exit 0 ok, 1 the config or the backend failed, 2 bad input.\n");
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
    { "--config", NULL },
    { "--dir", NULL },
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
    if (strcmp(flag, "--config") == 0)
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
        if (strncmp(argv[i], "--", 2) == 0) {
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
    if (!a->model_path || !a->task) {
        usage(stderr);
        return 2;
    }
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
    char *end;
    errno = 0;
    unsigned long long idx = strtoull(a->config, &end, 10);
    if (errno || end == a->config || *end || a->config[0] == '-' || idx >= space->size)
        return bad("--config '%s' is not 'random' or an index below the space size", a->config);
    dt_space_point(space, idx, point);
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

int dt_cmd_measure(int argc, char **argv)
{
    measure_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    dt_model *model;
    dt_error err;
    if ((rc = dt_model_load_target(a.model_path, a.cfg.target, &model, &err)) != 0) {
        fprintf(stderr, "dtune measure: %s\n", err.msg);
        return dt_error_exit_status(rc);
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
