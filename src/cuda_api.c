/* cuda_api.c — loads libcuda.so.1 and libnvrtc with dlopen and wraps NVRTC.
 *
 * Each library is opened once per process by pthread_once and its table kept
 * in a file-scope static: the one exception to "no mutable statics", because
 * the tables are written exactly once (before any reader sees them) and are
 * read-only afterwards, and because dlopen'ing per builder thread or per
 * backend would load the same library again for nothing. Symbols are copied
 * out of dlsym with memcpy (a void * to function-pointer conversion is only
 * POSIX-defined through the object representation).
 */
#include "cuda_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DT_HAVE_CUDA_H
#include <cuda.h>
#include <nvrtc.h>
/* The hand-written ABI above must match the toolkit's where it is present. */
_Static_assert(sizeof(dt_cu_ptr) == sizeof(CUdeviceptr), "CUdeviceptr size");
_Static_assert(sizeof(dt_cu_device) == sizeof(CUdevice), "CUdevice size");
#define SAME(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #ours " matches " #theirs)
SAME(DT_CU_ATTR_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
SAME(DT_CU_ATTR_MAX_GRID_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
SAME(DT_CU_ATTR_MAX_GRID_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
SAME(DT_CU_ATTR_MAX_SHARED_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
SAME(DT_CU_ATTR_CLOCK_RATE_KHZ, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
SAME(DT_CU_ATTR_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME(DT_CU_ATTR_L2_CACHE_SIZE, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
SAME(DT_CU_ATTR_CC_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME(DT_CU_ATTR_CC_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME(DT_CU_ATTR_MAX_SHARED_PER_BLOCK_OPTIN, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
SAME(DT_CU_FUNC_MAX_THREADS_PER_BLOCK, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
SAME(DT_CU_FUNC_NUM_REGS, CU_FUNC_ATTRIBUTE_NUM_REGS);
SAME(DT_CU_FUNC_MAX_DYNAMIC_SHARED, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
SAME(DT_CU_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME(DT_CU_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_IMAGE);
SAME(DT_CU_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_ADDRESS);
SAME(DT_CU_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
SAME(DT_CU_ERROR_LAUNCH_TIMEOUT, CUDA_ERROR_LAUNCH_TIMEOUT);
SAME(DT_CU_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_FAILED);
SAME(DT_NVRTC_ERROR_COMPILATION, NVRTC_ERROR_COMPILATION);
#endif

/* ---- symbol binding ---------------------------------------------------------- */

/* Copies symbol `name` (or `alt` when name is absent and alt non-NULL) of lib
 * into *slot. Returns false and writes the missing name into missing. */
static bool bind(void *lib, void *slot, size_t slot_size, const char *name, const char *alt,
                 char *missing, size_t missing_len)
{
    void *sym = dlsym(lib, name);
    if (!sym && alt)
        sym = dlsym(lib, alt);
    if (!sym) {
        snprintf(missing, missing_len, "%s", name);
        return false;
    }
    memcpy(slot, &sym, slot_size);
    return true;
}

#define BIND(lib, table, field, name, alt, miss) \
    bind(lib, &(table)->field, sizeof (table)->field, name, alt, miss, sizeof miss)

/* ---- the driver ----------------------------------------------------------------- */

typedef struct driver_slot {
    dt_cuda_driver table;
    bool ok;
    char error[512];
} driver_slot;

static driver_slot driver_state;       /* written once, under driver_once */
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static bool bind_driver_device(void *lib, dt_cuda_driver *t, char *miss)
{
    char m[64] = "";
    bool ok = BIND(lib, t, init, "cuInit", NULL, m) &&
              BIND(lib, t, driver_version, "cuDriverGetVersion", NULL, m) &&
              BIND(lib, t, device_count, "cuDeviceGetCount", NULL, m) &&
              BIND(lib, t, device_get, "cuDeviceGet", NULL, m) &&
              BIND(lib, t, device_name, "cuDeviceGetName", NULL, m) &&
              BIND(lib, t, device_attribute, "cuDeviceGetAttribute", NULL, m) &&
              BIND(lib, t, device_total_mem, "cuDeviceTotalMem_v2", NULL, m) &&
              BIND(lib, t, primary_ctx_retain, "cuDevicePrimaryCtxRetain", NULL, m) &&
              BIND(lib, t, primary_ctx_release, "cuDevicePrimaryCtxRelease_v2",
                   "cuDevicePrimaryCtxRelease", m) &&
              BIND(lib, t, ctx_set_current, "cuCtxSetCurrent", NULL, m) &&
              BIND(lib, t, ctx_synchronize, "cuCtxSynchronize", NULL, m) &&
              BIND(lib, t, get_error_string, "cuGetErrorString", NULL, m);
    memcpy(miss, m, sizeof m);
    return ok;
}

static bool bind_driver_kernels(void *lib, dt_cuda_driver *t, char *miss)
{
    char m[64] = "";
    bool ok = BIND(lib, t, module_load_data, "cuModuleLoadData", NULL, m) &&
              BIND(lib, t, module_unload, "cuModuleUnload", NULL, m) &&
              BIND(lib, t, module_get_function, "cuModuleGetFunction", NULL, m) &&
              BIND(lib, t, func_get_attribute, "cuFuncGetAttribute", NULL, m) &&
              BIND(lib, t, func_set_attribute, "cuFuncSetAttribute", NULL, m) &&
              BIND(lib, t, mem_alloc, "cuMemAlloc_v2", NULL, m) &&
              BIND(lib, t, mem_free, "cuMemFree_v2", NULL, m) &&
              BIND(lib, t, memcpy_htod, "cuMemcpyHtoD_v2", NULL, m) &&
              BIND(lib, t, memcpy_dtoh, "cuMemcpyDtoH_v2", NULL, m) &&
              BIND(lib, t, memset_d32_async, "cuMemsetD32Async", NULL, m) &&
              BIND(lib, t, launch_kernel, "cuLaunchKernel", NULL, m) &&
              BIND(lib, t, event_create, "cuEventCreate", NULL, m) &&
              BIND(lib, t, event_record, "cuEventRecord", NULL, m) &&
              BIND(lib, t, event_synchronize, "cuEventSynchronize", NULL, m) &&
              BIND(lib, t, event_elapsed_ms, "cuEventElapsedTime_v2", "cuEventElapsedTime", m) &&
              BIND(lib, t, event_destroy, "cuEventDestroy_v2", "cuEventDestroy", m);
    memcpy(miss, m, sizeof m);
    return ok;
}

/* The optional graph entries: all bound, or all NULL. */
static void bind_driver_graphs(void *lib, dt_cuda_driver *t)
{
    char m[64] = "";
    bool ok = BIND(lib, t, graph.stream_create, "cuStreamCreate", NULL, m) &&
              BIND(lib, t, graph.stream_destroy, "cuStreamDestroy_v2", "cuStreamDestroy", m) &&
              BIND(lib, t, graph.begin_capture, "cuStreamBeginCapture_v2", NULL, m) &&
              BIND(lib, t, graph.end_capture, "cuStreamEndCapture", NULL, m) &&
              BIND(lib, t, graph.instantiate, "cuGraphInstantiateWithFlags", NULL, m) &&
              BIND(lib, t, graph.launch, "cuGraphLaunch", NULL, m) &&
              BIND(lib, t, graph.exec_destroy, "cuGraphExecDestroy", NULL, m) &&
              BIND(lib, t, graph.destroy, "cuGraphDestroy", NULL, m);
    if (!ok)
        memset(&t->graph, 0, sizeof t->graph);
}

static void driver_open_once(void)
{
    driver_slot *d = &driver_state;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(d->error, sizeof d->error, "%s", why ? why : "libcuda.so.1: dlopen failed");
        return;
    }
    char missing[64];
    if (!bind_driver_device(lib, &d->table, missing) || !bind_driver_kernels(lib, &d->table, missing)) {
        snprintf(d->error, sizeof d->error, "libcuda.so.1 lacks %s (driver too old)", missing);
        dlclose(lib);
        return;
    }
    bind_driver_graphs(lib, &d->table);
    d->ok = true;
}

int dt_cuda_api_driver_load(const dt_cuda_driver **out, dt_error *err)
{
    *out = NULL;
    if (pthread_once(&driver_once, driver_open_once) != 0)
        return dt_error_set(err, DT_ENODEV, "cannot initialise the CUDA driver table");
    if (!driver_state.ok)
        return dt_error_set(err, DT_ENODEV, "%s", driver_state.error);
    *out = &driver_state.table;
    return 0;
}

void dt_cuda_api_status_str(dt_cu_result r, char *buf, size_t len)
{
    const char *text = NULL;
    if (driver_state.ok && driver_state.table.get_error_string(r, &text) != DT_CU_SUCCESS)
        text = NULL;
    snprintf(buf, len, "%s (%d)", text ? text : "CUDA error", r);
}

/* ---- NVRTC ------------------------------------------------------------------------ */

typedef struct nvrtc_slot {
    dt_nvrtc table;
    bool ok;
    char error[1024];
} nvrtc_slot;

static nvrtc_slot nvrtc_state;         /* written once, under nvrtc_once */
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;

static const char *const nvrtc_names[] = { "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12" };
#define NVRTC_NAMES ((int)(sizeof nvrtc_names / sizeof nvrtc_names[0]))

const char *dt_cuda_api_nvrtc_library_at(int i)
{
    return i >= 0 && i < NVRTC_NAMES ? nvrtc_names[i] : NULL;
}

static void *open_nvrtc(char *path, size_t len)
{
    const char *home = getenv("CUDA_HOME");
    const char *dirs[] = { NULL, home && *home ? home : NULL, "/usr/local/cuda" };
    for (int d = 0; d < 3; d++) {
        if (d > 0 && !dirs[d])
            continue;
        for (int i = 0; i < NVRTC_NAMES; i++) {
            if (d == 0)
                snprintf(path, len, "%s", nvrtc_names[i]);
            else
                snprintf(path, len, "%s/lib64/%s", dirs[d], nvrtc_names[i]);
            void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (lib)
                return lib;
        }
    }
    return NULL;
}

static bool bind_nvrtc(void *lib, dt_nvrtc *t, char *m)
{
    char miss[64] = "";
    bool ok = BIND(lib, t, version, "nvrtcVersion", NULL, miss) &&
              BIND(lib, t, create_program, "nvrtcCreateProgram", NULL, miss) &&
              BIND(lib, t, destroy_program, "nvrtcDestroyProgram", NULL, miss) &&
              BIND(lib, t, compile_program, "nvrtcCompileProgram", NULL, miss) &&
              BIND(lib, t, log_size, "nvrtcGetProgramLogSize", NULL, miss) &&
              BIND(lib, t, get_log, "nvrtcGetProgramLog", NULL, miss) &&
              BIND(lib, t, ptx_size, "nvrtcGetPTXSize", NULL, miss) &&
              BIND(lib, t, get_ptx, "nvrtcGetPTX", NULL, miss) &&
              BIND(lib, t, error_string, "nvrtcGetErrorString", NULL, miss);
    memcpy(m, miss, sizeof miss);
    if (!ok)
        return false;
    /* Optional: newer entry points, NULL where the library predates them. */
    BIND(lib, t, num_supported_archs, "nvrtcGetNumSupportedArchs", NULL, miss);
    BIND(lib, t, supported_archs, "nvrtcGetSupportedArchs", NULL, miss);
    BIND(lib, t, cubin_size, "nvrtcGetCUBINSize", NULL, miss);
    BIND(lib, t, get_cubin, "nvrtcGetCUBIN", NULL, miss);
    return true;
}

static void nvrtc_open_once(void)
{
    nvrtc_slot *n = &nvrtc_state;
    void *lib = open_nvrtc(n->table.path, sizeof n->table.path);
    if (!lib) {
        snprintf(n->error, sizeof n->error,
                 "NVRTC not found (tried libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12 on the "
                 "library path, under $CUDA_HOME/lib64 and /usr/local/cuda/lib64)");
        return;
    }
    char missing[64];
    if (!bind_nvrtc(lib, &n->table, missing)) {
        snprintf(n->error, sizeof n->error, "%.400s lacks %.60s", n->table.path, missing);
        dlclose(lib);
        return;
    }
    n->ok = true;
}

int dt_cuda_api_nvrtc_load(const dt_nvrtc **out, dt_error *err)
{
    *out = NULL;
    if (pthread_once(&nvrtc_once, nvrtc_open_once) != 0)
        return dt_error_set(err, DT_ELIB, "cannot initialise the NVRTC table");
    if (!nvrtc_state.ok)
        return dt_error_set(err, DT_ELIB, "%s", nvrtc_state.error);
    *out = &nvrtc_state.table;
    return 0;
}

int dt_cuda_api_nvrtc_pick_arch(const dt_nvrtc *nvrtc, int cc, bool *ptx)
{
    *ptx = nvrtc->get_cubin == NULL;
    int n = 0;
    if (!nvrtc->num_supported_archs || !nvrtc->supported_archs ||
        nvrtc->num_supported_archs(&n) != 0 || n <= 0 || n > 256)
        return cc;
    int archs[256], best = -1;
    if (nvrtc->supported_archs(archs) != 0)
        return cc;
    for (int i = 0; i < n; i++) {
        if (archs[i] == cc)
            return cc;
        if (archs[i] < cc && archs[i] > best)
            best = archs[i];
    }
    *ptx = true;
    return best;
}

/* ---- compilation ------------------------------------------------------------------ */

/* First line of log mentioning "error" (else the first line), into err. */
static int compile_failure(const char *name, const char *log, dt_error *err)
{
    const char *line = strstr(log, "error");
    if (line)
        while (line > log && line[-1] != '\n')
            line--;
    else
        line = log;
    size_t n = strcspn(line, "\n");
    return dt_error_set(err, DT_EFAIL, "%s: %.*s", name, (int)(n > 400 ? 400 : n), line);
}

static int read_log(const dt_nvrtc *nv, dt_nvrtc_program prog, char **log)
{
    size_t size = 0;
    *log = NULL;
    if (nv->log_size(prog, &size) != 0)
        return DT_ELIB;
    *log = calloc(1, size + 1);
    if (!*log)
        return DT_ENOMEM;
    return nv->get_log(prog, *log) == 0 ? 0 : DT_ELIB;
}

static int read_image(const dt_nvrtc *nv, dt_nvrtc_program prog, bool ptx, dt_cuda_image *image,
                      dt_error *err)
{
    size_t size = 0;
    dt_nvrtc_result r = ptx ? nv->ptx_size(prog, &size) : nv->cubin_size(prog, &size);
    if (r != 0)
        return dt_error_set(err, DT_ELIB, "NVRTC image size: %s", nv->error_string(r));
    image->data = malloc(size + 1);
    if (!image->data)
        return dt_error_set(err, DT_ENOMEM, "out of memory for a %zu-byte image", size);
    r = ptx ? nv->get_ptx(prog, image->data) : nv->get_cubin(prog, image->data);
    if (r != 0) {
        dt_cuda_api_image_free(image);
        return dt_error_set(err, DT_ELIB, "NVRTC image: %s", nv->error_string(r));
    }
    image->data[size] = '\0';
    image->size = size;
    image->ptx = ptx;
    return 0;
}

static int compile_program(const dt_nvrtc *nv, dt_nvrtc_program prog, const char *name, int arch,
                           bool ptx, dt_error *err)
{
    char arch_opt[48];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm", arch);
    const char *opts[] = { arch_opt };
    dt_nvrtc_result r = nv->compile_program(prog, 1, opts);
    if (r == 0)
        return 0;
    if (r != DT_NVRTC_ERROR_COMPILATION)
        return dt_error_set(err, DT_EFAIL, "%s: NVRTC: %s", name, nv->error_string(r));
    char *log = NULL;
    int rc = read_log(nv, prog, &log);
    rc = rc ? dt_error_set(err, rc, "%s: cannot read the NVRTC log", name)
            : compile_failure(name, log, err);
    free(log);
    return rc;
}

int dt_cuda_api_nvrtc_compile(const dt_nvrtc *nvrtc, const char *source, const char *name, int arch,
                              bool ptx, dt_cuda_image *image, dt_error *err)
{
    memset(image, 0, sizeof *image);
    if (!ptx && !nvrtc->get_cubin)
        return dt_error_set(err, DT_ENOTSUP, "%s cannot write cubins", nvrtc->path);
    dt_nvrtc_program prog = NULL;
    dt_nvrtc_result r = nvrtc->create_program(&prog, source, name, 0, NULL, NULL);
    if (r != 0)
        return dt_error_set(err, DT_ELIB, "NVRTC create program: %s", nvrtc->error_string(r));
    int rc = compile_program(nvrtc, prog, name, arch, ptx, err);
    if (rc == 0)
        rc = read_image(nvrtc, prog, ptx, image, err);
    r = nvrtc->destroy_program(&prog);
    if (rc == 0 && r != 0) {
        dt_cuda_api_image_free(image);
        rc = dt_error_set(err, DT_ELIB, "NVRTC destroy program: %s", nvrtc->error_string(r));
    }
    return rc;
}

void dt_cuda_api_image_free(dt_cuda_image *image)
{
    if (!image)
        return;
    free(image->data);
    image->data = NULL;
    image->size = 0;
}

/* ---- device probing ---------------------------------------------------------- */

static int attribute(const dt_cuda_driver *cu, dt_cu_device dev, int attrib, int *value,
                     dt_error *err)
{
    dt_cu_result r = cu->device_attribute(value, attrib, dev);
    if (r == DT_CU_SUCCESS)
        return 0;
    char text[128];
    dt_cuda_api_status_str(r, text, sizeof text);
    return dt_error_set(err, DT_ENODEV, "cuDeviceGetAttribute(%d): %s", attrib, text);
}

static int read_attributes(const dt_cuda_driver *cu, dt_cu_device dev, dt_cuda_device_info *d,
                           dt_error *err)
{
    int major = 0, minor = 0, rc;
    if ((rc = attribute(cu, dev, DT_CU_ATTR_CC_MAJOR, &major, err)) ||
        (rc = attribute(cu, dev, DT_CU_ATTR_CC_MINOR, &minor, err)) ||
        (rc = attribute(cu, dev, DT_CU_ATTR_MULTIPROCESSOR_COUNT, &d->sms, err)) ||
        (rc = attribute(cu, dev, DT_CU_ATTR_L2_CACHE_SIZE, &d->l2_bytes, err)) ||
        (rc = attribute(cu, dev, DT_CU_ATTR_MAX_THREADS_PER_BLOCK, &d->max_threads, err)) ||
        (rc = attribute(cu, dev, DT_CU_ATTR_MAX_SHARED_PER_BLOCK, &d->max_shared, err)) ||
        (rc = attribute(cu, dev, DT_CU_ATTR_MAX_SHARED_PER_BLOCK_OPTIN, &d->max_shared_optin, err)) ||
        (rc = attribute(cu, dev, DT_CU_ATTR_MAX_GRID_DIM_Y, &d->max_grid_y, err)) ||
        (rc = attribute(cu, dev, DT_CU_ATTR_MAX_GRID_DIM_Z, &d->max_grid_z, err)))
        return rc;
    d->cc = major * 10 + minor;
    /* The clock attribute is deprecated in recent drivers; 0 means unknown. */
    if (cu->device_attribute(&d->clock_khz, DT_CU_ATTR_CLOCK_RATE_KHZ, dev) != DT_CU_SUCCESS)
        d->clock_khz = 0;
    return 0;
}

static int driver_fail(dt_cu_result r, const char *what, dt_error *err)
{
    char text[128];
    dt_cuda_api_status_str(r, text, sizeof text);
    return dt_error_set(err, DT_ENODEV, "%s: %s", what, text);
}

int dt_cuda_api_device_open(int ordinal, const dt_cuda_driver **cu, dt_cu_device *dev, int *count,
                            dt_error *err)
{
    int n = 0;
    if (count)
        *count = 0;
    int rc = dt_cuda_api_driver_load(cu, err);
    if (rc)
        return rc;
    dt_cu_result r;
    if ((r = (*cu)->init(0)) != DT_CU_SUCCESS)
        return driver_fail(r, "cuInit", err);
    if ((r = (*cu)->device_count(&n)) != DT_CU_SUCCESS)
        return driver_fail(r, "cuDeviceGetCount", err);
    if (count)
        *count = n;
    if (n < 1)
        return dt_error_set(err, DT_ENODEV, "the driver reports no CUDA device");
    if (ordinal < 0 || ordinal >= n)
        return dt_error_set(err, DT_ENODEV, "measure.cuda_device %d: the driver reports %d CUDA "
                            "device%s (0 to %d)", ordinal, n, n == 1 ? "" : "s", n - 1);
    if ((r = (*cu)->device_get(dev, ordinal)) != DT_CU_SUCCESS)
        return driver_fail(r, "cuDeviceGet", err);
    return 0;
}

int dt_cuda_api_device_probe(int ordinal, dt_cuda_device_info *info, dt_error *err)
{
    memset(info, 0, sizeof *info);
    const dt_cuda_driver *cu;
    dt_cu_device dev;
    int rc = dt_cuda_api_device_open(ordinal, &cu, &dev, NULL, err);
    if (rc)
        return rc;
    dt_cu_result r;
    info->ordinal = ordinal;
    if ((r = cu->device_name(info->name, (int)sizeof info->name, dev)) != DT_CU_SUCCESS)
        return driver_fail(r, "cuDeviceGetName", err);
    if ((r = cu->driver_version(&info->driver_version)) != DT_CU_SUCCESS)
        return driver_fail(r, "cuDriverGetVersion", err);
    if ((r = cu->device_total_mem(&info->memory_bytes, dev)) != DT_CU_SUCCESS)
        return driver_fail(r, "cuDeviceTotalMem", err);
    return read_attributes(cu, dev, info, err);
}

int dt_cuda_api_worker_device(int node_rank, bool rank0_on_node, int device_count, int explicit_device)
{
    if (explicit_device >= 0)
        return explicit_device;
    int worker_index = node_rank - (rank0_on_node ? 1 : 0);
    if (device_count < 1 || worker_index < 0)
        return 0;
    return worker_index % device_count;
}

/* fp32 lanes per SM by compute capability (the CUDA programming guide's
 * throughput table). */
static int fp32_lanes(int cc)
{
    if (cc >= 86)
        return 128;   /* 8.6, 8.7, 8.9, 9.0, 10.x, 12.x */
    if (cc >= 70 || cc == 60)
        return 64;    /* 6.0, 7.x, 8.0 */
    return 128;       /* 5.x, 6.1, 6.2 */
}

double dt_cuda_api_peak_gflops(const dt_cuda_device_info *info)
{
    return (double)info->sms * fp32_lanes(info->cc) * 2.0 * info->clock_khz * 1e-6;
}
