/* export_text.c — what the CPU and CUDA forms of an export share: the
 * emitters and the file writer, a choice's space point, and the C text both
 * forms put into their files (the table's geometry fields, the reference
 * loops, the test programs' check, input fill and timing). */
#include "export_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dtune/target.h"

/* ---- emitting and writing ---------------------------------------------------- */

void export_emit(dt_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dt_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

const char export_cplusplus_open[] = "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
const char export_cplusplus_close[] = "#ifdef __cplusplus\n}\n#endif\n";

const char *export_plain_text(const char *text, char *out, size_t len)
{
    size_t j = 0;
    for (const char *c = text ? text : ""; *c && j + 1 < len; c++)
        out[j++] = isprint((unsigned char)*c) && !strchr("*\"\\", *c) ? *c : '_';
    if (len > 0)
        out[j] = '\0';
    return out;
}

void export_emit_string(dt_buf *b, const char *text)
{
    export_emit(b, "    \"");
    for (const char *c = text; *c; c++) {
        if (*c == '\n')
            export_emit(b, "\\n\"%s", c[1] ? "\n    \"" : "");
        else if (*c == '"' || *c == '\\')
            export_emit(b, "\\%c", *c);
        else
            export_emit(b, "%c", *c);
    }
    if (text[0] == '\0' || text[strlen(text) - 1] != '\n')
        export_emit(b, "\"");
}

void export_emit_names(dt_buf *b, const dt_export_choice *c)
{
    char shape[128];
    dt_task_shape_str(&c->task, shape, sizeof shape);
    const char *keys[] = { ".name", ".kind", ".shape", ".config" };
    const char *values[] = { c->task.name, dt_op_kind_name(c->task.kind), shape,
                             c->tuned ? c->knobs : "" };
    export_emit(b, "    {");
    for (int i = 0; i < 4; i++) {
        export_emit(b, " %s = \"", keys[i]);
        for (const char *ch = values[i]; *ch; ch++)
            export_emit(b, *ch == '"' || *ch == '\\' ? "\\%c" : "%c",
                        (unsigned char)*ch < ' ' ? '?' : *ch);
        export_emit(b, "\",");
    }
    export_emit(b, "\n");
}

void export_emit_geometry(dt_buf *b, const dt_export_choice *c)
{
    const dt_conv_shape *v = &c->task.conv;
    const dt_mm_shape *m = &c->task.mm;
    if (c->task.kind == DT_OP_CONV2D || c->task.kind == DT_OP_DEPTHWISE_CONV2D)
        export_emit(b, "      .n = %d, .c_in = %d, .h = %d, .w = %d, .c_out = %d, .kh = %d, .kw = %d,\n"
                       "      .sh = %d, .sw = %d, .ph = %d, .pw = %d, .dh = %d, .dw = %d, .oh = %d, .ow = %d,\n",
                    v->n, v->c_in, v->h, v->w, v->c_out, v->kh, v->kw, v->sh, v->sw, v->ph, v->pw,
                    v->dh, v->dw, v->oh, v->ow);
    else
        export_emit(b, "      .mm_b = %d, .mm_m = %d, .mm_n = %d, .mm_k = %d,\n", m->b, m->m, m->n, m->k);
}

int export_write_file(const export_job *job, const char *name, dt_buf *b, dt_error *err)
{
    if (b->failed || !b->data) {
        dt_buf_free(b);
        return dt_error_set(err, DT_ENOMEM, "out of memory writing %s", name);
    }
    char path[DT_PATH_MAX + 2 * EXPORT_NAME_MAX];
    snprintf(path, sizeof path, "%s/%s", job->out_dir, name);
    FILE *f = fopen(path, "w");
    bool ok = f && fwrite(b->data, 1, b->len, f) == b->len;
    int e = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    dt_buf_free(b);
    return ok ? 0 : dt_error_set(err, DT_EIO, "%s: cannot write: %s", path, strerror(e));
}

int export_point(const export_job *job, int i, dt_space *space, dt_point *point, dt_error *err)
{
    const dt_export_choice *c = &job->choices[i];
    dt_space_opts opts = { .cpu_max_vec = job->params->cpu_max_vec };
    int rc = dt_target_space_init_opts(space, &c->task, job->params->target, &opts, err);
    if (rc)
        return rc;
    if (c->config >= space->size) {
        dt_space_free(space);
        return dt_error_set(err, DT_EINVAL, "task %s: config %llu is outside its space of %llu",
                            c->task.name, (unsigned long long)c->config,
                            (unsigned long long)space->size);
    }
    dt_space_point(space, c->config, point);
    if (!dt_space_valid(space, point)) {
        dt_space_free(space);
        return dt_error_set(err, DT_EINVAL, "task %s: config %llu is not valid on %s", c->task.name,
                            (unsigned long long)c->config, dt_target_name(job->params->target));
    }
    return 0;
}

/* ---- text both forms write ---------------------------------------------------- */

const char export_geometry_fields[] =
    "    int n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow; /* convolutions */\n"
    "    int mm_b, mm_m, mm_n, mm_k;                                       /* matrix products */\n";


/* The operator semantics of model.h, as plain loops accumulating in double. */
const char export_reference_body[] =
    "static void conv(const kernel_info *k, const float *x, const float *w, float *y)\n"
    "{\n"
    "    int depthwise = strcmp(k->kind, \"depthwise_conv2d\") == 0;\n"
    "    int mult = depthwise ? k->c_out / k->c_in : 1;\n"
    "    for (int n = 0; n < k->n; n++)\n"
    "    for (int co = 0; co < k->c_out; co++)\n"
    "    for (int oh = 0; oh < k->oh; oh++)\n"
    "    for (int ow = 0; ow < k->ow; ow++) {\n"
    "        double acc = 0;\n"
    "        int ci_lo = depthwise ? co / mult : 0, ci_hi = depthwise ? ci_lo + 1 : k->c_in;\n"
    "        for (int ci = ci_lo; ci < ci_hi; ci++)\n"
    "        for (int r = 0; r < k->kh; r++)\n"
    "        for (int s = 0; s < k->kw; s++) {\n"
    "            int ih = oh * k->sh + r * k->dh - k->ph, iw = ow * k->sw + s * k->dw - k->pw;\n"
    "            if (ih < 0 || ih >= k->h || iw < 0 || iw >= k->w)\n"
    "                continue;\n"
    "            size_t xi = (((size_t)n * k->c_in + ci) * k->h + ih) * k->w + iw;\n"
    "            size_t wi = depthwise ? ((size_t)co * k->kh + r) * k->kw + s\n"
    "                                  : (((size_t)co * k->c_in + ci) * k->kh + r) * k->kw + s;\n"
    "            acc += (double)x[xi] * w[wi];\n"
    "        }\n"
    "        y[(((size_t)n * k->c_out + co) * k->oh + oh) * k->ow + ow] = (float)acc;\n"
    "    }\n"
    "}\n\n"
    "static void matmul(const kernel_info *k, const float *a, const float *bt, float *y)\n"
    "{\n"
    "    for (int b = 0; b < k->mm_b; b++)\n"
    "    for (int i = 0; i < k->mm_m; i++)\n"
    "    for (int j = 0; j < k->mm_n; j++) {\n"
    "        const float *row = a + ((size_t)b * k->mm_m + i) * k->mm_k;\n"
    "        const float *col = bt + ((size_t)b * k->mm_n + j) * k->mm_k;\n"
    "        double acc = 0;\n"
    "        for (int kk = 0; kk < k->mm_k; kk++)\n"
    "            acc += (double)row[kk] * col[kk];\n"
    "        y[((size_t)b * k->mm_m + i) * k->mm_n + j] = (float)acc;\n"
    "    }\n"
    "}\n\n";


const char export_test_includes[] =
    "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include <string.h>\n#include <time.h>\n\n";

void export_emit_test_settings(dt_buf *b, const export_job *job, double auto_batch_s,
                               int auto_batch_max_calls)
{
    const dt_measure_params *m = &job->params->measure;
    export_emit(b, "/* dtune's measure settings of the export */\n"
                   "#define TOLERANCE %.17g\n#define MIN_BATCHES %d\n#define MAX_REPEATS %d\n"
                   "#define CV_THRESHOLD %.17g\n#define AUTO_BATCH_S %.17g\n"
                   "#define AUTO_BATCH_MAX_CALLS %d\n#define SEED 1ULL\n\n",
                m->tolerance, m->min_batches, m->max_repeats, m->cv_threshold, auto_batch_s,
                auto_batch_max_calls);
}

/* What both test programs share: inputs as dtune's runners draw them
 * (dt_measure_fill), the check as dt_measure_check_output, the timing as
 * the runners' (one warm-up call, automatic micro-batches, the CV rule).
 * The including program defines kernel_info, TOLERANCE, MIN_BATCHES,
 * MAX_REPEATS, CV_THRESHOLD, AUTO_BATCH_S and AUTO_BATCH_MAX_CALLS. */
const char export_test_common[] =
    "static double now_seconds(void)\n"
    "{\n"
    "    struct timespec t;\n"
    "#ifdef CLOCK_MONOTONIC_RAW\n"
    "    clock_gettime(CLOCK_MONOTONIC_RAW, &t);\n"
    "#else\n"
    "    clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "#endif\n"
    "    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;\n"
    "}\n\n"
    "static uint64_t splitmix64(uint64_t *state)\n"
    "{\n"
    "    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);\n"
    "    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;\n"
    "    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;\n"
    "    return z ^ (z >> 31);\n"
    "}\n\n"
    "/* n values uniform in [-1, 1). */\n"
    "static void fill(float *data, size_t n, uint64_t seed)\n"
    "{\n"
    "    for (size_t i = 0; i < n; i++)\n"
    "        data[i] = (float)((double)(splitmix64(&seed) >> 11) * 0x1.0p-52 - 1.0);\n"
    "}\n\n"
    "static float *alloc_floats(size_t n)\n"
    "{\n"
    "    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;\n"
    "    return aligned_alloc(64, bytes ? bytes : 64);\n"
    "}\n\n"
    "/* Element i passes when |out - ref| <= TOLERANCE * max(|ref_i|, max|ref| / 100).\n"
    " * Returns the first failing index or -1; *worst is the largest relative error. */\n"
    "static long check(const float *out, const float *ref, size_t n, double *worst)\n"
    "{\n"
    "    double peak = 0;\n"
    "    long bad = -1;\n"
    "    *worst = 0;\n"
    "    for (size_t i = 0; i < n; i++)\n"
    "        peak = fmax(peak, fabs(ref[i]));\n"
    "    for (size_t i = 0; i < n; i++) {\n"
    "        double scale = fmax(fabs(ref[i]), peak / 100), diff = fabs((double)out[i] - ref[i]);\n"
    "        if (!(diff <= TOLERANCE * scale) && bad < 0)\n"
    "            bad = (long)i;\n"
    "        if (scale > 0 && diff / scale > *worst)\n"
    "            *worst = diff / scale;\n"
    "    }\n"
    "    return bad;\n"
    "}\n\n"
    "typedef struct timing {\n"
    "    double ms;        /* mean time per call over every timed call */\n"
    "    long calls;\n"
    "    int batches;\n"
    "    double cv;        /* std / mean of the per-batch GFLOPS */\n"
    "} timing;\n\n"
    "/* batch(ctx, calls) makes `calls` calls and returns when they are done.\n"
    " * One warm-up call, then micro-batches of about AUTO_BATCH_S until at least\n"
    " * MIN_BATCHES exist and their GFLOPS vary by less than CV_THRESHOLD, or\n"
    " * MAX_REPEATS: the rule dtune measured with. */\n"
    "static timing time_batches(void (*batch)(void *ctx, long calls), void *ctx, double flops)\n"
    "{\n"
    "    double t0 = now_seconds();\n"
    "    batch(ctx, 1);\n"
    "    double first = now_seconds() - t0, want = AUTO_BATCH_S / (first > 1e-9 ? first : 1e-9);\n"
    "    long calls = want < 1 ? 1 : want > AUTO_BATCH_MAX_CALLS ? AUTO_BATCH_MAX_CALLS : (long)ceil(want);\n"
    "    double mean = 0, m2 = 0, total = 0;\n"
    "    long total_calls = 0;\n"
    "    int n = 0;\n"
    "    for (;;) {\n"
    "        double start = now_seconds();\n"
    "        batch(ctx, calls);\n"
    "        double seconds = now_seconds() - start;\n"
    "        total += seconds;\n"
    "        total_calls += calls;\n"
    "        double gflops = flops * (double)calls / (seconds > 1e-12 ? seconds : 1e-12) * 1e-9;\n"
    "        n++;\n"
    "        double delta = gflops - mean;\n"
    "        mean += delta / n;\n"
    "        m2 += delta * (gflops - mean);\n"
    "        double cv = n < 2 ? 0 : mean == 0 ? INFINITY : sqrt(m2 / n) / fabs(mean);\n"
    "        if (n >= MAX_REPEATS || (n >= MIN_BATCHES && cv < CV_THRESHOLD))\n"
    "            return (timing){ 1e3 * total / (double)total_calls, total_calls, n, cv };\n"
    "    }\n"
    "}\n\n"
    "/* One line per kernel: FAIL, or ok with the largest error and (t not NULL)\n"
    " * the timing beside dtune's own figure. */\n"
    "static void print_result(const kernel_info *k, long bad, const float *out, const float *ref,\n"
    "                         double worst, const timing *t)\n"
    "{\n"
    "    if (bad >= 0) {\n"
    "        printf(\"%-20s FAIL element %ld is %.9g, reference %.9g\\n\", k->name, bad,\n"
    "               (double)out[bad], (double)ref[bad]);\n"
    "        return;\n"
    "    }\n"
    "    printf(\"%-20s ok   max_rel_err %.2e\", k->name, worst);\n"
    "    if (t)\n"
    "        printf(\"  ms %.6f  calls %ld  batches %d  cv %.3f\", t->ms, t->calls, t->batches, t->cv);\n"
    "    if (t && k->dtune_ms > 0)\n"
    "        printf(\"  dtune_ms %.6f  ratio %.3f\", k->dtune_ms, t->ms / k->dtune_ms);\n"
    "    printf(\"%s\\n\", k->tuned ? \"\" : \"  (reference)\");\n"
    "}\n\n"
    "/* Whether the command line (from argv[first]) names the task; none: all. */\n"
    "static int named(int argc, char **argv, int first, const char *name)\n"
    "{\n"
    "    if (first >= argc)\n"
    "        return 1;\n"
    "    for (int i = first; i < argc; i++)\n"
    "        if (strcmp(argv[i], name) == 0)\n"
    "            return 1;\n"
    "    return 0;\n"
    "}\n\n"
    "/* The options; returns 0 to go on, else exits after --help. */\n"
    "static int options(int argc, char **argv, int *check_only, int *first)\n"
    "{\n"
    "    *check_only = argc > 1 && strcmp(argv[1], \"--check-only\") == 0;\n"
    "    *first = 1 + *check_only;\n"
    "    if (argc > 1 && (strcmp(argv[1], \"-h\") == 0 || strcmp(argv[1], \"--help\") == 0)) {\n"
    "        printf(\"usage: %s [--check-only] [TASK...]\\nChecks every kernel (or the TASKs) against \"\n"
    "               \"the reference loops and times it as dtune did:\\nthe mean ms per call after one \"\n"
    "               \"warm-up call, beside dtune's own figure (dtune_ms).\\n\", argv[0]);\n"
    "        exit(0);\n"
    "    }\n"
    "    return 0;\n"
    "}\n\n";

