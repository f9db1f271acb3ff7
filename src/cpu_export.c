/* cpu_export.c — the CPU form of an export (see export.h).
 *
 * Every CPU kernel is the source cpu_codegen writes for the measurement
 * (dt_cpu_codegen_named, entry points named after the task); this file adds
 * only what a program around them needs: the header and table, the
 * reference loops, the test program and the Makefile. The test program's
 * check and timing follow dtune's own (dt_measure_check_output,
 * cpu_runner.c's time_kernel) with the export's measure settings written in.
 */
#include "export_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_codegen.h"
#include "cpu_runner.h"

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
        "    size_t (*workspace_bytes)(void);\n"
        "    void (*prepare)(const float *weight, float *workspace);\n"
        "    void (*run)(const float *input, const float *weight, float *output, float *workspace);\n"
        "} %s_kernel_info;\n\n", job->lib, export_geometry_fields, job->lib);
}

static int write_header(const export_job *job, dt_error *err)
{
    dt_buf b = { 0 };
    char source[DT_PATH_MAX], task_name[DT_NAME_MAX];
    export_plain_text(job->params->source, source, sizeof source);
    export_emit(&b,
        "/* %s_kernels.h — the tuned kernels of model %s, exported by dtune%s%s.\n"
        " *\n"
        " * Per kernel TASK (see %s_kernels[] for what each computes):\n"
        " *   size_t %s_TASK_workspace_bytes(void)   bytes of scratch; allocate them 64-byte aligned\n"
        " *   void %s_TASK_prepare(const float *weight, float *workspace)\n"
        " *       packs the weights into the kernel's layout; call it once per weight set\n"
        " *   void %s_TASK(const float *input, const float *weight, float *output,\n"
        " *                float *workspace)\n"
        " *       one inference of the operator; weight is the same array prepare saw\n"
        " *   void %s_TASK_epilogue(const float *input, const float *weight, float *output,\n"
        " *                         float *workspace, const float *bias, const float *residual,\n"
        " *                         int act)\n"
        " *       (a task with an epilogue) the same, then output = act(output + bias[channel\n"
        " *       or column] + residual) in the same call; bias or residual NULL skips it,\n"
        " *       act is 0 (none), 1 (relu) or 2 (relu6)\n"
        " * A workspace belongs to one call at a time.%s\n"
        " */\n"
        "#ifndef %s_KERNELS_H\n#define %s_KERNELS_H\n\n#include <stddef.h>\n\n",
        job->lib, job->lib, job->params->source ? " from " : "", source, job->lib, job->lib, job->lib, job->lib,
        job->lib, job->params->measure.threads > 1 ? " The kernels run on OpenMP threads." : "",
        job->upper, job->upper);
    export_emit(&b, "%s", export_cplusplus_open);
    for (int i = 0; i < job->n; i++) {
        const dt_export_choice *c = &job->choices[i];
        char shape[128];
        dt_task_shape_str(&c->task, shape, sizeof shape);
        const char *t = job->task[i];
        char plain[EXPORT_NAME_MAX];
        export_c_name(c->task.name, "t", plain, sizeof plain);
        export_emit(&b, "/* %s: %s %s%s%s%s */\n", export_plain_text(c->task.name, task_name, sizeof task_name),
                    dt_op_kind_name(c->task.kind), shape,
                    c->tuned ? "" : " (reference loops: no tuned config)",
                    strcmp(plain, t) ? "; renamed: its C name would clash with another's as " : "",
                    strcmp(plain, t) ? plain : "");
        export_emit(&b, "size_t %s_%s_workspace_bytes(void);\n"
                        "void %s_%s_prepare(const float *weight, float *workspace);\n"
                        "void %s_%s(const float *input, const float *weight, float *output,\n"
                        "    float *workspace);\n", job->lib, t, job->lib, t, job->lib, t);
        if (dt_task_has_epilogue(&c->task))
            export_emit(&b, "void %s_%s_epilogue(const float *input, const float *weight, float *output,\n"
                            "    float *workspace, const float *bias, const float *residual, int act);\n",
                        job->lib, t);
        export_emit(&b, "\n");
    }
    emit_info_type(&b, job);
    export_emit(&b, "#define %s_NKERNELS %d\nextern const %s_kernel_info %s_kernels[%s_NKERNELS];\n\n"
                    "/* The plain loops every kernel is checked against. */\n"
                    "void %s_reference(const %s_kernel_info *k, const float *input, const float *weight,\n"
                    "    float *output);\n\n%s#endif\n",
                job->upper, job->n, job->lib, job->lib, job->upper, job->lib, job->lib, export_cplusplus_close);
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
                   "      .workspace_bytes = %s_%s_workspace_bytes, .prepare = %s_%s_prepare, .run = %s_%s },\n",
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
    char name[DT_NAME_MAX], why[sizeof c->why];
    export_emit(b, "/* %s: no tuned config (%s): the reference loops stand in. */\n"
                   "#include \"../%s_kernels.h\"\n\n"
                   "size_t %s_%s_workspace_bytes(void)\n{\n    return 0;\n}\n\n"
                   "void %s_%s_prepare(const float *weight, float *workspace)\n{\n"
                   "    (void)weight;\n    (void)workspace;\n}\n\n"
                   "void %s_%s(const float *input, const float *weight, float *output, float *workspace)\n{\n"
                   "    (void)workspace;\n    %s_reference(&%s_kernels[%d], input, weight, output);\n}\n",
                export_plain_text(c->task.name, name, sizeof name),
                export_plain_text(c->why[0] ? c->why : "not measured", why, sizeof why), l, l, t, l, t, l, t,
                l, l, i);
    if (!dt_task_has_epilogue(&c->task))
        return;
    bool conv = c->task.kind != DT_OP_DENSE && c->task.kind != DT_OP_BATCH_MATMUL;
    size_t n_in, n_w, n_out;
    dt_task_tensor_sizes(&c->task, &n_in, &n_w, &n_out);
    size_t inner = conv ? (size_t)c->task.conv.oh * c->task.conv.ow : (size_t)c->task.mm.n;
    char channel[64];   /* the bias index of output float i */
    if (conv)
        snprintf(channel, sizeof channel, "i / %zu %% %d", inner, c->task.conv.c_out);
    else
        snprintf(channel, sizeof channel, "i %% %zu", inner);
    export_emit(b, "\nvoid %s_%s_epilogue(const float *input, const float *weight, float *output,\n"
                   "    float *workspace, const float *bias, const float *residual, int act)\n{\n"
                   "    %s_%s(input, weight, output, workspace);\n"
                   "    for (size_t i = 0; i < %zu; i++) {\n"
                   "        float v = output[i];\n"
                   "        if (bias)\n            v += bias[%s];\n"
                   "        if (residual)\n            v += residual[i];\n"
                   "        if (act && !(v > 0.0f))\n            v = 0.0f;\n"
                   "        if (act == 2 && v > 6.0f)\n            v = 6.0f;\n"
                   "        output[i] = v;\n    }\n}\n",
                l, t, l, t, n_out, channel);
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
    "    float *ws = alloc_floats((k->workspace_bytes() + sizeof(float) - 1) / sizeof(float));\n"
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
    export_emit_test_settings(&b, job, DT_CPU_RUNNER_AUTO_BATCH_S, DT_CPU_RUNNER_AUTO_BATCH_MAX_CALLS);
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
const dt_export_form dt_cpu_export = {
    .write = write_cpu,
    .vector_widths = true,
    .build_hint = "build and check them: make -C %s test",
};
