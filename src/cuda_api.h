/* cuda_api.h — the CUDA driver API and NVRTC, reached through dlopen.
 *
 * dtune never links against libcuda or libnvrtc: a binary linked with -lcuda
 * does not start on a machine without the NVIDIA driver, and CI machines have
 * neither. This module declares the few types, constants and entry points
 * dtune uses (checked against cuda.h / nvrtc.h at compile time when the
 * toolkit headers are present), loads each library once per process on first
 * use, wraps NVRTC compilation, and probes device 0 (name, compute
 * capability, limits, peak).
 *
 * Every entry point returns the library's own status code (0 = success);
 * dt_cuda_api_status_str turns a driver code into text.
 */
#ifndef DTUNE_CUDA_API_H
#define DTUNE_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>

#include "dtune/error.h"

/* --- driver API types (the ABI of cuda.h, opaque handles as pointers) --- */
typedef int dt_cu_result;                  /* CUresult; 0 = CUDA_SUCCESS */
typedef int dt_cu_device;                  /* CUdevice */
typedef unsigned long long dt_cu_ptr;      /* CUdeviceptr (64-bit) */
typedef struct dt_cu_ctx_st *dt_cu_context;
typedef struct dt_cu_mod_st *dt_cu_module;
typedef struct dt_cu_func_st *dt_cu_function;
typedef struct dt_cu_event_st *dt_cu_event;
typedef struct dt_cu_stream_st *dt_cu_stream;
typedef struct dt_cu_graph_st *dt_cu_graph;
typedef struct dt_cu_graph_exec_st *dt_cu_graph_exec;

/* CUstreamCaptureMode: relaxed lets a library allocate while it is captured. */
enum { DT_CU_STREAM_CAPTURE_RELAXED = 2 };
enum { DT_CU_STREAM_NON_BLOCKING = 1 };

/* CUdevice_attribute values dtune reads. */
enum {
    DT_CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
    DT_CU_ATTR_MAX_GRID_DIM_Y = 6,
    DT_CU_ATTR_MAX_GRID_DIM_Z = 7,
    DT_CU_ATTR_MAX_SHARED_PER_BLOCK = 8,
    DT_CU_ATTR_CLOCK_RATE_KHZ = 13,
    DT_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    DT_CU_ATTR_L2_CACHE_SIZE = 38,
    DT_CU_ATTR_CC_MAJOR = 75,
    DT_CU_ATTR_CC_MINOR = 76,
    DT_CU_ATTR_MAX_SHARED_PER_BLOCK_OPTIN = 97
};

/* CUfunction_attribute values. */
enum {
    DT_CU_FUNC_MAX_THREADS_PER_BLOCK = 0,
    DT_CU_FUNC_NUM_REGS = 4,
    DT_CU_FUNC_MAX_DYNAMIC_SHARED = 8
};

/* CUresult values dtune tells apart (the rest are "some failure"). */
enum {
    DT_CU_SUCCESS = 0,
    DT_CU_ERROR_NO_DEVICE = 100,
    DT_CU_ERROR_INVALID_IMAGE = 200,
    DT_CU_ERROR_ILLEGAL_ADDRESS = 700,
    DT_CU_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    DT_CU_ERROR_LAUNCH_TIMEOUT = 702,
    DT_CU_ERROR_LAUNCH_FAILED = 719
};

/* Streams and graphs (CUDA 11.4 and later), for timing launches without
 * their host-side cost (cuda_bench). Optional: all NULL when the driver lacks
 * one of them; nothing in a tuning run uses them. */
typedef struct dt_cuda_graph_api {
    dt_cu_result (*stream_create)(dt_cu_stream *s, unsigned flags);
    dt_cu_result (*stream_destroy)(dt_cu_stream s);
    dt_cu_result (*begin_capture)(dt_cu_stream s, int mode);
    dt_cu_result (*end_capture)(dt_cu_stream s, dt_cu_graph *graph);
    dt_cu_result (*instantiate)(dt_cu_graph_exec *exec, dt_cu_graph graph, unsigned long long flags);
    dt_cu_result (*launch)(dt_cu_graph_exec exec, dt_cu_stream s);
    dt_cu_result (*exec_destroy)(dt_cu_graph_exec exec);
    dt_cu_result (*destroy)(dt_cu_graph graph);
} dt_cuda_graph_api;

