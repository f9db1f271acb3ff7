/* netexport.c — a whole network as a C library (netexport.h).
 *
 * The plan (netexport_plan.c) says where each tensor's floats live: the
 * caller's input or output, the weights, or an offset of the arena, the
 * views among them and each kernel's workspace. This file writes it out:
 * NAME_net.c as straight code, one call per node with every size and
 * offset a constant, between the fixed runtime text of netexport_text.c;
 * the header, the run program, the Makefile, the weights file and the
 * test data. The kernels themselves are the kernel export's
 * (dt_export_write into the same folder).
 */
#include "dtune/netexport.h"
#include "export_internal.h"
#include "netexport_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_codegen.h"
#include "dtune/graph_ref.h"
#include "dtune/measure.h"
#include "dtune/onnx.h"
#include "dtune/target.h"

dt_netexport_params dt_netexport_params_default(void)
{
    return (dt_netexport_params){ .kernels = dt_export_params_default(), .test_seed = 0x5eed5eedULL };
}

/* ---- reading a network ---------------------------------------------------------- */

static int read_onnx(const char *path, dt_graph **out, dt_error *err)
{
    dt_onnx_options opts = dt_onnx_default_options();
    return dt_onnx_load(path, &opts, out, err);
}

/* The readers of a network graph, by file suffix. */
typedef struct graph_reader {
    const char *suffix;
    int (*read)(const char *path, dt_graph **out, dt_error *err);
} graph_reader;

static const graph_reader graph_readers[] = { { ".onnx", read_onnx }, { NULL, NULL } };

int dt_netexport_read_graph(const char *path, dt_graph **out, dt_error *err)
{
    *out = NULL;
    size_t len = strlen(path);
    for (const graph_reader *r = graph_readers; r->suffix; r++)
        if (len >= strlen(r->suffix) && strcmp(path + len - strlen(r->suffix), r->suffix) == 0)
            return r->read(path, out, err);
    return dt_error_set(err, DT_ENOTSUP, "%s: a model file lists tasks, not a network; the network "
                        "export reads the network from an ONNX file (-m MODEL.onnx, or a run of one)",
                        path);
}

/* ---- the text of NAME_net.c ------------------------------------------------------ */

/* The export being written: the kernel export's names and the plan. */
typedef struct net_job {
    export_job files;                  /* out_dir and lib, for export_write_file */
    char (*task)[EXPORT_NAME_MAX];     /* per choice: TASK as a C name */
    const netexport_plan *plan;
} net_job;

/* Where tensor t's floats are, as a C expression of run_nodes' locals. */
static const char *where(const netexport_plan *p, int t, char *buf, size_t len)
{
    size_t at;
    int r = netexport_root(p, t, &at);
    if (r == p->g->input)
        snprintf(buf, len, "in + %zu", at);
    else if (r == p->g->output)
        snprintf(buf, len, "out + %zu", at);
    else if (p->g->tensors[r].constant)
        snprintf(buf, len, "w + %zu", p->g->tensors[r].offset + at);
    else
        snprintf(buf, len, "a + %zu", p->arena_at[r] + at);
    return buf;
}

static const char *act_name(dt_act act)
{
    return act == DT_ACT_RELU ? "ACT_RELU" : act == DT_ACT_RELU6 ? "ACT_RELU6" : "ACT_NONE";
}

/* Whether the node's kernel applies its epilogue itself: its task's kernel
 * has an epilogue entry (a task tuned with one: an ONNX model's, or a model
 * file's `epilogue` key) that holds every part the node needs. A kernel
 * tuned without one (a plain model file's) leaves the node its separate
 * pass. */
static bool epilogue_fused(const net_job *job, int node)
{
    const dt_graph_node *n = &job->plan->g->nodes[node];
    const dt_task_epilogue *e = &job->files.choices[job->plan->choice[node]].task.epilogue;
    bool has = e->bias || e->residual || e->act != DT_ACT_NONE;
    return has && (n->epilogue.bias < 0 || e->bias) && (n->epilogue.residual < 0 || e->residual) &&
           (n->epilogue.act == DT_ACT_NONE || e->act != DT_ACT_NONE);
}

