/* cmd_db.c — `dtune db`: the tuning database from the command line.
 *
 *   dtune db import RUN_DIR|FILE.jsonl   a run's log into the database
 *   dtune db stats                      what it holds, per machine and target
 *   dtune db best MODEL.yaml            per task: best known GFLOPS, trials, when
 *   dtune db export-log -o FILE.jsonl   everything back to a JSONL log
 *   dtune db machine                    this machine's fingerprint
 *
 * The database is --db PATH, else db.path of -c CONFIG, else the default
 * (db.h). An import is one transaction: a file that cannot be read to its
 * end imports nothing (exit 2); a record that does not fit (a task the
 * model lacks, a config outside its space or naming other knobs, a
 * measurement before any run record) is reported as FILE:LINE, skipped and
 * counted, and the rest goes in.
 */
#include "dtune/cli.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtune/backend.h"
#include "dtune/config.h"
#include "dtune/db.h"
#include "dtune/machine.h"
#include "dtune/model.h"
#include "dtune/model_file.h"
#include "dtune/space.h"
#include "dtune/target.h"
#include "dtune/tunelog.h"
#include "dtune/util.h"

static void usage(FILE *to)
{
    char targets[128];
    dt_names_join_sep(dt_target_at, ", ", " or ", targets, sizeof targets);
    fprintf(to, "usage: dtune db [--db PATH | -c CONFIG] COMMAND [ARGS]\n"
          "\n"
          "The tuning database: every measurement of every run, keyed by machine,\n"
          "target, task shape and knob schema. Later runs start from it.\n"
          "\n"
          "commands:\n"
          "  import RUN_DIR|FILE.jsonl   add a run's tuning log (one transaction)\n"
          "  stats                       runs, tasks and measurements per machine\n"
          "  best MODEL.yaml             per task: best known GFLOPS on this machine\n"
          "  export-log -o FILE.jsonl    every run back to a JSONL tuning log\n"
          "  machine                     print this machine's fingerprint\n"
          "\n"
          "options:\n"
          "  --db PATH          the database file (default: db.path, else $" DT_DB_ENV ",\n"
          "                     else $XDG_DATA_HOME/dtune/dtune.db, else ~/.local/share/dtune/dtune.db)\n"
          "  -c, --config FILE  take db.path from this config; best: also its measure\n"
          "                     settings (the figures of runs measured otherwise are\n"
          "                     kept apart: measure.threads, measure.cold_weights)\n"
          "  --target T         best, machine: %s (default %s)\n"
          "  --backend B        best, import, machine: replay for the synthetic surface\n"
          "  --seed N           best, machine with --backend replay: the runs' seed (default 1)\n"
          "  --threads N        best: the runs' measure.threads (default: the config's, 1)\n"
          "  -o, --out FILE     export-log: the new log (must not exist)\n"
          "  -h, --help         show this help\n", targets, dt_target_name(DT_TARGET_DEFAULT));
}

typedef struct db_args {
    const char *db, *config, *target, *backend, *out, *seed, *threads;
    const char *command, *arg;
} db_args;

static int usage_error(const char *fmt, const char *what)
{
    fputs("dtune db: ", stderr);
    fprintf(stderr, fmt, what);
    fputs("\n", stderr);
    usage(stderr);
    return 2;
}

/* Returns 0 (help shown), 2 (usage error) or -1 with a filled. */
static int parse_args(int argc, char **argv, db_args *a)
{
    static const struct { const char *s, *l; size_t off; } opts[] = {
        { NULL, "--db", offsetof(db_args, db) }, { "-c", "--config", offsetof(db_args, config) },
        { NULL, "--target", offsetof(db_args, target) }, { NULL, "--backend", offsetof(db_args, backend) },
        { "-o", "--out", offsetof(db_args, out) }, { NULL, "--seed", offsetof(db_args, seed) },
        { NULL, "--threads", offsetof(db_args, threads) },
    };
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        bool matched = false;
        for (size_t o = 0; o < sizeof opts / sizeof opts[0] && !matched; o++) {
            if ((opts[o].s && strcmp(s, opts[o].s) == 0) || strcmp(s, opts[o].l) == 0) {
                if (i + 1 >= argc)
                    return usage_error("missing value after '%s'", s);
                *(const char **)((char *)a + opts[o].off) = argv[++i];
                matched = true;
            }
        }
        if (matched)
            continue;
        if (s[0] == '-')
            return usage_error("unknown option '%s'", s);
        if (!a->command)
            a->command = s;
        else if (!a->arg)
            a->arg = s;
        else
            return usage_error("unexpected argument '%s'", s);
    }
    if (!a->command)
        return usage_error("%s", "no command given");
    return -1;
}

