/* export.c — the tuned kernels of a model as a C library (see export.h).
 *
 * Reading a run: best.json gives each task's best config (index and knobs)
 * and latency, or why it failed; tuning.jsonl's run record names the model
 * file, which gives each task's geometry. The config index is read back in
 * the task's space and must print as the knobs the run logged: that proves
 * the space (and its vector width) is the one the run searched.
 *
 * Reading the database: per task of the model, the best record of this
 * machine, target and the task's space (dt_db_task_best), checked the same
 * way in the space of this machine's vector width, the one its key names.
 *
 * Writing: the target table's export form of the run's target writes the
 * files (cpu_export.c, cuda_export.c); this file names the library and its
 * tasks as C names and checks that they do not clash.
 */
#include "dtune/export.h"
#include "export_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dtune/model_file.h"
#include "dtune/report.h"
#include "dtune/target.h"
#include "dtune/tunelog.h"

dt_export_params dt_export_params_default(void)
{
    return (dt_export_params){ .target = DT_TARGET_DEFAULT,
                               .measure = dt_measure_params_default() };
}

void export_c_name(const char *name, const char *prefix, char *out, size_t len)
{
    size_t j = 0;
    if (isdigit((unsigned char)name[0]) || name[0] == '\0')
        j = (size_t)snprintf(out, len, "%s", prefix);
    for (const char *c = name; *c && j + 1 < len; c++)
        out[j++] = isalnum((unsigned char)*c) ? *c : '_';
    out[j < len ? j : len - 1] = '\0';
}

/* Whether a is b followed by one of an entry point's suffixes. */
static bool entry_of(const char *a, const char *b)
{
    static const char *const suffixes[] = { "_prepare", "_workspace_bytes", "_epilogue" };
    size_t n = strlen(b);
    if (strncmp(a, b, n) != 0)
        return false;
    for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++)
        if (strcmp(a + n, suffixes[k]) == 0)
            return true;
    return false;
}

/* Whether task name i would share a symbol with the library's own or with
 * an earlier task's. */
static bool name_taken(char (*task)[EXPORT_NAME_MAX], int i)
{
    static const char *const own[] = { "kernels", "reference", "kernel_info", "cuda" };
    for (size_t k = 0; k < sizeof own / sizeof own[0]; k++)
        if (strcmp(task[i], own[k]) == 0)
            return true;
    for (int j = 0; j < i; j++)
        if (strcmp(task[i], task[j]) == 0 || entry_of(task[i], task[j]) || entry_of(task[j], task[i]))
            return true;
    return false;
}

void export_task_names(const dt_export_choice *choices, int n, char (*task)[EXPORT_NAME_MAX])
{
    for (int i = 0; i < n; i++) {
        char base[EXPORT_NAME_MAX], plain[EXPORT_NAME_MAX];
        export_c_name(choices[i].task.name, "t", plain, sizeof plain);
        /* the network's own symbols are NAME_net and NAME_net_*: no suffix
         * can free such a name, a prefix does */
        bool net = strcmp(plain, "net") == 0 || strncmp(plain, "net_", 4) == 0;
        snprintf(base, sizeof base, "%s%.*s", net ? "t_" : "", EXPORT_NAME_MAX - 3, plain);
        snprintf(task[i], EXPORT_NAME_MAX, "%s", base);
        for (int k = 2; name_taken(task, i); k++) {
            char suffix[16];
            int len = snprintf(suffix, sizeof suffix, "_%d", k);
            snprintf(task[i], EXPORT_NAME_MAX, "%.*s%s", EXPORT_NAME_MAX - 1 - len, base, suffix);
        }
    }
}

/* target's form of an export (the target table's), or NULL. */
static const dt_export_form *form_of(dt_target target)
{
    const dt_target_i *t = dt_target_get(target);
    return t ? t->export_form : NULL;
}

const char *dt_export_build_hint(dt_target target)
{
    const dt_export_form *form = form_of(target);
    return form ? form->build_hint : NULL;
}