static void emit_kernel_node(dt_buf *b, const net_job *job, int i)
{
    const netexport_plan *p = job->plan;
    const dt_graph *g = p->g;
    const dt_graph_node *node = &g->nodes[i];
    const dt_graph_tensor *y = &g->tensors[node->output];
    const dt_epilogue *e = &node->epilogue;
    char x[64], w[64], out[64], bias[64] = "NULL", res[64] = "NULL";
    where(p, node->inputs[0], x, sizeof x);
    where(p, node->inputs[1], w, sizeof w);
    where(p, node->output, out, sizeof out);
    if (e->bias >= 0)
        where(p, e->bias, bias, sizeof bias);
    if (e->residual >= 0)
        where(p, e->residual, res, sizeof res);
    const char *l = job->files.lib, *t = job->task[p->choice[i]];
    if (epilogue_fused(job, i)) {
        export_emit(b, "    %s_%s_epilogue(%s, %s, %s, ws[%d], %s, %s, %s);\n", l, t, x, w, out,
                    p->slot[i], bias, res, act_name(e->act));
        return;
    }
    export_emit(b, "    %s_%s(%s, %s, %s, ws[%d]);\n", l, t, x, w, out, p->slot[i]);
    if (e->bias < 0 && e->residual < 0 && e->act == DT_ACT_NONE)
        return;
    size_t inner = node->op == DT_GRAPH_CONV ? (size_t)y->dims[2] * y->dims[3] : 1;
    export_emit(b, "    epilogue(%s, %s, %s, %d, %d, %zu, %s);\n", out, bias, res, y->dims[0],
                y->dims[1], inner, act_name(e->act));
}

static void emit_pool(dt_buf *b, const netexport_plan *p, const dt_graph_node *node)
{
    const dt_graph_tensor *x = &p->g->tensors[node->inputs[0]], *y = &p->g->tensors[node->output];
    char in[64], out[64];
    where(p, node->inputs[0], in, sizeof in);
    where(p, node->output, out, sizeof out);
    const dt_pool_attr *a = &node->attr.pool;
    size_t planes = (size_t)x->dims[0] * x->dims[1];
    if (node->op == DT_GRAPH_GLOBAL_AVG_POOL)
        export_emit(b, "    global_avg_pool(%s, %s, %zu, %zu);\n", in, out, planes,
                    (size_t)x->dims[2] * x->dims[3]);
    else
        export_emit(b, "    %s_pool(%s, %s, %zu, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d",
                    node->op == DT_GRAPH_MAX_POOL ? "max" : "avg", in, out, planes, x->dims[2],
                    x->dims[3], y->dims[2], y->dims[3], a->kh, a->kw, a->sh, a->sw, a->pad_top,
                    a->pad_left);
    if (node->op == DT_GRAPH_AVG_POOL)
        export_emit(b, ", %d, %d, %d", a->pad_bottom, a->pad_right, a->count_include_pad);
    if (node->op != DT_GRAPH_GLOBAL_AVG_POOL)
        export_emit(b, ");\n");
}

static void emit_concat(dt_buf *b, const netexport_plan *p, const dt_graph_node *node)
{
    const dt_graph *g = p->g;
    size_t outer = (size_t)g->tensors[node->output].dims[0];
    size_t total = dt_graph_tensor_elements(g, node->output) / outer, at = 0;
    char x[64], y[64], name[DT_NAME_MAX];
    where(p, node->output, y, sizeof y);
    for (int k = 0; k < node->ninputs; k++) {
        int t = node->inputs[k];
        size_t part = dt_graph_tensor_elements(g, t) / outer;
        export_plain_text(g->tensors[t].name, name, sizeof name);
        if (p->alias[t] == node->output)
            export_emit(b, "    /* %s: written in place */\n", name);
        else
            export_emit(b, "    concat_part(%s, %s, %zu, %zu, %zu, %zu);\n", where(p, t, x, sizeof x),
                        y, outer, part, total, at);
        at += part;
    }
}