static int fail(const dt_error *err)
{
    fprintf(stderr, "dtune db: %s\n", err->msg);
    return dt_error_exit_status(err->code);
}

/* The database of a, created when absent only for a command that writes. */
static int open_db(const db_args *a, bool writes, dt_db **db, dt_error *err)
{
    char path[DT_PATH_MAX];
    int rc = dt_cli_db_path(a->db, a->config, path, sizeof path, err);
    return rc ? rc : writes ? dt_db_open(path, db, err) : dt_db_open_existing(path, db, err);
}

static uint64_t seed_of(const db_args *a)
{
    dt_config cfg;
    dt_config_defaults(&cfg);
    return a->seed ? strtoull(a->seed, NULL, 10) : cfg.seed;
}

static const char *backend_of(const db_args *a)
{
    return a->backend ? a->backend : a->target ? a->target : dt_target_name(DT_TARGET_DEFAULT);
}

/* The spaces of model's tasks on target as backend offers them (replay:
 * every vector width; a real backend: this machine's). */
static int open_spaces(const dt_model *model, dt_target target, const char *backend, dt_space *spaces,
                       dt_error *err)
{
    dt_space_opts opts = { .cpu_max_vec = strcmp(backend, dt_replay_backend.name) == 0 ? 16 : 0 };
    for (int k = 0; k < model->ntasks; k++) {
        int rc = dt_target_space_init_opts(&spaces[k], &model->tasks[k], target, &opts, err);
        if (rc) {
            while (k-- > 0)
                dt_space_free(&spaces[k]);
            return rc;
        }
    }
    return 0;
}

static void free_spaces(dt_space *spaces, int n)
{
    for (int k = 0; spaces && k < n; k++)
        dt_space_free(&spaces[k]);
    free(spaces);
}

/* ---- import ------------------------------------------------------------------- */

/* A task's best as its run decided it, replayed from the log as the run
 * did: a faster measurement, then the confirmation that follows it. */
typedef struct run_best {
    uint64_t index;
    double gflops, before_gflops;   /* 0: none; the figure before the last faster measurement */
} run_best;

typedef struct importer {
    dt_db *db;
    const char *path;
    const char *backend;       /* --backend, or NULL: the log's */
    long line;
    dt_model *model;           /* of the current run; NULL: its records are skipped */
    dt_space *spaces;
    run_best *bests;           /* per task of the model */
    int64_t run_id;
    int runs, added, skipped;
    dt_error *err;
} importer;

