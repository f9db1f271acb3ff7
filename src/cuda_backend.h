/* cuda_backend.h — the `cuda` measurement backend and its measurement process.
 *
 * open   probes device 0 through the dlopen'd driver (no context is made in
 *        the calling process) and loads NVRTC; without a driver or a device
 *        it fails with DT_ENODEV and the message "no CUDA device found".
 * build  (builder threads, concurrently) reads the point into a plan, rejects
 *        it as DT_RESULT_INVALID when it exceeds the device's limits, writes
 *        the CUDA source and compiles it with NVRTC into a cubin for the
 *        device's compute capability (PTX when NVRTC does not know it),
 *        cached under WORK_DIR/cuda/.
 * run    (one runner thread) sends the artifact to a separate measurement
 *        process that owns the CUDA context: it loads the module, launches
 *        once, checks the output against dt_task_reference, then times
 *        micro-batches with CUDA events under the shared CV rule (measure.h),
 *        optionally flushing L2 before each. A launch failure or sticky error
 *        is DT_RESULT_LAUNCH_ERROR and the process is restarted before the
 *        next run (the context is lost); a process that dies is
 *        DT_RESULT_CRASH, one that overruns measure.timeout_seconds is killed
 *        and DT_RESULT_TIMEOUT.
 *
 * The measurement process is the calling executable itself, started as
 * `EXE __cuda-runner FD [--limits CPU_SECONDS FILES]` (EXE = /proc/self/exe, or $DTUNE_CUDA_RUNNER when
 * set). Every executable that opens this backend must therefore dispatch
 * argv[1] == DT_CUDA_RUNNER_ARG to dt_cuda_backend_runner_main before anything else.
 */
#ifndef DTUNE_CUDA_BACKEND_H
#define DTUNE_CUDA_BACKEND_H

#include "dtune/backend.h"
#include "cuda_api.h"
#include "dtune/error.h"
#include "dtune/model.h"

extern const dt_backend_i dt_cuda_backend;

#define DT_CUDA_RUNNER_ARG "__cuda-runner"

/* The measurement process's main: argv = { EXE, DT_CUDA_RUNNER_ARG, FD
 * [, "--limits", CPU_SECONDS, OPEN_FILES [, "--device", ORDINAL]] } (the
 * ordinal is measure.cuda_device; 0 when not given). Serves requests on socket FD until the parent closes it. Returns the exit
 * status (0 when the parent closed the socket, 3 after a lost context, 1 on
 * a protocol or start-up failure). */
int dt_cuda_backend_runner_main(int argc, char **argv);

/* Opens the backend for building only, for a device described by DEVICE
 * that need not be present (NVRTC needs no GPU): dt_cuda_backend.build then
 * writes the cubins a measurer on such a device with the same work dir finds
 * in its cache, so that a short lease of a GPU is not spent on compiles.
 * Nothing may be run on the state; close it with dt_cuda_backend.close. */
int dt_cuda_backend_open_builder(const dt_cuda_device_info *device, const dt_backend_params *params,
                                 void **state, dt_error *err);

/* A Hopper card (the H100, the H200) as builds see it, for
 * dt_cuda_backend_open_builder: compute capability 9.0, 132 SMs, 1024 threads a
 * block, 48 KB of shared memory a block without the opt-in and 227 KB with
 * it, grids of 65535 in y and z (CUDA C++ Programming Guide). */
void dt_cuda_backend_device_hopper(dt_cuda_device_info *device);

/* The share of the device's memory one task's tensors may take. */
#define DT_CUDA_MEMORY_SHARE 0.9

/* The CUDA target's task_memory (target.h): DT_CUDA_MEMORY_SHARE of the
 * default measure.cuda_device's memory (a model is checked before any
 * config is read); nothing (unchecked) when no device can be probed. */
void dt_cuda_backend_task_memory(dt_model_memory *memory);

/* The CUDA target's fingerprint (target.h; cuda_machine.c): "GPU NAME, cc
 * MAJOR.MINOR, driver VERSION" of device (measure.cuda_device). Returns 0 or
 * DT_ENODEV with a message. */
int dt_cuda_machine_fingerprint(int device, char *buf, size_t len, dt_error *err);
/* "L2 flushed|kept": measure.flush_l2. */
void dt_cuda_machine_conditions(const dt_measure_params *measure, char *buf, size_t len);

/* The CUDA target's worker_device (target.h; cuda_machine.c): the worker's
 * index among its node's workers modulo the driver's device count
 * (dt_cuda_api_worker_device), device 0 where the driver cannot be asked. */
int dt_cuda_machine_worker_device(int node_rank, bool rank0_on_node);

#endif