typedef struct dt_cuda_driver {
    dt_cu_result (*init)(unsigned flags);
    dt_cu_result (*driver_version)(int *version);
    dt_cu_result (*device_count)(int *count);
    dt_cu_result (*device_get)(dt_cu_device *dev, int ordinal);
    dt_cu_result (*device_name)(char *name, int len, dt_cu_device dev);
    dt_cu_result (*device_attribute)(int *value, int attrib, dt_cu_device dev);
    dt_cu_result (*device_total_mem)(size_t *bytes, dt_cu_device dev);
    dt_cu_result (*primary_ctx_retain)(dt_cu_context *ctx, dt_cu_device dev);
    dt_cu_result (*primary_ctx_release)(dt_cu_device dev);
    dt_cu_result (*ctx_set_current)(dt_cu_context ctx);
    dt_cu_result (*ctx_synchronize)(void);
    dt_cu_result (*module_load_data)(dt_cu_module *mod, const void *image);
    dt_cu_result (*module_unload)(dt_cu_module mod);
    dt_cu_result (*module_get_function)(dt_cu_function *fn, dt_cu_module mod, const char *name);
    dt_cu_result (*func_get_attribute)(int *value, int attrib, dt_cu_function fn);
    dt_cu_result (*func_set_attribute)(dt_cu_function fn, int attrib, int value);
    dt_cu_result (*mem_alloc)(dt_cu_ptr *ptr, size_t bytes);
    dt_cu_result (*mem_free)(dt_cu_ptr ptr);
    dt_cu_result (*memcpy_htod)(dt_cu_ptr dst, const void *src, size_t bytes);
    dt_cu_result (*memcpy_dtoh)(void *dst, dt_cu_ptr src, size_t bytes);
    dt_cu_result (*memset_d32_async)(dt_cu_ptr dst, unsigned value, size_t count, dt_cu_stream s);
    dt_cu_result (*launch_kernel)(dt_cu_function fn, unsigned gx, unsigned gy, unsigned gz,
                                  unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                                  dt_cu_stream s, void **params, void **extra);
    dt_cu_result (*event_create)(dt_cu_event *ev, unsigned flags);
    dt_cu_result (*event_record)(dt_cu_event ev, dt_cu_stream s);
    dt_cu_result (*event_synchronize)(dt_cu_event ev);
    dt_cu_result (*event_elapsed_ms)(float *ms, dt_cu_event start, dt_cu_event end);
    dt_cu_result (*event_destroy)(dt_cu_event ev);
    dt_cu_result (*get_error_string)(dt_cu_result r, const char **text);
    dt_cuda_graph_api graph;
} dt_cuda_driver;

/* The driver table, loaded once per process from libcuda.so.1. Returns 0 and
 * *out (valid for the life of the process), or DT_ENODEV with the reason
 * (dlopen's or the missing symbol's message) in err. */
int dt_cuda_api_driver_load(const dt_cuda_driver **out, dt_error *err);

/* Text of a driver status code, e.g. "an illegal memory access was
 * encountered (700)"; works without a loaded driver (prints the number). */
void dt_cuda_api_status_str(dt_cu_result r, char *buf, size_t len);

/* --- NVRTC --- */
typedef struct dt_nvrtc_prog_st *dt_nvrtc_program;
typedef int dt_nvrtc_result;               /* nvrtcResult; 0 = NVRTC_SUCCESS */

enum { DT_NVRTC_ERROR_COMPILATION = 6 };

typedef struct dt_nvrtc {
    char path[512];                        /* the library that was loaded */
    dt_nvrtc_result (*version)(int *major, int *minor);
    dt_nvrtc_result (*num_supported_archs)(int *n);          /* NULL before CUDA 11.2 */
    dt_nvrtc_result (*supported_archs)(int *archs);          /* NULL before CUDA 11.2 */
    dt_nvrtc_result (*create_program)(dt_nvrtc_program *prog, const char *source,
                                      const char *name, int nheaders,
                                      const char *const *headers, const char *const *names);
    dt_nvrtc_result (*destroy_program)(dt_nvrtc_program *prog);
    dt_nvrtc_result (*compile_program)(dt_nvrtc_program prog, int nopts, const char *const *opts);
    dt_nvrtc_result (*log_size)(dt_nvrtc_program prog, size_t *size);
    dt_nvrtc_result (*get_log)(dt_nvrtc_program prog, char *log);
    dt_nvrtc_result (*ptx_size)(dt_nvrtc_program prog, size_t *size);
    dt_nvrtc_result (*get_ptx)(dt_nvrtc_program prog, char *ptx);
    dt_nvrtc_result (*cubin_size)(dt_nvrtc_program prog, size_t *size);     /* NULL before 11.1 */
    dt_nvrtc_result (*get_cubin)(dt_nvrtc_program prog, char *cubin);       /* NULL before 11.1 */
    const char *(*error_string)(dt_nvrtc_result r);
} dt_nvrtc;