int dt_export_write(const dt_export_params *params, const char *name,
                    const dt_export_choice *choices, int n, const char *out_dir, dt_error *err)
{
    if (n < 1)
        return dt_error_set(err, DT_EINVAL, "nothing to export: no tasks");
    if (strlen(out_dir) >= DT_PATH_MAX)
        return dt_error_set(err, DT_EINVAL, "%.64s...: path too long", out_dir);
    export_job job = { .params = params, .choices = choices, .n = n, .out_dir = out_dir };
    export_c_name(name, "m", job.lib, sizeof job.lib);
    for (size_t i = 0; i <= strlen(job.lib); i++)
        job.upper[i] = (char)toupper((unsigned char)job.lib[i]);
    job.task = calloc((size_t)n, sizeof *job.task);
    if (!job.task)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    export_task_names(choices, n, job.task);
    char kernels[DT_PATH_MAX + 16];
    snprintf(kernels, sizeof kernels, "%s/kernels", out_dir);
    int rc = dt_mkdir_p(kernels, err);
    const dt_export_form *form = form_of(params->target);
    if (rc == 0 && !form)
        rc = dt_error_set(err, DT_ENOTSUP, "target %s has no export", dt_target_name(params->target));
    if (rc == 0)
        rc = form->write(&job, err);
    free(job.task);
    return rc;
}

/* ---- reading a run ------------------------------------------------------------------ */

static int first_run_record(void *ctx, const dt_run_record *r)
{
    dt_run_record *first = ctx;
    if (!first->model[0])
        *first = *r;
    return 0;
}

int dt_export_run_model(const char *run_dir, char *path, size_t len, dt_error *err)
{
    char log[DT_PATH_MAX + 32];
    snprintf(log, sizeof log, "%s/tuning.jsonl", run_dir);
    dt_run_record first;
    memset(&first, 0, sizeof first);
    dt_tunelog_visitor v = { .run = first_run_record, .ctx = &first };
    int rc = dt_tunelog_replay(log, &v, NULL, err);
    if (rc == DT_ENOTFOUND)
        return dt_error_set(err, rc, "%s: no tuning log, so no model file; give it with -m MODEL.yaml", log);
    if (rc)
        return rc;
    if (!first.model[0])
        return dt_error_set(err, DT_EINVAL, "%s: no run record names the model; give it with -m MODEL.yaml", log);
    snprintf(path, len, "%s", first.model);
    return 0;
}

/* The choice of best.json's task t, checked against the model's task. */
static int choice_of(const dt_task_state *t, const dt_model *model, const char *best,
                     dt_export_choice *c, dt_error *err)
{
    int k = dt_model_find_task(model, t->name);
    if (k < 0)
        return dt_error_set(err, DT_EINVAL, "%s: task %s is not a task of %s", best, t->name,
                            model->path);
    char shape[128];
    dt_task_shape_str(&model->tasks[k], shape, sizeof shape);
    if (strcmp(dt_op_kind_name(model->tasks[k].kind), t->kind) != 0 || strcmp(shape, t->shape) != 0)
        return dt_error_set(err, DT_EINVAL, "%s: task %s is %s %s, but %s says %s %s", best, t->name,
                            t->kind, t->shape, model->path, dt_op_kind_name(model->tasks[k].kind),
                            shape);
    memset(c, 0, sizeof *c);
    c->task = model->tasks[k];
    c->tuned = !t->failed[0] && t->best_knobs[0];
    c->config = t->best_config;
    snprintf(c->knobs, sizeof c->knobs, "%s", t->best_knobs);
    c->latency_ms = t->best_latency_ms;
    snprintf(c->why, sizeof c->why, "%s", t->failed[0] ? t->failed : "not measured yet");
    return 0;
}

/* Whether every tuned choice's config prints as its logged knobs in the
 * spaces of params; *bad names the first that does not. */
