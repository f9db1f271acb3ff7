/* cuda_export.c — the CUDA form of an export (see export.h).
 *
 * Each tuned kernel is the NVRTC source cuda_codegen writes for the
 * measurement, kept twice: as kernels/TASK.cu to read, and as a string in
 * NAME_cuda.c with its launch geometry (dt_cuda_plan_launch). The loader in
 * NAME_cuda.c reaches libcuda.so.1 and NVRTC through dlopen, as cuda_api.c
 * does, so a program linking it starts on a machine without the driver and
 * learns at NAME_cuda_open that there is none. Kernels are compiled to PTX
 * for device 0's compute capability and JIT-compiled by the driver.
 */
#include "export_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_codegen.h"
#include "cuda_api.h"
#include "cuda_runner.h"

static int write_header(const export_job *job, dt_error *err)
{
    const char *l = job->lib;
    dt_buf b = { 0 };
    char source[DT_PATH_MAX];
    export_emit(&b,
        "/* %s_cuda.h — the tuned CUDA kernels of model %s, exported by dtune%s%s.\n"
        " *\n"
        " * %s_cuda_open loads the CUDA driver and NVRTC with dlopen (nothing to link\n"
        " * but -ldl), makes device 0's primary context current and compiles every\n"
        " * kernel; %s_cuda_launch runs kernel i of %s_cuda_kernels[] on device\n"
        " * pointers (fp32; NCHW / OIHW, or [B][M][K] x [B][N][K] -> [B][M][N]) on a\n"
        " * stream (NULL: the default one) with the launch geometry dtune measured.\n"
        " * A kernel without a tuned config has no source: launching it fails.\n"
        " */\n"
        "#ifndef %s_CUDA_H\n#define %s_CUDA_H\n\n#include <stddef.h>\n\n%s"
        "typedef struct %s_cuda_kernel_info {\n"
        "    const char *name;          /* the task, as the model file names it */\n"
        "    const char *kind;          /* conv2d, depthwise_conv2d, dense, batch_matmul */\n"
        "    const char *shape;         /* as dtune prints it */\n"
        "    const char *config;        /* the tuned config's knobs; \"\" when not tuned */\n"
        "    int tuned;                 /* 0: no kernel (source is NULL) */\n"
        "%s"
        "    size_t input_floats, weight_floats, output_floats;\n"
        "    double flops;              /* one call: 2 x multiply-adds */\n"
        "    double dtune_ms;           /* dtune's measured latency (best.json); 0 = unknown */\n"
        "    unsigned grid[3], block[3];\n"
        "    unsigned shared_bytes;     /* dynamic shared memory per block */\n"
        "    const char *source;        /* CUDA C for NVRTC: extern \"C\" __global__ %s */\n"
        "} %s_cuda_kernel_info;\n\n"
        "#define %s_CUDA_NKERNELS %d\n"
        "extern const %s_cuda_kernel_info %s_cuda_kernels[%s_CUDA_NKERNELS];\n\n"
        "typedef struct %s_cuda %s_cuda;\n\n"
        "/* Returns 0 and *out, or -1 with the reason in error[0..len). */\n"
        "int %s_cuda_open(%s_cuda **out, char *error, size_t len);\n"
        "/* Launches kernel i; input, weight and output are CUdeviceptr values.\n"
        " * Returns the driver's CUresult (0 = launched), -1 for no such kernel. */\n"
        "int %s_cuda_launch(%s_cuda *c, int i, unsigned long long input, unsigned long long weight,\n"
        "    unsigned long long output, void *stream);\n"
        "/* Unloads the kernels and releases the context; accepts NULL. */\n"
        "void %s_cuda_close(%s_cuda *c);\n\n"
        "/* Device memory and copies, for the test program and simple callers;\n"
        " * each returns the driver's CUresult (0 = done). */\n"
        "int %s_cuda_alloc(%s_cuda *c, size_t bytes, unsigned long long *ptr);\n"
        "int %s_cuda_free(%s_cuda *c, unsigned long long ptr);\n"
        "int %s_cuda_to_device(%s_cuda *c, unsigned long long dst, const void *src, size_t bytes);\n"
        "int %s_cuda_to_host(%s_cuda *c, void *dst, unsigned long long src, size_t bytes);\n"
        "int %s_cuda_synchronize(%s_cuda *c);\n\n%s#endif\n",
        l, l, job->params->source ? " from " : "", export_plain_text(job->params->source, source, sizeof source),
        l, l, l, job->upper, job->upper, export_cplusplus_open, l, export_geometry_fields, DT_CUDA_KERNEL_NAME, l,
        job->upper, job->n, l, l, job->upper, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l,
        l, l, export_cplusplus_close);
    char name[EXPORT_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_cuda.h", l);
    return export_write_file(job, name, &b, err);
}

/* Writes kernels/TASK.cu and, into table, the kernel's row. */
static int emit_kernel(const export_job *job, int i, dt_buf *table, dt_error *err)
{
    const dt_export_choice *c = &job->choices[i];
    size_t n_in, n_w, n_out;
    dt_task_tensor_sizes(&c->task, &n_in, &n_w, &n_out);
    dt_cuda_launch launch = { { 0, 0, 0 }, { 0, 0, 0 }, 0 };
    char *source = NULL;
    if (c->tuned) {
        dt_space space;
        dt_point point;
        int rc = export_point(job, i, &space, &point, err);
        if (rc)
            return rc;
        dt_cuda_plan plan;
        dt_cuda_plan_from_point(&space, &point, &plan);
        dt_space_free(&space);
        dt_error why;
        if ((rc = dt_cuda_codegen(&plan, &source, &why)) != 0)
            return dt_error_set(err, rc, "task %s: %s", c->task.name, why.msg);
        dt_cuda_plan_launch(&plan, &launch);
        dt_buf cu = { 0 };
        export_emit(&cu, "%s", source);
        char name[EXPORT_NAME_MAX + 16];
        snprintf(name, sizeof name, "kernels/%s.cu", job->task[i]);
        if ((rc = export_write_file(job, name, &cu, err)) != 0) {
            free(source);
            return rc;
        }
    }
    export_emit_names(table, c);
    export_emit_geometry(table, c);
    export_emit(table, "      .tuned = %d,\n"
                       "      .input_floats = %zu, .weight_floats = %zu, .output_floats = %zu,\n"
                       "      .flops = %.17g, .dtune_ms = %.10g,\n"
                       "      .grid = { %u, %u, %u }, .block = { %u, %u, %u }, .shared_bytes = %u,\n"
                       "      .source =%s", c->tuned, n_in, n_w, n_out, c->task.flops, c->latency_ms,
                launch.grid[0], launch.grid[1], launch.grid[2], launch.block[0], launch.block[1],
                launch.block[2], launch.shared_bytes, source ? "\n" : " NULL");
    if (source)
        export_emit_string(table, source);
    export_emit(table, " },\n");
    free(source);
    return 0;
}

/* The loader, written once for every export: API(x) names the library's
 * symbols, KERNELS / NKERNELS its table. */
static const char loader_body[] =
    "typedef int cu_result;\n"
    "typedef int cu_device;\n"
    "typedef struct cu_ctx_st *cu_context;\n"
    "typedef struct cu_mod_st *cu_module;\n"
    "typedef struct cu_func_st *cu_function;\n"
    "typedef int nvrtc_result;\n"
    "typedef struct nvrtc_prog_st *nvrtc_program;\n\n"
    "enum { ATTR_CC_MAJOR = 75, ATTR_CC_MINOR = 76, FUNC_MAX_DYNAMIC_SHARED = 8,\n"
    "       NVRTC_ERROR_INVALID_OPTION = 5, DEFAULT_SHARED_LIMIT = 48 * 1024 };\n\n"
    "struct API(cuda) {\n"
    "    void *cuda, *nvrtc;\n"
    "    cu_result (*init)(unsigned flags);\n"
    "    cu_result (*device_get)(cu_device *dev, int ordinal);\n"
    "    cu_result (*device_attribute)(int *value, int attrib, cu_device dev);\n"
    "    cu_result (*primary_ctx_retain)(cu_context *ctx, cu_device dev);\n"
    "    cu_result (*primary_ctx_release)(cu_device dev);\n"
    "    cu_result (*ctx_set_current)(cu_context ctx);\n"
    "    cu_result (*module_load_data)(cu_module *mod, const void *image);\n"
    "    cu_result (*module_unload)(cu_module mod);\n"
    "    cu_result (*module_get_function)(cu_function *fn, cu_module mod, const char *name);\n"
    "    cu_result (*func_set_attribute)(cu_function fn, int attrib, int value);\n"
    "    cu_result (*mem_alloc)(unsigned long long *ptr, size_t bytes);\n"
    "    cu_result (*mem_free)(unsigned long long ptr);\n"
    "    cu_result (*memcpy_htod)(unsigned long long dst, const void *src, size_t bytes);\n"
    "    cu_result (*memcpy_dtoh)(void *dst, unsigned long long src, size_t bytes);\n"
    "    cu_result (*ctx_synchronize)(void);\n"
    "    cu_result (*launch_kernel)(cu_function fn, unsigned gx, unsigned gy, unsigned gz,\n"
    "                               unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,\n"
    "                               void *stream, void **params, void **extra);\n"
    "    nvrtc_result (*create_program)(nvrtc_program *prog, const char *source, const char *name,\n"
    "                                   int nheaders, const char *const *headers,\n"
    "                                   const char *const *names);\n"
    "    nvrtc_result (*compile_program)(nvrtc_program prog, int nopts, const char *const *opts);\n"
    "    nvrtc_result (*destroy_program)(nvrtc_program *prog);\n"
    "    nvrtc_result (*ptx_size)(nvrtc_program prog, size_t *size);\n"
    "    nvrtc_result (*get_ptx)(nvrtc_program prog, char *ptx);\n"
    "    nvrtc_result (*log_size)(nvrtc_program prog, size_t *size);\n"
    "    nvrtc_result (*get_log)(nvrtc_program prog, char *log);\n"
    "    cu_device device;\n"
    "    int have_context;\n"
    "    cu_module modules[NKERNELS];\n"
    "    cu_function functions[NKERNELS];\n"
    "};\n\n"
    "typedef struct API(cuda) loader;\n\n"
    "/* Copies symbol name of lib into *slot (through the object representation:\n"
    " * a void * to function pointer conversion is not ISO C). */\n"
    "static int bind(void *lib, void *slot, size_t size, const char *name, char *error, size_t len)\n"
    "{\n"
    "    void *sym = dlsym(lib, name);\n"
    "    if (!sym) {\n"
    "        snprintf(error, len, \"the CUDA library lacks %s (too old)\", name);\n"
    "        return 0;\n"
    "    }\n"
    "    memcpy(slot, &sym, size);\n"
    "    return 1;\n"
    "}\n\n"
    "#define BIND(lib, field, name) bind(c->lib, &c->field, sizeof c->field, name, error, len)\n\n"
    "static int bind_all(loader *c, char *error, size_t len)\n"
    "{\n"
    "    return BIND(cuda, init, \"cuInit\") && BIND(cuda, device_get, \"cuDeviceGet\") &&\n"
    "           BIND(cuda, device_attribute, \"cuDeviceGetAttribute\") &&\n"
    "           BIND(cuda, primary_ctx_retain, \"cuDevicePrimaryCtxRetain\") &&\n"
    "           BIND(cuda, primary_ctx_release, \"cuDevicePrimaryCtxRelease_v2\") &&\n"
    "           BIND(cuda, ctx_set_current, \"cuCtxSetCurrent\") &&\n"
    "           BIND(cuda, module_load_data, \"cuModuleLoadData\") &&\n"
    "           BIND(cuda, module_unload, \"cuModuleUnload\") &&\n"
    "           BIND(cuda, module_get_function, \"cuModuleGetFunction\") &&\n"
    "           BIND(cuda, func_set_attribute, \"cuFuncSetAttribute\") &&\n"
    "           BIND(cuda, launch_kernel, \"cuLaunchKernel\") &&\n"
    "           BIND(cuda, mem_alloc, \"cuMemAlloc_v2\") && BIND(cuda, mem_free, \"cuMemFree_v2\") &&\n"
    "           BIND(cuda, memcpy_htod, \"cuMemcpyHtoD_v2\") &&\n"
    "           BIND(cuda, memcpy_dtoh, \"cuMemcpyDtoH_v2\") &&\n"
    "           BIND(cuda, ctx_synchronize, \"cuCtxSynchronize\") &&\n"
    "           BIND(nvrtc, create_program, \"nvrtcCreateProgram\") &&\n"
    "           BIND(nvrtc, compile_program, \"nvrtcCompileProgram\") &&\n"
    "           BIND(nvrtc, destroy_program, \"nvrtcDestroyProgram\") &&\n"
    "           BIND(nvrtc, ptx_size, \"nvrtcGetPTXSize\") && BIND(nvrtc, get_ptx, \"nvrtcGetPTX\") &&\n"
    "           BIND(nvrtc, log_size, \"nvrtcGetProgramLogSize\") &&\n"
    "           BIND(nvrtc, get_log, \"nvrtcGetProgramLog\");\n"
    "}\n\n"
    "/* NVRTC by the names dtune tries, on the library path, then under\n"
    " * $CUDA_HOME/lib64 and /usr/local/cuda/lib64. */\n"
    "static void *open_nvrtc(void)\n"
    "{\n"
    "    const char *home = getenv(\"CUDA_HOME\");\n"
    "    const char *dirs[] = { NULL, home && *home ? home : NULL, \"/usr/local/cuda\" };\n"
    "    char path[1024];\n"
    "    for (int d = 0; d < 3; d++)\n"
    "        for (int i = 0; NVRTC_NAMES[i] && (d == 0 || dirs[d]); i++) {\n"
    "            if (d == 0)\n"
    "                snprintf(path, sizeof path, \"%s\", NVRTC_NAMES[i]);\n"
    "            else\n"
    "                snprintf(path, sizeof path, \"%s/lib64/%s\", dirs[d], NVRTC_NAMES[i]);\n"
    "            void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);\n"
    "            if (lib)\n"
    "                return lib;\n"
    "        }\n"
    "    return NULL;\n"
    "}\n\n"
    "/* PTX of kernel i for compute_ARCH; NULL with the reason when it fails\n"
    " * (*invalid_arch set when NVRTC does not know the architecture). */\n"
    "static char *compile_ptx(loader *c, int i, int arch, int *invalid_arch, char *error, size_t len)\n"
    "{\n"
    "    nvrtc_program prog;\n"
    "    char opt[64], *ptx = NULL;\n"
    "    snprintf(opt, sizeof opt, \"--gpu-architecture=compute_%d\", arch);\n"
    "    const char *opts[] = { opt };\n"
    "    *invalid_arch = 0;\n"
    "    if (c->create_program(&prog, KERNELS[i].source, KERNELS[i].name, 0, NULL, NULL) != 0) {\n"
    "        snprintf(error, len, \"%s: nvrtcCreateProgram failed\", KERNELS[i].name);\n"
    "        return NULL;\n"
    "    }\n"
    "    nvrtc_result r = c->compile_program(prog, 1, opts);\n"
    "    size_t size = 0;\n"
    "    if (r != 0) {\n"
    "        *invalid_arch = r == NVRTC_ERROR_INVALID_OPTION;\n"
    "        char log[512] = \"\";\n"
    "        if (c->log_size(prog, &size) == 0 && size > 0 && size <= sizeof log)\n"
    "            c->get_log(prog, log);\n"
    "        snprintf(error, len, \"%s: NVRTC error %d for compute_%d: %s\", KERNELS[i].name, r, arch, log);\n"
    "    } else if (c->ptx_size(prog, &size) == 0 && (ptx = malloc(size)) != NULL &&\n"
    "               c->get_ptx(prog, ptx) != 0) {\n"
    "        free(ptx);\n"
    "        ptx = NULL;\n"
    "        snprintf(error, len, \"%s: cannot read the PTX\", KERNELS[i].name);\n"
    "    }\n"
    "    c->destroy_program(&prog);\n"
    "    return ptx;\n"
    "}\n\n"
    "/* Compiles and loads kernel i for a device of compute capability cc: its\n"
    " * own architecture, or the newest older one this NVRTC knows. */\n"
    "static int load_kernel(loader *c, int i, int cc, char *error, size_t len)\n"
    "{\n"
    "    static const int older[] = { 100, 90, 89, 87, 86, 80, 75, 70, 0 };\n"
    "    int invalid = 1;\n"
    "    char *ptx = compile_ptx(c, i, cc, &invalid, error, len);\n"
    "    for (int a = 0; !ptx && invalid && older[a]; a++)\n"
    "        if (older[a] < cc)\n"
    "            ptx = compile_ptx(c, i, older[a], &invalid, error, len);\n"
    "    if (!ptx)\n"
    "        return -1;\n"
    "    cu_result r = c->module_load_data(&c->modules[i], ptx);\n"
    "    free(ptx);\n"
    "    if (r == 0)\n"
    "        r = c->module_get_function(&c->functions[i], c->modules[i], KERNEL_NAME);\n"
    "    if (r == 0 && KERNELS[i].shared_bytes > DEFAULT_SHARED_LIMIT)\n"
    "        r = c->func_set_attribute(c->functions[i], FUNC_MAX_DYNAMIC_SHARED,\n"
    "                                  (int)KERNELS[i].shared_bytes);\n"
    "    if (r != 0)\n"
    "        snprintf(error, len, \"%s: CUDA driver error %d loading the kernel\", KERNELS[i].name, r);\n"
    "    return r == 0 ? 0 : -1;\n"
    "}\n\n"
    "void API(cuda_close)(loader *c)\n"
    "{\n"
    "    if (!c)\n"
    "        return;\n"
    "    for (int i = 0; i < NKERNELS; i++)\n"
    "        if (c->modules[i])\n"
    "            c->module_unload(c->modules[i]);\n"
    "    if (c->have_context)\n"
    "        c->primary_ctx_release(c->device);\n"
    "    if (c->nvrtc)\n"
    "        dlclose(c->nvrtc);\n"
    "    if (c->cuda)\n"
    "        dlclose(c->cuda);\n"
    "    free(c);\n"
    "}\n\n"
    "int API(cuda_open)(loader **out, char *error, size_t len)\n"
    "{\n"
    "    *out = NULL;\n"
    "    loader *c = calloc(1, sizeof *c);\n"
    "    if (!c) {\n"
    "        snprintf(error, len, \"out of memory\");\n"
    "        return -1;\n"
    "    }\n"
    "    c->cuda = dlopen(\"libcuda.so.1\", RTLD_NOW | RTLD_LOCAL);\n"
    "    c->nvrtc = c->cuda ? open_nvrtc() : NULL;\n"
    "    if (!c->cuda || !c->nvrtc) {\n"
    "        snprintf(error, len, \"%s\", c->cuda ? \"NVRTC not found\" : \"libcuda.so.1 not found (no NVIDIA driver)\");\n"
    "        API(cuda_close)(c);\n"
    "        return -1;\n"
    "    }\n"
    "    int major = 0, minor = 0;\n"
    "    cu_context ctx;\n"
    "    if (!bind_all(c, error, len)) {\n"
    "        API(cuda_close)(c);\n"
    "        return -1;\n"
    "    }\n"
    "    cu_result r = c->init(0);\n"
    "    r = r ? r : c->device_get(&c->device, 0);\n"
    "    r = r ? r : c->device_attribute(&major, ATTR_CC_MAJOR, c->device);\n"
    "    r = r ? r : c->device_attribute(&minor, ATTR_CC_MINOR, c->device);\n"
    "    r = r ? r : c->primary_ctx_retain(&ctx, c->device);\n"
    "    c->have_context = r == 0;\n"
    "    r = r ? r : c->ctx_set_current(ctx);\n"
    "    if (r != 0) {\n"
    "        snprintf(error, len, \"CUDA driver error %d opening device 0\", r);\n"
    "        API(cuda_close)(c);\n"
    "        return -1;\n"
    "    }\n"
    "    for (int i = 0; i < NKERNELS; i++)\n"
    "        if (KERNELS[i].source && load_kernel(c, i, major * 10 + minor, error, len) != 0) {\n"
    "            API(cuda_close)(c);\n"
    "            return -1;\n"
    "        }\n"
    "    *out = c;\n"
    "    return 0;\n"
    "}\n\n"
    "int API(cuda_launch)(loader *c, int i, unsigned long long input, unsigned long long weight,\n"
    "    unsigned long long output, void *stream)\n"
    "{\n"
    "    if (!c || i < 0 || i >= NKERNELS || !c->functions[i])\n"
    "        return -1;\n"
    "    const kernel_info *k = &KERNELS[i];\n"
    "    void *args[] = { &input, &weight, &output };\n"
    "    return c->launch_kernel(c->functions[i], k->grid[0], k->grid[1], k->grid[2], k->block[0],\n"
    "                            k->block[1], k->block[2], k->shared_bytes, stream, args, NULL);\n"
    "}\n\n"
    "int API(cuda_alloc)(loader *c, size_t bytes, unsigned long long *ptr)\n"
    "{\n"
    "    return c->mem_alloc(ptr, bytes ? bytes : 4);\n"
    "}\n\n"
    "int API(cuda_free)(loader *c, unsigned long long ptr)\n"
    "{\n"
    "    return c->mem_free(ptr);\n"
    "}\n\n"
    "int API(cuda_to_device)(loader *c, unsigned long long dst, const void *src, size_t bytes)\n"
    "{\n"
    "    return c->memcpy_htod(dst, src, bytes);\n"
    "}\n\n"
    "int API(cuda_to_host)(loader *c, void *dst, unsigned long long src, size_t bytes)\n"
    "{\n"
    "    return c->memcpy_dtoh(dst, src, bytes);\n"
    "}\n\n"
    "int API(cuda_synchronize)(loader *c)\n"
    "{\n"
    "    return c->ctx_synchronize();\n"
    "}\n";

/* The CUDA test program: kernels launched on device copies of the inputs,
 * checked on the host, timed as micro-batches of launches closed by a
 * synchronisation (host clock). */
static const char test_body[] =
    "typedef struct gpu_call {\n"
    "    API(cuda) *c;\n"
    "    int i;\n"
    "    unsigned long long in, w, out;\n"
    "    int status;       /* first failed launch or synchronisation */\n"
    "} gpu_call;\n\n"
    "static void gpu_batch(void *ctx, long calls)\n"
    "{\n"
    "    gpu_call *g = ctx;\n"
    "    for (long n = 0; n < calls && g->status == 0; n++)\n"
    "        g->status = API(cuda_launch)(g->c, g->i, g->in, g->w, g->out, NULL);\n"
    "    if (g->status == 0)\n"
    "        g->status = API(cuda_synchronize)(g->c);\n"
    "}\n\n"
    "/* Checks (and unless check_only, times) kernel i; returns 0 when it matches. */\n"
    "static int test_kernel(API(cuda) *c, int i, int check_only)\n"
    "{\n"
    "    const kernel_info *k = &KERNELS[i];\n"
    "    float *in = alloc_floats(k->input_floats), *w = alloc_floats(k->weight_floats);\n"
    "    float *out = alloc_floats(k->output_floats), *ref = alloc_floats(k->output_floats);\n"
    "    gpu_call g = { c, i, 0, 0, 0, 0 };\n"
    "    long bad = 0;\n"
    "    if (!in || !w || !out || !ref) {\n"
    "        printf(\"%-20s FAIL out of memory\\n\", k->name);\n"
    "        goto done;\n"
    "    }\n"
    "    fill(in, k->input_floats, SEED);\n"
    "    fill(w, k->weight_floats, SEED ^ 0x5eedULL);\n"
    "    if (strcmp(k->kind, \"conv2d\") == 0 || strcmp(k->kind, \"depthwise_conv2d\") == 0)\n"
    "        conv(k, in, w, ref);\n"
    "    else\n"
    "        matmul(k, in, w, ref);\n"
    "    for (size_t n = 0; n < k->output_floats; n++)\n"
    "        out[n] = NAN;\n"
    "    size_t bin = k->input_floats * 4, bw = k->weight_floats * 4, bout = k->output_floats * 4;\n"
    "    g.status = API(cuda_alloc)(c, bin, &g.in);\n"
    "    g.status = g.status ? g.status : API(cuda_alloc)(c, bw, &g.w);\n"
    "    g.status = g.status ? g.status : API(cuda_alloc)(c, bout, &g.out);\n"
    "    g.status = g.status ? g.status : API(cuda_to_device)(c, g.in, in, bin);\n"
    "    g.status = g.status ? g.status : API(cuda_to_device)(c, g.w, w, bw);\n"
    "    g.status = g.status ? g.status : API(cuda_to_device)(c, g.out, out, bout);\n"
    "    gpu_batch(&g, 1);\n"
    "    g.status = g.status ? g.status : API(cuda_to_host)(c, out, g.out, bout);\n"
    "    if (g.status != 0) {\n"
    "        printf(\"%-20s FAIL CUDA driver error %d\\n\", k->name, g.status);\n"
    "        goto done;\n"
    "    }\n"
    "    double worst;\n"
    "    bad = check(out, ref, k->output_floats, &worst);\n"
    "    timing t;\n"
    "    if (bad < 0 && !check_only)\n"
    "        t = time_batches(gpu_batch, &g, k->flops);\n"
    "    if (g.status != 0) {\n"
    "        printf(\"%-20s FAIL CUDA driver error %d while timing\\n\", k->name, g.status);\n"
    "        bad = 0;\n"
    "        goto done;\n"
    "    }\n"
    "    print_result(k, bad, out, ref, worst, bad < 0 && !check_only ? &t : NULL);\n"
    "done:\n"
    "    if (g.in)\n        API(cuda_free)(c, g.in);\n"
    "    if (g.w)\n        API(cuda_free)(c, g.w);\n"
    "    if (g.out)\n        API(cuda_free)(c, g.out);\n"
    "    free(in);\n    free(w);\n    free(out);\n    free(ref);\n"
    "    return bad >= 0;\n"
    "}\n\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    int check_only, first, tested = 0, failed = 0;\n"
    "    options(argc, argv, &check_only, &first);\n"
    "    char error[1024];\n"
    "    API(cuda) *c;\n"
    "    if (API(cuda_open)(&c, error, sizeof error) != 0) {\n"
    "        fprintf(stderr, \"%s\\n\", error);\n"
    "        return 1;\n"
    "    }\n"
    "    for (int i = 0; i < NKERNELS; i++)\n"
    "        if (KERNELS[i].source && named(argc, argv, first, KERNELS[i].name)) {\n"
    "            failed += test_kernel(c, i, check_only);\n"
    "            tested++;\n"
    "        }\n"
    "    API(cuda_close)(c);\n"
    "    printf(\"%d of %d kernels match the reference\\n\", tested - failed, tested);\n"
    "    return failed || tested == 0 ? 1 : 0;\n"
    "}\n";

static int write_test(const export_job *job, dt_error *err)
{
    const char *l = job->lib;
    dt_buf b = { 0 };
    export_emit(&b, "/* %s_cuda_test.c — checks every kernel of %s_cuda.h on device 0 against\n"
                    " * the reference loops and times it with dtune's rule; `./%s_cuda_test --help`.\n"
                    " * Timing: micro-batches of launches closed by a synchronisation, on the\n"
                    " * host clock (dtune's own runner uses CUDA events). */\n"
                    "%s#include \"%s_cuda.h\"\n\n"
                    "#define API(x) %s_##x\ntypedef %s_cuda_kernel_info kernel_info;\n"
                    "#define KERNELS %s_cuda_kernels\n#define NKERNELS %s_CUDA_NKERNELS\n\n",
                l, l, l, export_test_includes, l, l, l, l, job->upper);
    export_emit_test_settings(&b, job, DT_CUDA_AUTO_BATCH_S, DT_CUDA_AUTO_BATCH_MAX_CALLS);
    export_emit(&b, "%s%s%s", export_reference_body, export_test_common, test_body);
    char name[EXPORT_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_cuda_test.c", l);
    return export_write_file(job, name, &b, err);
}

static int write_loader(const export_job *job, dt_error *err)
{
    const char *l = job->lib;
    dt_buf b = { 0 };
    export_emit(&b, "/* %s_cuda.c — the kernels' sources and launch geometry, and the loader\n"
                    " * of %s_cuda.h. */\n#include <dlfcn.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
                    "#include <string.h>\n\n#include \"%s_cuda.h\"\n\n"
                    "#define API(x) %s_##x\n#define KERNELS %s_cuda_kernels\n#define NKERNELS %s_CUDA_NKERNELS\n"
                    "#define KERNEL_NAME \"%s\"\ntypedef %s_cuda_kernel_info kernel_info;\n\n"
                    "static const char *const NVRTC_NAMES[] = {", l, l, l, l, l, job->upper,
                DT_CUDA_KERNEL_NAME, l);
    for (int i = 0; dt_cuda_api_nvrtc_library_at(i); i++)
        export_emit(&b, " \"%s\",", dt_cuda_api_nvrtc_library_at(i));
    export_emit(&b, " NULL };\n\nconst kernel_info KERNELS[NKERNELS] = {\n");
    for (int i = 0; i < job->n; i++) {
        int rc = emit_kernel(job, i, &b, err);
        if (rc) {
            dt_buf_free(&b);
            return rc;
        }
    }
    export_emit(&b, "};\n\n%s", loader_body);
    char name[EXPORT_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s_cuda.c", l);
    return export_write_file(job, name, &b, err);
}

static int write_makefile(const export_job *job, dt_error *err)
{
    const char *l = job->lib;
    dt_buf b = { 0 };
    export_emit(&b, "# Makefile of the %s CUDA kernels exported by dtune.\n"
                    "#   make        lib%s_cuda.a (a program links it with -ldl: the driver and\n"
                    "#               NVRTC are opened at run time) and %s_cuda_test\n"
                    "#   make test   every kernel checked against the reference and timed on device 0\n\n"
                    "CC     ?= cc\nCFLAGS ?= -std=gnu11 -O2\n\n"
                    ".PHONY: all test clean\nall: lib%s_cuda.a %s_cuda_test\n\n"
                    "%s_cuda.o: %s_cuda.c %s_cuda.h\n\t$(CC) $(CFLAGS) -c $< -o $@\n\n"
                    "lib%s_cuda.a: %s_cuda.o\n\trm -f $@\n\tar rcs $@ $^\n\n"
                    "%s_cuda_test: %s_cuda_test.c %s_cuda.h lib%s_cuda.a\n"
                    "\t$(CC) $(CFLAGS) -o $@ $< lib%s_cuda.a -ldl -lm\n\n"
                    "test: %s_cuda_test\n\t./%s_cuda_test\n\n"
                    "clean:\n\trm -f %s_cuda.o lib%s_cuda.a %s_cuda_test\n",
                l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l);
    return export_write_file(job, "Makefile", &b, err);
}

static int write_cuda(const export_job *job, dt_error *err)
{
    int rc = write_header(job, err);
    rc = rc ? rc : write_loader(job, err);
    rc = rc ? rc : write_test(job, err);
    return rc ? rc : write_makefile(job, err);
}

const dt_export_form dt_cuda_export = {
    .write = write_cuda,
    .vector_widths = false,
    .build_hint = "build the loader and its test: make -C %s (the test runs on a machine with the GPU)",
};