static void emit_node(dt_buf *b, const net_job *job, int i)
{
    const netexport_plan *p = job->plan;
    const dt_graph_node *node = &p->g->nodes[i];
    char name[DT_NAME_MAX], a[64], c[64], y[64];
    export_plain_text(node->name, name, sizeof name);
    export_emit(b, "    /* %s: %s */\n", name, dt_graph_op_name(node->op));
    size_t n = dt_graph_tensor_elements(p->g, node->output);
    where(p, node->inputs[0], a, sizeof a);
    where(p, node->output, y, sizeof y);
    switch (node->op) {
    case DT_GRAPH_CONV:
    case DT_GRAPH_DENSE:
        emit_kernel_node(b, job, i);
        break;
    case DT_GRAPH_MAX_POOL:
    case DT_GRAPH_AVG_POOL:
    case DT_GRAPH_GLOBAL_AVG_POOL:
        emit_pool(b, p, node);
        break;
    case DT_GRAPH_ADD:
        export_emit(b, "    add(%s, %s, %s, %zu);\n", a, where(p, node->inputs[1], c, sizeof c), y, n);
        break;
    case DT_GRAPH_ACT:
        export_emit(b, "    act(%s, %s, %zu, %s);\n", a, y, n, act_name(node->attr.act));
        break;
    case DT_GRAPH_CONCAT:
        emit_concat(b, p, node);
        break;
    default:   /* flatten */
        if (p->alias[node->output] == node->inputs[0])
            export_emit(b, "    /* the same floats */\n");
        else
            export_emit(b, "    memcpy(%s, %s, %zu * sizeof(float));\n", y, a, n);
    }
}

static void emit_kernel_table(dt_buf *b, const net_job *job)
{
    const netexport_plan *p = job->plan;
    export_emit(b, "static const kernel_node kernel_nodes[NKERNEL_NODES] = {\n");
    for (int i = 0; i < p->g->nnodes; i++) {
        if (p->choice[i] < 0)
            continue;
        char name[DT_NAME_MAX];
        export_plain_text(p->g->nodes[i].name, name, sizeof name);
        const char *l = job->files.lib, *t = job->task[p->choice[i]];
        export_emit(b, "    { \"%s\", %s_%s_workspace_bytes, %s_%s_prepare, %zu, %d },\n", name, l, t, l, t,
                    p->g->tensors[p->g->nodes[i].inputs[1]].offset, p->slot[i]);
    }
    export_emit(b, "};\n\n");
}

/* FNV-1a of what the weights file's layout depends on: every constant's
 * shape and offset, and the count. */
static uint64_t network_id(const dt_graph *g)
{
    uint64_t h = DT_FNV1A_INIT;
    for (int t = 0; t < g->ntensors; t++) {
        const dt_graph_tensor *x = &g->tensors[t];
        if (!x->constant)
            continue;
        h = dt_fnv1a(h, &x->ndims, sizeof x->ndims);
        h = dt_fnv1a(h, x->dims, (size_t)x->ndims * sizeof *x->dims);
        uint64_t offset = x->offset;
        h = dt_fnv1a(h, &offset, sizeof offset);
    }
    uint64_t count = g->nweights;
    return dt_fnv1a(h, &count, sizeof count);
}