static bool knobs_match(const dt_export_params *params, const dt_export_choice *choices, int n,
                        int *bad)
{
    dt_error ignored;
    for (int i = 0; i < n; i++) {
        if (!choices[i].tuned)
            continue;
        dt_space space;
        dt_space_opts opts = { .cpu_max_vec = params->cpu_max_vec };
        *bad = i;
        if (dt_target_space_init_opts(&space, &choices[i].task, params->target, &opts, &ignored) != 0)
            return false;
        char knobs[256] = "";
        if (choices[i].config < space.size) {
            dt_point point;
            dt_space_point(&space, choices[i].config, &point);
            dt_space_point_str(&space, &point, knobs, sizeof knobs);
        }
        dt_space_free(&space);
        if (strcmp(knobs, choices[i].knobs) != 0)
            return false;
    }
    return true;
}

/* Sets params->cpu_max_vec to the width (this machine's first) whose spaces
 * read every config as logged; the CUDA space has one form. */
static int find_space(dt_export_params *params, const dt_export_choice *choices, int n,
                      const char *best, dt_error *err)
{
    static const int widths[] = { 0, 16, 8, 4 };
    const dt_export_form *form = form_of(params->target);
    int nwidths = form && form->vector_widths ? 4 : 1, bad = 0, first_bad = 0;
    for (int w = 0; w < nwidths; w++) {
        params->cpu_max_vec = widths[w];
        if (knobs_match(params, choices, n, &bad))
            return 0;
        if (w == 0)
            first_bad = bad;   /* named as this machine's space reads it */
    }
    bad = first_bad;
    params->cpu_max_vec = 0;
    return dt_error_set(err, DT_EINVAL, "%s: task %s: config %llu is not '%s' in this dtune's "
                        "knob space (the space changed since the run)", best,
                        choices[bad].task.name, (unsigned long long)choices[bad].config,
                        choices[bad].knobs);
}

static int read_choices(const dt_run_state *rs, const dt_model *model, const char *best,
                        dt_export_choice *choices, dt_error *err)
{
    for (int k = 0; k < rs->ntasks; k++) {
        int rc = choice_of(&rs->tasks[k], model, best, &choices[k], err);
        if (rc)
            return rc;
    }
    return 0;
}

/* The kernels' threads: the run's (best.json's) unless given; given
 * otherwise than the run timed them, refused: the export would hold
 * kernels whose figures no one measured. An older best.json does not say:
 * then the count given, else the default. */
static int run_threads(dt_export_params *params, const dt_run_state *rs, const char *best,
                       dt_error *err)
{
    int run = rs->threads;
    if (params->measure.threads == 0)
        params->measure.threads = run > 0 ? run : dt_measure_params_default().threads;
    else if (run > 0 && params->measure.threads != run)
        return dt_error_set(err, DT_EINVAL, "%s: the run timed its kernels at %d thread%s, not %d: "
                            "an export at %d would hold kernels no one measured so (tune at %d "
                            "threads for them, or leave --threads out)", best, run,
                            run == 1 ? "" : "s", params->measure.threads, params->measure.threads,
                            params->measure.threads);
    return 0;
}