/* The NVRTC table, loaded once per process: libnvrtc.so, libnvrtc.so.13,
 * libnvrtc.so.12 by the loader's search path, then the same names under
 * $CUDA_HOME/lib64 and /usr/local/cuda/lib64. Returns 0 and *out, or DT_ELIB
 * naming what was tried. */
int dt_cuda_api_nvrtc_load(const dt_nvrtc **out, dt_error *err);

/* The i-th NVRTC library name dt_cuda_api_nvrtc_load tries, NULL past the last (an
 * export's loader tries the same). */
const char *dt_cuda_api_nvrtc_library_at(int i);

/* The architecture to compile for on a device of compute capability cc
 * (major * 10 + minor): cc itself when NVRTC supports it (*ptx = false, a
 * cubin), else the highest supported architecture below it (*ptx = true:
 * PTX the driver JIT-compiles). Returns -1 when NVRTC supports none. */
int dt_cuda_api_nvrtc_pick_arch(const dt_nvrtc *nvrtc, int cc, bool *ptx);

/* A compiled image (cubin or NUL-terminated PTX), malloc'd. */
typedef struct dt_cuda_image {
    char *data;
    size_t size;
    bool ptx;
} dt_cuda_image;

/* Compiles source (name used in messages) for arch: a cubin for sm_ARCH, or
 * PTX for compute_ARCH when ptx is true. Thread-safe (NVRTC programs are
 * per-call). Returns 0 and fills image (free with dt_cuda_api_image_free);
 * DT_EFAIL when the source does not compile, with the first error line of
 * the log in err; DT_ELIB or DT_ENOMEM when NVRTC itself fails. */
int dt_cuda_api_nvrtc_compile(const dt_nvrtc *nvrtc, const char *source, const char *name, int arch,
                              bool ptx, dt_cuda_image *image, dt_error *err);

void dt_cuda_api_image_free(dt_cuda_image *image);

/* --- One device as the driver reports it ------------------------------------ */

typedef struct dt_cuda_device_info {
    int ordinal;               /* the driver's number of the device */
    char name[256];
    int cc;                    /* compute capability, major * 10 + minor */
    int sms;
    int clock_khz;             /* 0 when the driver does not report it */
    int l2_bytes;
    int max_threads;           /* per block */
    int max_shared;            /* per block without opt-in */
    int max_shared_optin;      /* per block with the opt-in attribute */
    int max_grid_y, max_grid_z;
    int driver_version;        /* e.g. 13000 */
    size_t memory_bytes;       /* global memory */
} dt_cuda_device_info;

/* Opens device `ordinal` (measure.cuda_device; counted among the devices
 * CUDA_VISIBLE_DEVICES leaves visible): loads the driver, cuInit, checks the
 * ordinal against the driver's device count and gets the device. Sets *cu
 * and *dev; *count (when non-NULL) gets the device count, also on an
 * ordinal out of range. Returns 0, or DT_ENODEV with the reason (no
 * driver, "cuInit: ...", "measure.cuda_device 3: the driver reports 2 CUDA
 * devices (0 to 1)"). */
int dt_cuda_api_device_open(int ordinal, const dt_cuda_driver **cu, dt_cu_device *dev, int *count,
                            dt_error *err);

/* Probes device `ordinal` (dt_cuda_api_device_open, then its name and
 * attributes; no context). Returns 0, or DT_ENODEV with the reason
 * ("libcuda.so.1: cannot open shared object file: ...", "cuInit: no
 * CUDA-capable device is detected (100)", ...). */
int dt_cuda_api_device_probe(int ordinal, dt_cuda_device_info *info, dt_error *err);

/* The device a measurement worker of an MPI job uses: explicit_device when
 * it is >= 0 (the user set measure.cuda_device), else its index among the
 * workers of its node modulo device_count. node_rank is the rank's place
 * among the ranks of its node in MPI_COMM_WORLD order; rank0_on_node says
 * whether rank 0 (which measures nothing, so takes no device) is one of
 * them, in which case it is node rank 0. device_count < 1 gives 0. Where
 * CUDA_VISIBLE_DEVICES leaves each rank one device, device_count is 1 and
 * every worker takes that one. */
int dt_cuda_api_worker_device(int node_rank, bool rank0_on_node, int device_count, int explicit_device);

/* Peak fp32 GFLOPS: SMs x fp32 lanes per SM (by compute capability) x 2 x
 * clock; 0 when the clock is unknown. */
double dt_cuda_api_peak_gflops(const dt_cuda_device_info *info);

#endif
