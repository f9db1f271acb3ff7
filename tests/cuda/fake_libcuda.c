/* fake_libcuda.c — a stand-in libcuda.so.1 for testing the cuda backend's
 * process machinery on machines without a GPU (test_cuda builds it with
 * `cc -shared -fPIC` and puts it first on LD_LIBRARY_PATH of a child).
 *
 * Memory is host memory, events read the monotonic clock, and a kernel
 * launch does what $FAKE_CUDA_MODE says:
 *   ok        nothing (the output keeps the NaN the runner filled in)
 *   sticky    the next synchronisation fails with an illegal address (700)
 *   hang      sleeps for a minute
 *   crash     abort()s
 *   nodevice  (cuInit itself fails with CUDA_ERROR_NO_DEVICE)
 * Each cuInit appends "init PID" to $FAKE_CUDA_LOG when that is set.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static const char *mode(void)
{
    const char *m = getenv("FAKE_CUDA_MODE");
    return m ? m : "ok";
}

static int sticky_pending;

CUresult cuInit(unsigned flags);
CUresult cuInit(unsigned flags)
{
    const char *log = getenv("FAKE_CUDA_LOG");
    if (log) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "init %ld\n", (long)getpid());
            fclose(f);
        }
    }
    return strcmp(mode(), "nodevice") == 0 ? 100 : 0;
}

/* NVRTC looks this up in a loaded libcuda; the fake has no export tables. */
CUresult cuGetExportTable(const void **table, const void *id);
CUresult cuGetExportTable(const void **table, const void *id)
{
    *table = NULL;
    return 500;
}

#define RETURNS_OK(decl) CUresult decl; CUresult decl { return 0; }

CUresult cuDriverGetVersion(int *v);
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal);
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return 0; }
CUresult cuDeviceGetName(char *name, int len, int dev);
CUresult cuDeviceGetName(char *name, int len, int dev) { snprintf(name, (size_t)len, "Fake GPU"); return 0; }

CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev);
CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) { *bytes = (size_t)24 << 30; return 0; }

CUresult cuDeviceGetAttribute(int *v, int attrib, int dev);
CUresult cuDeviceGetAttribute(int *v, int attrib, int dev)
{
    switch (attrib) {
    case 1: *v = 1024; break;              /* max threads per block */
    case 6: case 7: *v = 65535; break;     /* grid y, z */
    case 8: *v = 49152; break;             /* shared per block */
    case 13: *v = 1410000; break;          /* clock kHz */
    case 16: *v = 108; break;              /* SMs */
    case 38: *v = 1 << 20; break;          /* L2 */
    case 75: *v = 8; break;
    case 76: *v = 0; break;
    case 97: *v = 166912; break;           /* opt-in shared */
    default: return 1;
    }
    return 0;
}

static int context_token, module_token, function_token;

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev);
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { *ctx = &context_token; return 0; }
RETURNS_OK(cuDevicePrimaryCtxRelease_v2(int dev))
RETURNS_OK(cuCtxSetCurrent(void *ctx))

CUresult cuCtxSynchronize(void);
CUresult cuCtxSynchronize(void)
{
    return sticky_pending ? 700 : 0;
}

CUresult cuGetErrorString(CUresult r, const char **text);
CUresult cuGetErrorString(CUresult r, const char **text)
{
    *text = r == 700 ? "an illegal memory access was encountered" : "fake error";
    return 0;
}

CUresult cuModuleLoadData(void **mod, const void *image);
CUresult cuModuleLoadData(void **mod, const void *image) { *mod = &module_token; return 0; }
RETURNS_OK(cuModuleUnload(void *mod))
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name);
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name)
{
    *fn = &function_token;
    return strcmp(name, "dt_kernel") == 0 ? 0 : 500;
}
CUresult cuFuncGetAttribute(int *v, int attrib, void *fn);
CUresult cuFuncGetAttribute(int *v, int attrib, void *fn) { *v = attrib == 0 ? 1024 : 32; return 0; }
RETURNS_OK(cuFuncSetAttribute(void *fn, int attrib, int value))

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    void *m = malloc(bytes);
    *p = (CUdeviceptr)(uintptr_t)m;
    return m ? 0 : 2;
}
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n);
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n);
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n)
{
    if (sticky_pending)
        return 700;
    memcpy(d, (void *)(uintptr_t)s, n);
    return 0;
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *stream);
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *stream)
{
    unsigned *p = (unsigned *)(uintptr_t)d;
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return 0;
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra);
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
    if (strcmp(mode(), "sticky") == 0)
        sticky_pending = 1;
    else if (strcmp(mode(), "hang") == 0)
        sleep(60);
    else if (strcmp(mode(), "crash") == 0)
        abort();
    return 0;
}

CUresult cuEventCreate(double **ev, unsigned flags);
CUresult cuEventCreate(double **ev, unsigned flags) { *ev = calloc(1, sizeof **ev); return *ev ? 0 : 2; }
CUresult cuEventRecord(double *ev, void *stream);
CUresult cuEventRecord(double *ev, void *stream)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *ev = (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6 + 0.01;   /* every call "takes" 10 us */
    return 0;
}
RETURNS_OK(cuEventSynchronize(double *ev))
CUresult cuEventElapsedTime_v2(float *ms, double *start, double *end);
CUresult cuEventElapsedTime_v2(float *ms, double *start, double *end) { *ms = (float)(*end - *start); return 0; }
CUresult cuEventDestroy_v2(double *ev);
CUresult cuEventDestroy_v2(double *ev) { free(ev); return 0; }