static void emit_defines(dt_buf *b, const net_job *job)
{
    const char *l = job->files.lib, *u = job->files.upper;
    const netexport_plan *p = job->plan;
    export_emit(b, "#define NET_NAME \"%s\"\n#define NET_STRUCT %s_net\n", l, l);
    const char *fns[] = { "CREATE", "create", "RUN", "run", "DESTROY", "destroy", "ERROR", "error",
                          "LAST_ERROR", "last_error" };
    for (int i = 0; i < 10; i += 2)
        export_emit(b, "#define NET_%s %s_net_%s\n", fns[i], l, fns[i + 1]);
    const char *codes[] = { "EINVAL", "ENOTFOUND", "EFORMAT", "ENOMEM" };
    for (int i = 0; i < 4; i++)
        export_emit(b, "#define NET_%s %s_%s\n", codes[i], u, codes[i]);
    export_emit(b, "#define WEIGHTS_MAGIC \"%s\"\n#define WEIGHTS_VERSION %d\n"
                   "#define WEIGHTS_HEADER_BYTES %d\n#define WEIGHTS_FLOATS ((size_t)%zu)\n"
                   "#define NETWORK_ID 0x%016llxULL\n#define ARENA_FLOATS ((size_t)%zu)\n"
                   "#define NSLOTS %d\n#define NKERNEL_NODES %d\n#define NET_THREADS %d\n\n",
                NETEXPORT_MAGIC, NETEXPORT_VERSION, NETEXPORT_HEADER_BYTES, p->g->nweights,
                (unsigned long long)network_id(p->g), p->arena_floats, p->nslots, p->nkernels,
                p->params->kernels.measure.threads);
}