int dt_export_read_run(const char *run_dir, const char *model_path, dt_export_params *params,
                       char *model_name, size_t name_len, dt_export_choice **choices,
                       int *n_choices, dt_error *err)
{
    *choices = NULL;
    *n_choices = 0;
    struct stat st;
    if (stat(run_dir, &st) != 0)
        return dt_error_set(err, errno == ENOENT ? DT_ENOTFOUND : DT_EIO, "%s: %s", run_dir,
                            strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return dt_error_set(err, DT_EINVAL, "%s: not a run folder", run_dir);
    dt_run_state rs;
    int rc = dt_report_load_best(run_dir, &rs, err);
    if (rc)
        return rc;
    char path[DT_PATH_MAX], best[DT_PATH_MAX + 16];
    snprintf(best, sizeof best, "%s/best.json", run_dir);
    dt_model *model = NULL;
    dt_export_choice *list = calloc(rs.ntasks > 0 ? (size_t)rs.ntasks : 1, sizeof *list);
    if (!list)
        rc = dt_error_set(err, DT_ENOMEM, "out of memory");
    else if (!model_path && (rc = dt_export_run_model(run_dir, path, sizeof path, err)) == 0)
        model_path = path;
    if (rc == 0 && dt_target_parse(rs.target, &params->target) != 0)
        rc = dt_error_set(err, DT_EINVAL, "%s: target '%s' is not one dtune knows", best, rs.target);
    rc = rc ? rc : dt_model_file_load(model_path, NULL, NULL, &model, err);
    if (rc == DT_ENOTFOUND && model_path == path) {
        char why[DT_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%.800s", err->msg);   /* room for the hint */
        rc = dt_error_set(err, rc, "%s (the model file the run recorded; a relative path is "
                          "taken from where `dtune tune` ran; give it with -m MODEL.yaml)", why);
    }
    if (rc == 0 && strcmp(model->name, rs.model) != 0)
        rc = dt_error_set(err, DT_EINVAL, "%s: the run tuned model %s, %s is model %s", best,
                          rs.model, model_path, model->name);
    rc = rc ? rc : run_threads(params, &rs, best, err);
    rc = rc ? rc : read_choices(&rs, model, best, list, err);
    rc = rc ? rc : find_space(params, list, rs.ntasks, best, err);
    if (rc == 0) {
        snprintf(model_name, name_len, "%s", rs.model);
        *choices = list;
        *n_choices = rs.ntasks;
    } else {
        free(list);
    }
    dt_model_free(model);
    dt_run_state_destroy(&rs);
    return rc;
}

/* ---- reading the database ------------------------------------------------------------ */

/* The choice of task from db's best record of it. */
static int choice_from_db(dt_db *db, const char *machine, const dt_export_params *params,
                          const dt_task *task, dt_export_choice *c, dt_error *err)
{
    dt_space space;
    dt_space_opts opts = { .cpu_max_vec = params->cpu_max_vec };
    int rc = dt_target_space_init_opts(&space, task, params->target, &opts, err);
    if (rc)
        return rc;
    char hash[24], signature[DT_DB_SIGNATURE_MAX];
    dt_db_space_hash(&space, hash, sizeof hash);
    dt_space_free(&space);
    dt_db_task_signature(task, signature, sizeof signature);
    dt_db_best best;
    rc = dt_db_task_best(db, machine, dt_target_name(params->target), hash, signature, &best, err);
    if (rc)
        return rc;
    memset(c, 0, sizeof *c);
    c->task = *task;
    c->tuned = best.gflops > 0;
    if (c->tuned) {
        c->config = best.config;
        snprintf(c->knobs, sizeof c->knobs, "%s", best.knobs);
        c->latency_ms = best.latency_ms;
    } else if (best.records == 0) {
        snprintf(c->why, sizeof c->why, "no record of it in the tuning database for this machine "
                 "and knob space");
    } else {
        snprintf(c->why, sizeof c->why, "its %d records in the tuning database all failed",
                 best.records);
    }
    return 0;
}

int dt_export_read_db(dt_db *db, const char *machine, const char *model_path,
                      dt_export_params *params, char *model_name, size_t name_len,
                      dt_export_choice **choices, int *n_choices, dt_error *err)
{
    *choices = NULL;
    *n_choices = 0;
    dt_model *model = NULL;
    int rc = dt_model_file_load(model_path, NULL, NULL, &model, err);
    if (rc)
        return rc;
    dt_export_choice *list = calloc(model->ntasks > 0 ? (size_t)model->ntasks : 1, sizeof *list);
    if (!list)
        rc = dt_error_set(err, DT_ENOMEM, "out of memory");
    params->cpu_max_vec = 0;
    for (int k = 0; rc == 0 && k < model->ntasks; k++)
        rc = choice_from_db(db, machine, params, &model->tasks[k], &list[k], err);
    int bad = 0;
    if (rc == 0 && !knobs_match(params, list, model->ntasks, &bad))
        rc = dt_error_set(err, DT_EINVAL, "%s: task %s: config %llu is not '%s' in this dtune's "
                          "knob space (the record does not fit the space it is kept under)",
                          params->source ? params->source : "tuning database", list[bad].task.name,
                          (unsigned long long)list[bad].config, list[bad].knobs);
    if (rc == 0) {
        snprintf(model_name, name_len, "%s", model->name);
        *choices = list;
        *n_choices = model->ntasks;
    } else {
        free(list);
    }
    dt_model_free(model);
    return rc;
}
