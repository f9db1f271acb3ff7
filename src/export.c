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
 * Writing: every CPU kernel is the source cpu_codegen writes for the
 * measurement (dt_cpu_codegen_named, entry points named after the task);
 * this file adds only what a program around them needs: the header and
 * table, the reference loops, the test program and the Makefile. The test
 * program's check and timing follow dtune's own (dt_measure_check_output,
 * cpu_runner.c's time_kernel) with the export's measure settings written in.
 */
#include "dtune/export.h"
#include "export_internal.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cpu_codegen.h"
#include "dtune/report.h"
#include "cpu_runner.h"
#include "dtune/target.h"
#include "dtune/tunelog.h"

dt_export_params dt_export_params_default(void)
{
    return (dt_export_params){ .target = DT_TARGET_DEFAULT,
                               .measure = dt_measure_params_default() };
}

/* name as a C identifier: other characters become '_', a leading digit gets
 * a prefix. */
static void c_name(const char *name, const char *prefix, char *out, size_t len)
{
    size_t j = 0;
    if (isdigit((unsigned char)name[0]) || name[0] == '\0')
        j = (size_t)snprintf(out, len, "%s", prefix);
    for (const char *c = name; *c && j + 1 < len; c++)
        out[j++] = isalnum((unsigned char)*c) ? *c : '_';
    out[j < len ? j : len - 1] = '\0';
}

/* Every symbol the library defines must be unique: two tasks whose names
 * differ only in characters C names replace would share one. */
static int check_names(const export_job *job, dt_error *err)
{
    for (int i = 0; i < job->n; i++) {
        if (strcmp(job->task[i], "kernels") == 0 || strcmp(job->task[i], "reference") == 0 ||
            strcmp(job->task[i], "kernel_info") == 0 || strcmp(job->task[i], "cuda") == 0)
            return dt_error_set(err, DT_EINVAL, "task %s: its C name %s_%s is one of the library's own",
                                job->choices[i].task.name, job->lib, job->task[i]);
        for (int j = 0; j < i; j++) {
            char a[2 * EXPORT_NAME_MAX], b[2 * EXPORT_NAME_MAX];
            snprintf(a, sizeof a, "%s_prepare", job->task[j]);
            snprintf(b, sizeof b, "%s_workspace", job->task[j]);
            if (strcmp(job->task[i], job->task[j]) == 0 || strcmp(job->task[i], a) == 0 ||
                strcmp(job->task[i], b) == 0)
                return dt_error_set(err, DT_EINVAL, "tasks %s and %s give clashing C names (%s_%s)",
                                    job->choices[j].task.name, job->choices[i].task.name, job->lib,
                                    job->task[i]);
        }
    }
    return 0;
}

/* ---- the header and the table ------------------------------------------------- */

static void emit_info_type(dt_buf *b, const export_job *job)
{
    export_emit(b,
        "/* One kernel: what it computes and its entry points. Tensors are fp32:\n"
        " * NCHW input, OIHW weight (depthwise: [C][1][KH][KW]), NCHW output for\n"
        " * convolutions; [B][M][K] input, [B][N][K] weight, [B][M][N] output for\n"
        " * dense (B = 1) and batch_matmul. */\n"
        "typedef struct %s_kernel_info {\n"
        "    const char *name;          /* the task, as the model file names it */\n"
        "    const char *kind;          /* conv2d, depthwise_conv2d, dense, batch_matmul */\n"
        "    const char *shape;         /* as dtune prints it */\n"
        "    const char *config;        /* the tuned config's knobs; \"\" for the reference */\n"
        "    int tuned;                 /* 0: the entry points run the reference loops */\n"
        "    int count;                 /* occurrences in the model */\n"
        "%s"
        "    size_t input_floats, weight_floats, output_floats;\n"
        "    double flops;              /* one call: 2 x multiply-adds */\n"
        "    double dtune_ms;           /* dtune's measured latency (best.json); 0 = unknown */\n"
        "    size_t (*workspace)(void);\n"
        "    void (*prepare)(const float *weight, float *workspace);\n"
        "    void (*run)(const float *input, const float *weight, float *output, float *workspace);\n"
        "} %s_kernel_info;\n\n", job->lib, export_geometry_fields, job->lib);
}

static int write_header(const export_job *job, dt_error *err)
{
    dt_buf b = { 0 };
    export_emit(&b,
        "/* %s_kernels.h — the tuned kernels of model %s, exported by dtune%s%s.\n"
        " *\n"
        " * Per kernel TASK (see %s_kernels[] for what each computes):\n"
        " *   size_t %s_TASK_workspace(void)   floats of scratch; allocate them 64-byte aligned\n"
        " *   void %s_TASK_prepare(const float *weight, float *workspace)\n"
        " *       packs the weights into the kernel's layout; call it once per weight set\n"
        " *   void %s_TASK(const float *input, const float *weight, float *output,\n"
        " *                float *workspace)\n"
        " *       one inference of the operator; weight is the same array prepare saw\n"
        " * A workspace belongs to one call at a time.%s\n"
        " */\n"
        "#ifndef %s_KERNELS_H\n#define %s_KERNELS_H\n\n#include <stddef.h>\n\n",
        job->lib, job->lib, job->params->source ? " from " : "",
        job->params->source ? job->params->source : "", job->lib, job->lib, job->lib, job->lib,
        job->params->measure.threads > 1 ? " The kernels run on OpenMP threads." : "",
        job->upper, job->upper);
    for (int i = 0; i < job->n; i++) {
        const dt_export_choice *c = &job->choices[i];
        char shape[128];
        dt_task_shape_str(&c->task, shape, sizeof shape);
        const char *t = job->task[i];
        export_emit(&b, "/* %s: %s %s%s */\n", c->task.name, dt_op_kind_name(c->task.kind), shape,
                    c->tuned ? "" : " (reference loops: no tuned config)");
        export_emit(&b, "size_t %s_%s_workspace(void);\n"
                        "void %s_%s_prepare(const float *weight, float *workspace);\n"
                        "void %s_%s(const float *input, const float *weight, float *output,\n"
                        "    float *workspace);\n\n", job->lib, t, job->lib, t, job->lib, t);
    }
    emit_info_type(&b, job);
    export_emit(&b, "#define %s_NKERNELS %d\nextern const %s_kernel_info %s_kernels[%s_NKERNELS];\n\n"
                    "/* The plain loops every kernel is checked against. */\n"
                    "void %s_reference(const %s_kernel_info *k, const float *input, const float *weight,\n"
                    "    float *output);\n\n#endif\n",
                job->upper, job->n, job->lib, job->lib, job->upper, job->lib, job->lib);
    char name[EXPORT_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_kernels.h", job->lib);
    return export_write_file(job, name, &b, err);
}

static void emit_info_row(dt_buf *b, const export_job *job, int i)
{
    const dt_export_choice *c = &job->choices[i];
    size_t n_in, n_w, n_out;
    dt_task_tensor_sizes(&c->task, &n_in, &n_w, &n_out);
    export_emit_names(b, c);
    export_emit(b, "      .tuned = %d, .count = %d,\n", c->tuned, c->task.count);
    export_emit_geometry(b, c);
    const char *t = job->task[i], *l = job->lib;
    export_emit(b, "      .input_floats = %zu, .weight_floats = %zu, .output_floats = %zu,\n"
                   "      .flops = %.17g, .dtune_ms = %.10g,\n"
                   "      .workspace = %s_%s_workspace, .prepare = %s_%s_prepare, .run = %s_%s },\n",
                n_in, n_w, n_out, c->task.flops, c->latency_ms, l, t, l, t, l, t);
}

static int write_table(const export_job *job, dt_error *err)
{
    dt_buf b = { 0 };
    export_emit(&b, "/* %s_kernels.c — the table of %s_kernels.h. */\n#include \"%s_kernels.h\"\n\n"
                    "const %s_kernel_info %s_kernels[%s_NKERNELS] = {\n",
                job->lib, job->lib, job->lib, job->lib, job->lib, job->upper);
    for (int i = 0; i < job->n; i++)
        emit_info_row(&b, job, i);
    export_emit(&b, "};\n");
    char name[EXPORT_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_kernels.c", job->lib);
    return export_write_file(job, name, &b, err);
}

/* ---- the reference loops ------------------------------------------------------- */

static int write_reference(const export_job *job, dt_error *err)
{
    dt_buf b = { 0 };
    const char *l = job->lib;
    export_emit(&b, "/* %s_reference.c — plain loops of every operator kind, the check of\n"
                    " * every kernel (and the kernel of a task without a tuned config). */\n"
                    "#include <string.h>\n\n#include \"%s_kernels.h\"\n\n"
                    "typedef %s_kernel_info kernel_info;\n\n%s", l, l, l, export_reference_body);
    export_emit(&b, "void %s_reference(const kernel_info *k, const float *input, const float *weight,\n"
                    "    float *output)\n{\n"
                    "    if (strcmp(k->kind, \"conv2d\") == 0 || strcmp(k->kind, \"depthwise_conv2d\") == 0)\n"
                    "        conv(k, input, weight, output);\n"
                    "    else\n"
                    "        matmul(k, input, weight, output);\n}\n", l);
    char name[EXPORT_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_reference.c", l);
    return export_write_file(job, name, &b, err);
}

/* ---- kernels ----------------------------------------------------------------------- */

/* The entry points of a task without a tuned config: the reference loops. */
static void emit_reference_kernel(dt_buf *b, const export_job *job, int i)
{
    const char *l = job->lib, *t = job->task[i];
    const dt_export_choice *c = &job->choices[i];
    export_emit(b, "/* %s: no tuned config (%s): the reference loops stand in. */\n"
                   "#include \"../%s_kernels.h\"\n\n"
                   "size_t %s_%s_workspace(void)\n{\n    return 0;\n}\n\n"
                   "void %s_%s_prepare(const float *weight, float *workspace)\n{\n"
                   "    (void)weight;\n    (void)workspace;\n}\n\n"
                   "void %s_%s(const float *input, const float *weight, float *output, float *workspace)\n{\n"
                   "    (void)workspace;\n    %s_reference(&%s_kernels[%d], input, weight, output);\n}\n",
                c->task.name, c->why[0] ? c->why : "not measured", l, l, t, l, t, l, t, l, l, i);
}

static int emit_cpu_kernel(dt_buf *b, const export_job *job, int i, dt_error *err)
{
    dt_space space;
    dt_point point;
    int rc = export_point(job, i, &space, &point, err);
    if (rc)
        return rc;
    dt_cpu_plan plan;
    dt_cpu_plan_from_point(&space, &point, job->params->measure.threads, &plan);
    dt_space_free(&space);
    char entry[2 * EXPORT_NAME_MAX + 2], *source = NULL;
    snprintf(entry, sizeof entry, "%s_%s", job->lib, job->task[i]);
    dt_error why;
    rc = dt_cpu_codegen_named(&plan, entry, &source, &why);
    if (rc)
        return dt_error_set(err, rc, "task %s: %s", job->choices[i].task.name, why.msg);
    export_emit(b, "#include \"../%s_kernels.h\"\n\n%s", job->lib, source);
    free(source);
    return 0;
}

static int write_kernels(const export_job *job, dt_error *err)
{
    for (int i = 0; i < job->n; i++) {
        dt_buf b = { 0 };
        int rc = 0;
        if (job->choices[i].tuned)
            rc = emit_cpu_kernel(&b, job, i, err);
        else
            emit_reference_kernel(&b, job, i);
        char name[EXPORT_NAME_MAX + 16];
        snprintf(name, sizeof name, "kernels/%s.c", job->task[i]);
        rc = rc ? rc : export_write_file(job, name, &b, err);
        dt_buf_free(&b);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- the test program ------------------------------------------------------------- */

/* The CPU program: kernels called on host buffers. */
static const char test_body[] =
    "typedef struct cpu_call {\n"
    "    const kernel_info *k;\n"
    "    const float *in, *w;\n"
    "    float *out, *ws;\n"
    "} cpu_call;\n\n"
    "static void cpu_batch(void *ctx, long calls)\n"
    "{\n"
    "    const cpu_call *c = ctx;\n"
    "    for (long i = 0; i < calls; i++)\n"
    "        c->k->run(c->in, c->w, c->out, c->ws);\n"
    "}\n\n"
    "/* Checks (and unless check_only, times) kernel k; returns 0 when it matches. */\n"
    "static int test_kernel(const kernel_info *k, int check_only)\n"
    "{\n"
    "    float *in = alloc_floats(k->input_floats), *w = alloc_floats(k->weight_floats);\n"
    "    float *out = alloc_floats(k->output_floats), *ref = alloc_floats(k->output_floats);\n"
    "    float *ws = alloc_floats(k->workspace());\n"
    "    long bad = 0;\n"
    "    if (!in || !w || !out || !ref || !ws) {\n"
    "        printf(\"%-20s FAIL out of memory\\n\", k->name);\n"
    "    } else {\n"
    "        fill(in, k->input_floats, SEED);\n"
    "        fill(w, k->weight_floats, SEED ^ 0x5eedULL);\n"
    "        REFERENCE(k, in, w, ref);\n"
    "        for (size_t i = 0; i < k->output_floats; i++)\n"
    "            out[i] = NAN;\n"
    "        k->prepare(w, ws);\n"
    "        k->run(in, w, out, ws);\n"
    "        double worst;\n"
    "        bad = check(out, ref, k->output_floats, &worst);\n"
    "        cpu_call call = { k, in, w, out, ws };\n"
    "        timing t;\n"
    "        if (bad < 0 && !check_only)\n"
    "            t = time_batches(cpu_batch, &call, k->flops);\n"
    "        print_result(k, bad, out, ref, worst, bad < 0 && !check_only ? &t : NULL);\n"
    "    }\n"
    "    free(in);\n    free(w);\n    free(out);\n    free(ref);\n    free(ws);\n"
    "    return bad >= 0;\n"
    "}\n\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    int check_only, first, tested = 0, failed = 0;\n"
    "    options(argc, argv, &check_only, &first);\n"
    "    for (int i = 0; i < NKERNELS; i++)\n"
    "        if (named(argc, argv, first, KERNELS[i].name)) {\n"
    "            failed += test_kernel(&KERNELS[i], check_only);\n"
    "            tested++;\n"
    "        }\n"
    "    printf(\"%d of %d kernels match the reference\\n\", tested - failed, tested);\n"
    "    return failed || tested == 0 ? 1 : 0;\n"
    "}\n";

static int write_test(const export_job *job, dt_error *err)
{
    const char *l = job->lib;
    dt_buf b = { 0 };
    export_emit(&b, "/* %s_test.c — checks every kernel of %s_kernels.h against the reference\n"
                    " * loops and times it with dtune's rule; `./%s_test --help`. */\n"
                    "%s#include \"%s_kernels.h\"\n\n"
                    "typedef %s_kernel_info kernel_info;\n#define KERNELS %s_kernels\n"
                    "#define NKERNELS %s_NKERNELS\n#define REFERENCE %s_reference\n\n",
                l, l, l, export_test_includes, l, l, l, job->upper, l);
    export_emit_test_settings(&b, job, DT_RUNNER_AUTO_BATCH_S, DT_RUNNER_AUTO_BATCH_MAX_CALLS);
    export_emit(&b, "%s%s", export_test_common, test_body);
    char name[EXPORT_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_test.c", l);
    return export_write_file(job, name, &b, err);
}

static int write_makefile(const export_job *job, dt_error *err)
{
    const char *l = job->lib;
    bool omp = job->params->measure.threads > 1;
    dt_buf b = { 0 };
    export_emit(&b, "# Makefile of the %s kernels exported by dtune.\n"
                    "#   make        lib%s_kernels.a and %s_test\n"
                    "#   make test   every kernel checked against the reference and timed\n\n"
                    "CC      ?= cc\n"
                    "# the flags dtune compiled and measured the kernels with\n"
                    "KFLAGS  := %s%s\n"
                    "CFLAGS  ?= -std=gnu11 -O2\n"
                    "LIB     := lib%s_kernels.a\n"
                    "KERNELS := $(wildcard kernels/*.c)\n"
                    "OBJ     := $(KERNELS:.c=.o) %s_kernels.o %s_reference.o\n\n"
                    ".PHONY: all test clean\nall: $(LIB) %s_test\n\n"
                    "%%.o: %%.c %s_kernels.h\n\t$(CC) $(KFLAGS) -c $< -o $@\n\n"
                    "$(LIB): $(OBJ)\n\trm -f $@\n\tar rcs $@ $^\n\n"
                    "%s_test: %s_test.c %s_kernels.h $(LIB)\n\t$(CC) $(CFLAGS) -o $@ $< $(LIB) -lm%s\n\n"
                    "test: %s_test\n\t./%s_test\n\n"
                    "clean:\n\trm -f $(OBJ) $(LIB) %s_test\n",
                l, l, l, DT_CPU_KERNEL_CFLAGS, omp ? " -fopenmp" : "", l, l, l, l, l, l, l, l,
                omp ? " -fopenmp" : "", l, l, l);
    return export_write_file(job, "Makefile", &b, err);
}

static int write_cpu(const export_job *job, dt_error *err)
{
    int rc = write_header(job, err);
    rc = rc ? rc : write_table(job, err);
    rc = rc ? rc : write_reference(job, err);
    rc = rc ? rc : write_kernels(job, err);
    rc = rc ? rc : write_test(job, err);
    return rc ? rc : write_makefile(job, err);
}

/* What an export is on each target that has one: how it is written, whether
 * its space depends on the vector width the run's space offered, and how a
 * user builds it (a format of the export's folder). */
typedef struct export_form {
    dt_target target;
    int (*write)(const export_job *job, dt_error *err);
    bool vector_widths;
    const char *build_hint;
} export_form;

static const export_form forms[] = {
    { DT_TARGET_CPU, write_cpu, true, "build and check them: make -C %s test" },
    { DT_TARGET_CUDA, export_write_cuda, false,
      "build the loader and its test: make -C %s (the test runs on a machine with the GPU)" },
};

static const export_form *form_of(dt_target target)
{
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if (forms[i].target == target)
            return &forms[i];
    return NULL;
}

const char *dt_export_build_hint(dt_target target)
{
    const export_form *form = form_of(target);
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
    c_name(name, "m", job.lib, sizeof job.lib);
    for (size_t i = 0; i <= strlen(job.lib); i++)
        job.upper[i] = (char)toupper((unsigned char)job.lib[i]);
    job.task = calloc((size_t)n, sizeof *job.task);
    if (!job.task)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        c_name(choices[i].task.name, "t", job.task[i], sizeof job.task[i]);
    char kernels[DT_PATH_MAX + 16];
    snprintf(kernels, sizeof kernels, "%s/kernels", out_dir);
    int rc = check_names(&job, err);
    rc = rc ? rc : dt_mkdir_p(kernels, err);
    const export_form *form = form_of(params->target);
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

/* The model file RUN_DIR/tuning.jsonl's run record names. */
static int run_model_path(const char *run_dir, char *path, size_t len, dt_error *err)
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
    const export_form *form = form_of(params->target);
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
    else if (!model_path && (rc = run_model_path(run_dir, path, sizeof path, err)) == 0)
        model_path = path;
    if (rc == 0 && dt_target_parse(rs.target, &params->target) != 0)
        rc = dt_error_set(err, DT_EINVAL, "%s: target '%s' is not one dtune knows", best, rs.target);
    rc = rc ? rc : dt_model_load(model_path, &model, err);
    if (rc == DT_ENOTFOUND && model_path == path) {
        char why[DT_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%.800s", err->msg);   /* room for the hint */
        rc = dt_error_set(err, rc, "%s (the model file the run recorded; a relative path is "
                          "taken from where `dtune tune` ran; give it with -m MODEL.yaml)", why);
    }
    if (rc == 0 && strcmp(model->name, rs.model) != 0)
        rc = dt_error_set(err, DT_EINVAL, "%s: the run tuned model %s, %s is model %s", best,
                          rs.model, model_path, model->name);
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
    int rc = dt_model_load(model_path, &model, err);
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