static int write_net_source(const net_job *job, dt_error *err)
{
    const netexport_plan *p = job->plan;
    const char *l = job->files.lib;
    dt_buf b = { 0 };
    char source[DT_PATH_MAX];
    export_emit(&b, "/* %s_net.c — network %s, exported by dtune%s%s: %d nodes, %d of them\n"
                    " * tuned kernels (%s_kernels.h); activations in one arena of %zu floats,\n"
                    " * %d kernel workspaces. The runtime below is the same for every network;\n"
                    " * run_nodes() is this one. */\n"
                    "#include <errno.h>\n#include <math.h>\n#include <stdarg.h>\n#include <stdint.h>\n"
                    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
                    "#include \"%s.h\"\n#include \"%s_kernels.h\"\n\n",
                l, l, p->params->kernels.source ? " from " : "",
                export_plain_text(p->params->kernels.source, source, sizeof source), p->g->nnodes, p->nkernels,
                l, p->arena_floats, p->nslots, l, l);
    emit_defines(&b, job);
    export_emit(&b, "%s", netexport_runtime_head);
    emit_kernel_table(&b, job);
    export_emit(&b, "static void run_nodes(struct NET_STRUCT *net, const float *in, float *out)\n{\n"
                    "    float *a = net->arena;\n    const float *w = net->weights;\n"
                    "    float *const *ws = net->ws;\n"
                    "    (void)a;\n    (void)w;\n    (void)ws;\n    (void)in;\n");
    for (int i = 0; i < p->g->nnodes; i++)
        emit_node(&b, job, i);
    export_emit(&b, "}\n%s", netexport_runtime_tail);
    char name[EXPORT_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_net.c", l);
    return export_write_file(&job->files, name, &b, err);
}

/* ---- the header, the program, the Makefile ---------------------------------------- */

/* Appends tmpl with every {L} replaced by the library's name and every {U}
 * by it in capitals: the text of a file whose only variable is NAME. */
static void emit_lib(dt_buf *b, const net_job *job, const char *tmpl)
{
    for (const char *c = tmpl; *c;) {
        if (strncmp(c, "{L}", 3) == 0 || strncmp(c, "{U}", 3) == 0) {
            const char *name = c[1] == 'L' ? job->files.lib : job->files.upper;
            dt_buf_append(b, name, strlen(name));
            c += 3;
        } else {
            size_t n = strcspn(c + 1, "{") + 1;
            dt_buf_append(b, c, n);
            c += n;
        }
    }
}

static void emit_dims(dt_buf *b, const net_job *job, const char *what, const dt_graph *g, int t)
{
    export_emit(b, "#define %s_%s_NDIMS %d\n#define %s_%s_DIMS {", job->files.upper, what,
                g->tensors[t].ndims, job->files.upper, what);
    for (int d = 0; d < g->tensors[t].ndims; d++)
        export_emit(b, "%s%d", d ? ", " : " ", g->tensors[t].dims[d]);
    export_emit(b, " }\n#define %s_%s_FLOATS ((size_t)%zu)\n", job->files.upper, what,
                dt_graph_tensor_elements(g, t));
}

static int write_header(const net_job *job, dt_error *err)
{
    const dt_graph *g = job->plan->g;
    dt_buf b = { 0 };
    emit_lib(&b, job,
        "/* {L}.h — network {L} as a library, exported by dtune.\n *\n"
        " *   {L}_net *net;\n"
        " *   if ({L}_net_create(\"{L}.weights\", &net) != 0)\n"
        " *       fprintf(stderr, \"%s\\n\", {L}_net_last_error());\n"
        " *   {L}_net_run(net, input, output);   (input: {U}_INPUT_FLOATS floats)\n"
        " *   {L}_net_destroy(net);\n *\n"
        " * Tensors are fp32, NCHW (4-D) or [N, K] (2-D); input and output must not\n"
        " * overlap. create reads the weights file and allocates everything the\n"
        " * network needs; run allocates nothing and keeps no state between calls;\n"
        " * one call at a time per network (create one per thread). Functions that\n"
        " * can fail return 0 or a negative {U}_E* code, never exit. */\n"
        "#ifndef {U}_NET_H\n#define {U}_NET_H\n\n#include <stddef.h>\n\n");
    export_emit(&b, "%s", export_cplusplus_open);
    emit_dims(&b, job, "INPUT", g, g->input);
    emit_dims(&b, job, "OUTPUT", g, g->output);
    emit_lib(&b, job,
        "\n#define {U}_EINVAL (-1)     /* a NULL argument */\n"
        "#define {U}_ENOTFOUND (-2)  /* the weights file cannot be opened */\n"
        "#define {U}_EFORMAT (-3)    /* not this network's weights: magic, version, byte order,\n"
        "                              network, size or checksum */\n"
        "#define {U}_ENOMEM (-4)\n\n"
        "typedef struct {L}_net {L}_net;\n\n"
        "/* Loads the weights file and prepares every kernel; *net is NULL on failure. */\n"
        "int {L}_net_create(const char *weights_path, {L}_net **net);\n\n"
        "/* One inference: {U}_INPUT_FLOATS floats in, {U}_OUTPUT_FLOATS out. */\n"
        "int {L}_net_run({L}_net *net, const float *input, float *output);\n\n"
        "/* Frees net; accepts NULL. */\nvoid {L}_net_destroy({L}_net *net);\n\n"
        "/* What a code means (\"not this network's weights file\"). */\n"
        "const char *{L}_net_error(int code);\n\n"
        "/* The calling thread's last failure in full (\"x.weights: holds 12 floats;\n"
        " * {L} needs 4660\"). */\nconst char *{L}_net_last_error(void);\n\n");
    export_emit(&b, "%s#endif\n", export_cplusplus_close);
    char name[EXPORT_NAME_MAX + 8];
    snprintf(name, sizeof name, "%s.h", job->files.lib);
    return export_write_file(&job->files, name, &b, err);
}

static int write_run_program(const net_job *job, dt_error *err)
{
    dt_buf b = { 0 };
    emit_lib(&b, job,
        "/* {L}_run.c — runs network {L} on a raw float32 input, writes the raw\n"
        " * output and prints the median latency; `{L}_run -h` says how. */\n"
        "#include <errno.h>\n#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
        "#include <string.h>\n#include <time.h>\n\n#include \"{L}.h\"\n\n"
        "#define NET {L}_net\n#define NET_NAME \"{L}\"\n#define NET_CREATE {L}_net_create\n"
        "#define NET_RUN {L}_net_run\n#define NET_DESTROY {L}_net_destroy\n"
        "#define NET_LAST_ERROR {L}_net_last_error\n#define INPUT_FLOATS {U}_INPUT_FLOATS\n"
        "#define OUTPUT_FLOATS {U}_OUTPUT_FLOATS\n\n");
    export_emit(&b, "%s", netexport_run_program);
    char name[EXPORT_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_run.c", job->files.lib);
    return export_write_file(&job->files, name, &b, err);
}

static int write_makefile(const net_job *job, dt_error *err)
{
    const char *omp = job->plan->params->kernels.measure.threads > 1 ? " -fopenmp" : "";
    dt_buf b = { 0 };
    emit_lib(&b, job,
        "# Makefile of network {L}, exported by dtune.\n"
        "#   make        lib{L}.a, lib{L}.so, {L}_run and {L}_test (the kernels' check)\n"
        "#   make test   every kernel checked, then the network run on the test input\n"
        "#               and compared with dtune's reference output\n\n"
        "CC       ?= cc\n"
        "# the flags dtune compiled and measured the kernels with\n");
    export_emit(&b, "KFLAGS   := %s%s -fPIC\nLDLIBS   := -lm%s\n", DT_CPU_KERNEL_CFLAGS, omp, omp);
    emit_lib(&b, job,
        "NETFLAGS ?=\n"
        "CFLAGS   ?= -std=gnu11 -O2\n"
        "KERNELS  := $(wildcard kernels/*.c)\n"
        "OBJ      := $(KERNELS:.c=.o) {L}_kernels.o {L}_reference.o {L}_net.o\n\n"
        ".PHONY: all test clean\nall: lib{L}.a lib{L}.so {L}_run {L}_test\n\n"
        "%.o: %.c {L}_kernels.h {L}.h\n\t$(CC) $(KFLAGS) -c $< -o $@\n\n"
        "{L}_net.o: {L}_net.c {L}_kernels.h {L}.h\n\t$(CC) $(KFLAGS) $(NETFLAGS) -c $< -o $@\n\n"
        "lib{L}.a: $(OBJ)\n\trm -f $@\n\tar rcs $@ $^\n\n"
        "lib{L}.so: $(OBJ)\n\t$(CC) -shared -o $@ $^ $(LDLIBS)\n\n"
        "{L}_run: {L}_run.c {L}.h lib{L}.a\n\t$(CC) $(CFLAGS) -o $@ $< lib{L}.a $(LDLIBS)\n\n"
        "{L}_test: {L}_test.c {L}_kernels.h lib{L}.a\n\t$(CC) $(CFLAGS) -o $@ $< lib{L}.a $(LDLIBS)\n\n"
        "test: all\n\t./{L}_test --check-only\n"
        "\t./{L}_run {L}.weights {L}_test_input.bin {L}_test_run_output.bin -n 10 "
        "--check {L}_test_output.bin\n\n"
        "clean:\n\trm -f $(OBJ) lib{L}.a lib{L}.so {L}_run {L}_test {L}_test_run_output.bin\n");
    return export_write_file(&job->files, "Makefile", &b, err);
}

/* ---- the binary files ------------------------------------------------------------- */

static int write_binary(const net_job *job, const char *name, const void *head, size_t head_len,
                        const float *data, size_t n, dt_error *err)
{
    char path[DT_PATH_MAX + EXPORT_NAME_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", job->files.out_dir, name);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(head, 1, head_len, f) == head_len && fwrite(data, sizeof *data, n, f) == n;
    int e = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    return ok ? 0 : dt_error_set(err, DT_EIO, "%s: cannot write: %s", path, strerror(e));
}

static uint64_t weights_checksum(const float *data, size_t n)
{
    uint64_t h = DT_FNV1A_INIT;
    for (size_t i = 0; i < n; i++) {
        uint32_t word;
        memcpy(&word, &data[i], sizeof word);
        h = (h ^ word) * 1099511628211ULL;   /* FNV-1a's prime, a word at a time */
    }
    return h;
}

static int write_weights(const net_job *job, dt_error *err)
{
    const dt_graph *g = job->plan->g;
    unsigned char h[NETEXPORT_HEADER_BYTES] = { 0 };
    uint32_t version = NETEXPORT_VERSION, order = NETEXPORT_BYTE_ORDER;
    uint64_t id = network_id(g), floats = g->nweights, sum = weights_checksum(g->weights, g->nweights);
    memcpy(h, NETEXPORT_MAGIC, 8);
    memcpy(h + 8, &version, 4);
    memcpy(h + 12, &order, 4);
    memcpy(h + 16, &id, 8);
    memcpy(h + 24, &floats, 8);
    memcpy(h + 32, &sum, 8);
    char name[EXPORT_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s.weights", job->files.lib);
    return write_binary(job, name, h, sizeof h, g->weights, g->nweights, err);
}

/* The test input (from the seed) and the reference executor's output on it. */
static int write_test_data(const net_job *job, dt_error *err)
{
    const dt_graph *g = job->plan->g;
    size_t n_in = dt_graph_tensor_elements(g, g->input), n_out = dt_graph_tensor_elements(g, g->output);
    float *in = malloc(n_in * sizeof *in), *out = malloc(n_out * sizeof *out);
    int rc = in && out ? 0 : dt_error_set(err, DT_ENOMEM, "out of memory");
    uint64_t state = job->plan->params->test_seed;
    if (rc == 0)
        dt_measure_fill(in, n_in, &state);
    rc = rc ? rc : dt_graph_ref_run(g, in, out, err);
    char name[EXPORT_NAME_MAX + 32];
    snprintf(name, sizeof name, "%s_test_input.bin", job->files.lib);
    rc = rc ? rc : write_binary(job, name, NULL, 0, in, n_in, err);
    snprintf(name, sizeof name, "%s_test_output.bin", job->files.lib);
    rc = rc ? rc : write_binary(job, name, NULL, 0, out, n_out, err);
    free(in);
    free(out);
    return rc;
}

/* ---- writing ----------------------------------------------------------------------- */

static int write_network(net_job *job, int n, dt_error *err)
{
    const netexport_plan *p = job->plan;
    /* the reference output first: a graph it cannot run leaves nothing written */
    int rc = dt_mkdir_p(job->files.out_dir, err);
    rc = rc ? rc : write_test_data(job, err);
    rc = rc ? rc : dt_export_write(&p->params->kernels, p->g->name, p->choices, n, job->files.out_dir, err);
    rc = rc ? rc : write_header(job, err);
    rc = rc ? rc : write_net_source(job, err);
    rc = rc ? rc : write_run_program(job, err);
    rc = rc ? rc : write_makefile(job, err);
    return rc ? rc : write_weights(job, err);
}

int dt_netexport_write(const dt_netexport_params *params, const dt_graph *g,
                       const dt_export_choice *choices, int n, const char *out_dir, dt_error *err)
{
    if (params->kernels.target != DT_TARGET_CPU)
        return dt_error_set(err, DT_ENOTSUP, "target %s has no network export yet; the CPU has",
                            dt_target_name(params->kernels.target));
    if (strlen(out_dir) >= DT_PATH_MAX)
        return dt_error_set(err, DT_EINVAL, "%.64s...: path too long", out_dir);
    int rc = dt_graph_ref_check(g, err);
    if (rc)
        return rc;
    netexport_plan plan;
    net_job job = { .files = { .params = &params->kernels, .choices = choices, .n = n,
                               .out_dir = out_dir },
                    .plan = &plan };
    export_c_name(g->name, "m", job.files.lib, sizeof job.files.lib);
    for (size_t i = 0; i <= strlen(job.files.lib); i++)
        job.files.upper[i] = (char)toupper((unsigned char)job.files.lib[i]);
    rc = netexport_plan_make(&plan, params, g, choices, n, err);
    job.task = rc ? NULL : calloc(n > 0 ? (size_t)n : 1, sizeof *job.task);
    if (rc == 0 && !job.task)
        rc = dt_error_set(err, DT_ENOMEM, "out of memory");
    if (rc == 0)
        export_task_names(choices, n, job.task);
    rc = rc ? rc : write_network(&job, n, err);
    free(job.task);
    netexport_plan_free(&plan);
    return rc;
}
