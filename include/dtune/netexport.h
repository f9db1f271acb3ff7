/* netexport.h — a whole network as a C library that runs its tuned kernels
 * (`dtune export RUN --network`; docs/network-export.md).
 *
 * The kernel export (export.h) gives one kernel per task; the network
 * export adds the network around them: its weights, one planned workspace,
 * the glue between the kernels and a program that runs it. The folder
 * builds with `cc` and `make` alone (no dtune header or library; libc,
 * libm, and libgomp when the kernels run on threads). For a network NAME
 * (the graph's name as a C identifier):
 *
 *   NAME.h              the one header a program includes (below)
 *   NAME_net.c          the network: weights loading, the plan, the glue
 *   NAME.weights        every constant of the graph, one binary file
 *   NAME_run.c          NAME_run WEIGHTS INPUT [OUTPUT] [-n CALLS] [--check REF]
 *   NAME_test_input.bin, NAME_test_output.bin
 *                       a raw float32 input and the output dtune's reference
 *                       executor (graph_ref.h) gives on it
 *   kernels/TASK.c, NAME_kernels.h, NAME_kernels.c, NAME_reference.c,
 *   NAME_test.c         the kernel export of the same choices (export.h)
 *   Makefile            `make`: libNAME.a, libNAME.so, NAME_run, NAME_test;
 *                       `make test`: every kernel checked, then the network
 *                       run on the test input and compared with the
 *                       reference output (max|diff| <= 1e-4 x max|ref|)
 *
 * NAME.h:
 *   int NAME_net_create(const char *weights_path, NAME_net **net);
 *   int NAME_net_run(NAME_net *net, const float *input, float *output);
 *   void NAME_net_destroy(NAME_net *net);             accepts NULL
 *   const char *NAME_net_error(int code);             what a code means
 *   const char *NAME_net_last_error(void);            the calling thread's
 *                                                     last failure, in full
 * Codes: 0, NAME_EINVAL, NAME_ENOTFOUND, NAME_EFORMAT (a file that is not
 * this network's weights: wrong magic, version, byte order, network, size
 * or checksum), NAME_ENOMEM. The library never exits. NAME_INPUT_FLOATS and
 * NAME_OUTPUT_FLOATS give the tensors' sizes (fp32, NCHW / [N, K]).
 *
 * The plan, fixed at export time: activations live in one arena, each
 * tensor at an offset chosen by a greedy interval allocation over the node
 * order (biggest first, the lowest offset free for its lifetime); a
 * concat's inputs (batch 1) are written by their producers straight into
 * their channel slice of its output, a flatten's output is its input's
 * floats; the graph's output is written into the caller's buffer. A kernel
 * that packs its weights gets a workspace of its own per node, prepared
 * once at create; the kernels that pack nothing share one scratch
 * workspace. NAME_net_run allocates nothing. One call at a time per
 * network: the arena is the network's; create one per thread.
 */
#ifndef DTUNE_NETEXPORT_H
#define DTUNE_NETEXPORT_H

#include <stdint.h>

#include "dtune/error.h"
#include "dtune/export.h"
#include "dtune/graph.h"

/* The settings of a network export. */
typedef struct dt_netexport_params {
    /* The kernel export's: target (cpu is the one with a network export),
     * kernel threads, the space's vector width, the source for comments. */
    dt_export_params kernels;
    uint64_t test_seed;        /* the test input: uniform in [-1, 1) from this seed */
} dt_netexport_params;

/* dt_export_params_default's kernels and a fixed test seed. */
dt_netexport_params dt_netexport_params_default(void);

/* Writes the network export of g (dt_graph_ref_check must accept it) into
 * out_dir (created with its parents): the kernel export of the n choices
 * (dt_export_write) and the network around it. Each conv and dense node
 * runs the kernel of the choice of its kind and geometry (an untuned choice:
 * the reference loops); the test output is g run by dt_graph_ref_run.
 * Returns 0, DT_EINVAL (a graph the check refuses, a node without a choice
 * of its geometry, a task whose C name clashes with the network's), what
 * dt_export_write returns, DT_ENOTSUP (a target without a network
 * export), DT_EIO, DT_ENOMEM. */
int dt_netexport_write(const dt_netexport_params *params, const dt_graph *g,
                       const dt_export_choice *choices, int n, const char *out_dir, dt_error *err);

/* Reads the network graph of the model file at path (the reader is chosen
 * by the file's suffix; *out belongs to the caller). Returns 0, or
 * DT_ENOTSUP while no reader handles the suffix (the ONNX importer adds
 * .onnx), or what the reader returns. */
int dt_netexport_read_graph(const char *path, dt_graph **out, dt_error *err);

#endif