static void skip(importer *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void skip(importer *im, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%ld: ", im->path, im->line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("; skipped\n", stderr);
    im->skipped++;
}

/* Writes the current run's bests, then forgets the run. */
static int end_run(importer *im)
{
    int rc = 0;
    for (int k = 0; im->model && im->bests && k < im->model->ntasks && rc == 0; k++) {
        const run_best *b = &im->bests[k];
        if (b->gflops > 0 && b->index < im->spaces[k].size)
            rc = dt_db_set_best(im->db, im->run_id, &im->spaces[k], b->index, NULL, b->gflops, im->err);
    }
    if (im->model)
        free_spaces(im->spaces, im->model->ntasks);
    dt_model_free(im->model);
    free(im->bests);
    im->model = NULL;
    im->spaces = NULL;
    im->bests = NULL;
    return rc;
}

static int import_run(void *ctx, const dt_run_record *rec)
{
    importer *im = ctx;
    dt_error why;
    dt_target target;
    im->line++;
    int ended = end_run(im);
    if (ended)
        return ended;
    bool replay = dt_machine_is_replay(rec->machine);
    const char *backend = im->backend ? im->backend : replay ? dt_replay_backend.name : rec->target;
    dt_db_run run;
    memset(&run, 0, sizeof run);
    if (dt_target_parse(rec->target, &target) != 0) {
        skip(im, "run of target '%s', which this dtune does not know; its measurements are skipped", rec->target);
        return 0;
    }
    if (dt_model_file_load(rec->model, NULL, NULL, &im->model, &why) != 0) {
        skip(im, "run of model %s, which cannot be loaded here (%s); its measurements are skipped",
             rec->model, why.msg);
        im->model = NULL;
        return 0;
    }
    im->spaces = calloc((size_t)im->model->ntasks, sizeof *im->spaces);
    im->bests = calloc((size_t)im->model->ntasks, sizeof *im->bests);
    if (!im->spaces || !im->bests || open_spaces(im->model, target, backend, im->spaces, &why) != 0) {
        free(im->spaces);
        free(im->bests);
        im->spaces = NULL;
        im->bests = NULL;
        dt_model_free(im->model);
        im->model = NULL;
        skip(im, "run of model %s: its spaces cannot be built here; its measurements are skipped", rec->model);
        return 0;
    }
    if (rec->machine[0])
        snprintf(run.machine, sizeof run.machine, "%s", rec->machine);
    else if (dt_machine_fingerprint(backend, rec->seed, dt_measure_params_default().cuda_device,
                                    run.machine, sizeof run.machine, im->err) != 0)
        return im->err->code;
    snprintf(run.target, sizeof run.target, "%s", rec->target);
    snprintf(run.model, sizeof run.model, "%s", rec->model);
    run.seed = rec->seed;
    snprintf(run.started, sizeof run.started, "%s", rec->started);
    snprintf(run.dtune_version, sizeof run.dtune_version, "%s", rec->dtune_version);
    snprintf(run.id, sizeof run.id, "%s", rec->id);
    im->runs++;
    return dt_db_run_id(im->db, &run, &im->run_id, im->err);
}

/* The model's task a record names (by index and name, else by name), -1 none. */
static int record_task(const dt_model *model, const dt_measure_record *rec)
{
    int i = rec->task_index;
    if (i >= 0 && i < model->ntasks && strcmp(model->tasks[i].name, rec->task) == 0)
        return i;
    return dt_model_find_task(model, rec->task);
}

static int import_measure(void *ctx, const dt_measure_record *rec)
{
    importer *im = ctx;
    im->line++;
    if (!im->model) {
        skip(im, "measurement of task '%s' with no usable run record before it", rec->task);
        return 0;
    }
    int k = record_task(im->model, rec);
    if (k < 0) {
        skip(im, "task '%s' is not in model %s", rec->task, im->model->name);
        return 0;
    }
    const dt_space *s = &im->spaces[k];
    char knobs[sizeof rec->knobs];
    dt_point p;
    if (rec->config >= s->size) {
        skip(im, "config %llu of task '%s' is outside its space of %llu (another space)",
             (unsigned long long)rec->config, rec->task, (unsigned long long)s->size);
        return 0;
    }
    dt_space_point(s, rec->config, &p);
    dt_space_point_str(s, &p, knobs, sizeof knobs);
    if (rec->knobs[0] && strcmp(knobs, rec->knobs) != 0) {
        skip(im, "config %llu of task '%s' is '%s' here but '%s' in the log (another space)",
             (unsigned long long)rec->config, rec->task, knobs, rec->knobs);
        return 0;
    }
    if ((rec->m.result == DT_RESULT_OK && !(isfinite(rec->m.gflops) && rec->m.gflops > 0)) || rec->trial < 1) {
        skip(im, "task '%s' trial %d: an ok result needs positive finite gflops and a trial >= 1",
             rec->task, rec->trial);
        return 0;
    }
    int rc = dt_db_add(im->db, im->run_id, s, rec, im->err);
    im->added += rc == 0;
    run_best *b = &im->bests[k];
    if (rc == 0 && rec->m.result == DT_RESULT_OK && rec->m.gflops > b->gflops) {
        b->before_gflops = b->gflops;
        b->index = rec->config;
        b->gflops = rec->m.gflops;
    }
    return rc;
}

/* A confirmation decides its task's best (dt_confirmed_figures) in place of
 * the measurement before it. */
static int import_confirmed(void *ctx, const dt_confirmed_record *rec)
{
    importer *im = ctx;
    im->line++;
    int k = im->model ? dt_model_find_task(im->model, rec->task) : -1;
    if (k < 0)
        return 0;                  /* its run's or task's records were skipped */
    run_best *b = &im->bests[k];
    bool tentative = b->index == rec->candidate && b->gflops > 0;
    double candidate, incumbent;
    dt_confirmed_figures(rec, im->model->tasks[k].flops, tentative ? b->before_gflops : b->gflops,
                         &candidate, &incumbent);
    b->index = rec->accepted ? rec->candidate : rec->incumbent;
    b->gflops = rec->accepted ? candidate : incumbent;
    return 0;
}

static int count_line(void *ctx, const void *rec)
{
    ((importer *)ctx)->line++;
    return 0;
}

static int count_slot(void *ctx, const dt_slot_record *r) { return count_line(ctx, r); }
static int count_failed(void *ctx, const dt_failed_record *r) { return count_line(ctx, r); }
static int count_retime(void *ctx, const dt_retime_record *r) { return count_line(ctx, r); }
static int count_confirm(void *ctx, const dt_confirm_record *r) { return count_line(ctx, r); }
static int count_drift(void *ctx, const dt_drift_record *r) { return count_line(ctx, r); }

static int log_path_of(const char *arg, char *path, size_t len, dt_error *err)
{
    struct stat st;
    if (stat(arg, &st) != 0)
        return dt_error_set(err, DT_ENOTFOUND, "%s: no such run folder or log", arg);
    int n = S_ISDIR(st.st_mode) ? snprintf(path, len, "%s/tuning.jsonl", arg) : snprintf(path, len, "%s", arg);
    return n > 0 && (size_t)n < len ? 0 : dt_error_set(err, DT_EINVAL, "%s: path too long", arg);
}

static int cmd_import(const db_args *a)
{
    char path[DT_PATH_MAX + 16];
    dt_error err = { 0 };
    dt_db *db = NULL;
    if (!a->arg)
        return usage_error("%s", "import needs RUN_DIR or FILE.jsonl");
    int rc = log_path_of(a->arg, path, sizeof path, &err);
    if (rc == 0)
        rc = open_db(a, true, &db, &err);
    if (rc == 0)
        rc = dt_db_begin(db, &err);
    if (rc)
        return dt_db_free(db), fail(&err);
    importer im = { .db = db, .path = path, .backend = a->backend, .err = &err };
    dt_tunelog_visitor v = { import_run,   import_measure, count_slot,
                             &im,          count_failed,   count_retime,
                             count_confirm, import_confirmed, count_drift };
    dt_tunelog_stats stats;
    rc = dt_tunelog_replay(path, &v, &stats, &err);
    int ended = end_run(&im);
    rc = rc ? rc : ended;
    if (rc == 0 && stats.dropped_tail) {
        const char *why = strstr(stats.tail_message, ": ");   /* after "line N" */
        im.line = stats.lines + 1;
        skip(&im, "a torn last record: %s", why ? why + 2 : stats.tail_message);
    }
    if (rc == 0)
        rc = dt_db_commit(db, &err);
    if (rc) {
        dt_db_rollback(db);
        dt_db_free(db);
        fprintf(stderr, "dtune db: %s\ndtune db: nothing imported from %s\n", err.msg, path);
        return dt_error_exit_status(rc);
    }
    dt_db_free(db);
    printf("imported %s: %d runs, %d measurements added or already there, %d records skipped\n",
           path, im.runs, im.added, im.skipped);
    return 0;
}

/* ---- stats, best, export-log, machine ------------------------------------------ */

static int cmd_stats(const db_args *a)
{
    dt_error err = { 0 };
    dt_db *db = NULL;
    if (a->arg)
        return usage_error("stats takes no argument ('%s')", a->arg);
    int rc = open_db(a, false, &db, &err);
    if (rc == 0)
        rc = dt_db_stats(db, stdout, &err);
    dt_db_free(db);
    return rc ? fail(&err) : 0;
}

static void print_best(dt_db *db, const dt_model *model, const dt_space *spaces, const char *machine,
                       const char *target, dt_error *err, int *rc)
{
    printf("machine %s, target %s\n%-20s %-28s %10s %8s  %-20s %s\n", machine, target, "TASK", "SHAPE",
           "GFLOPS", "TRIALS", "WHEN", "KNOBS");
    for (int k = 0; k < model->ntasks && *rc == 0; k++) {
        char sig[DT_DB_SIGNATURE_MAX], hash[24], shape[128];
        dt_db_best best;
        dt_db_task_signature(&model->tasks[k], sig, sizeof sig);
        dt_db_space_hash(&spaces[k], hash, sizeof hash);
        dt_task_shape_str(&model->tasks[k], shape, sizeof shape);
        *rc = dt_db_task_best(db, machine, target, hash, sig, &best, err);
        if (*rc == 0 && best.records == 0)
            printf("%-20s %-28s %10s %8d  %-20s\n", model->tasks[k].name, shape, "-", 0, "-");
        else if (*rc == 0)
            printf("%-20s %-28s %10.2f %8d  %-20s %s\n", model->tasks[k].name, shape, best.gflops,
                   best.records, best.when, best.knobs);
    }
}

static int cmd_best(const db_args *a)
{
    dt_error err = { 0 };
    dt_target target = DT_TARGET_DEFAULT;
    char machine[DT_MACHINE_MAX];
    if (!a->arg)
        return usage_error("%s", "best needs MODEL.yaml");
    if (a->target)
        dt_target_parse(a->target, &target);   /* checked by dt_cmd_db */
    dt_model *model = NULL;
    dt_space *spaces = NULL;
    dt_db *db = NULL;
    int rc = dt_model_file_load(a->arg, NULL, NULL, &model, &err);
    if (rc == 0 && !(spaces = calloc((size_t)model->ntasks, sizeof *spaces)))
        rc = dt_error_set(&err, DT_ENOMEM, "out of memory");
    if (rc == 0 && (rc = open_spaces(model, target, backend_of(a), spaces, &err)) != 0) {
        free(spaces);
        spaces = NULL;
    }
    dt_config cfg;
    dt_config_defaults(&cfg);
    if (rc == 0 && a->config)
        rc = dt_config_load(a->config, &cfg, false, &err);
    if (rc == 0 && a->threads)
        rc = dt_config_set(&cfg, "measure.threads", a->threads, &err);
    if (rc == 0)
        rc = dt_machine_local_key(backend_of(a), seed_of(a), &cfg.measure, machine, sizeof machine, &err);
    if (rc == 0)
        rc = open_db(a, false, &db, &err);
    if (rc == 0)
        print_best(db, model, spaces, machine, dt_target_name(target), &err, &rc);
    dt_db_free(db);
    if (model)
        free_spaces(spaces, model->ntasks);
    dt_model_free(model);
    return rc ? fail(&err) : 0;
}

static int cmd_export_log(const db_args *a)
{
    dt_error err = { 0 };
    dt_db *db = NULL;
    int runs, records;
    if (!a->out || a->arg)
        return usage_error("%s", "export-log needs -o FILE.jsonl and no other argument");
    if (access(a->out, F_OK) == 0) {
        fprintf(stderr, "dtune db: %s exists; export-log writes a new file\n", a->out);
        return 2;
    }
    int rc = open_db(a, false, &db, &err);
    if (rc == 0)
        rc = dt_db_export_log(db, a->out, &runs, &records, &err);
    dt_db_free(db);
    if (rc)
        return fail(&err);
    printf("exported %d runs, %d measurements to %s\n", runs, records, a->out);
    return 0;
}

/* `dtune machine`'s first line, for the backend and seed a run would key by. */
static int cmd_machine(const db_args *a)
{
    dt_error err = { 0 };
    return dt_cli_print_machine(backend_of(a), seed_of(a), &err) ? fail(&err) : 0;
}

int dt_cmd_db(int argc, char **argv)
{
    static const struct { const char *name; int (*run)(const db_args *a); } commands[] = {
        { "import", cmd_import }, { "stats", cmd_stats }, { "best", cmd_best },
        { "export-log", cmd_export_log }, { "machine", cmd_machine },
    };
    db_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    dt_target target;
    char names[128];
    if (a.target && dt_target_parse(a.target, &target) != 0) {
        dt_names_join(dt_target_at, names, sizeof names);
        fprintf(stderr, "dtune db: unknown target '%s' (%s)\n", a.target, names);
        return 2;
    }
    if (a.seed && (!a.seed[0] || strspn(a.seed, "0123456789") != strlen(a.seed)))
        return usage_error("--seed '%s' is not a non-negative integer", a.seed);
    if (a.backend && !dt_backend_find(a.backend)) {
        dt_names_join(dt_backend_at, names, sizeof names);
        fprintf(stderr, "dtune db: unknown backend '%s' (%s)\n", a.backend, names);
        return 2;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(a.command, commands[i].name) == 0)
            return commands[i].run(&a);
    return usage_error("unknown command '%s' (import, stats, best, export-log, machine)", a.command);
}
