/* netexport_internal.h — what netexport.c (the writer), netexport_plan.c
 * (the plan it follows) and netexport_text.c (the text that is the same
 * for every network) share.
 *
 * netexport_runtime_head and _tail are the body of NAME_net.c; before them
 * the writer defines NET_NAME (the name as a string), NET_STRUCT (the
 * handle's struct tag, NAME_net), NET_CREATE, NET_RUN, NET_DESTROY,
 * NET_ERROR, NET_LAST_ERROR (the public names), NET_EINVAL, NET_ENOTFOUND,
 * NET_EFORMAT, NET_ENOMEM (the codes), WEIGHTS_MAGIC, WEIGHTS_VERSION,
 * WEIGHTS_HEADER_BYTES, WEIGHTS_FLOATS, NETWORK_ID, ARENA_FLOATS, NSLOTS and
 * NKERNEL_NODES; between them it writes `static const kernel_node
 * kernel_nodes[NKERNEL_NODES]` and `static void run_nodes(struct NET_STRUCT
 * *net, const float *in, float *out)`. netexport_run_program is NAME_run.c
 * after its includes and NET, NET_NAME, NET_CREATE, NET_RUN, NET_DESTROY,
 * NET_LAST_ERROR, INPUT_FLOATS and OUTPUT_FLOATS.
 *
 * netexport_plan.c makes the plan the writer follows.
 */
#ifndef DTUNE_NETEXPORT_INTERNAL_H
#define DTUNE_NETEXPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "dtune/netexport.h"

/* The weights file: a header of NETEXPORT_HEADER_BYTES (magic, version,
 * byte order, network id, float count, checksum, zeros), then the floats. */
#define NETEXPORT_MAGIC "dtunenet"
#define NETEXPORT_VERSION 1
#define NETEXPORT_HEADER_BYTES 64
#define NETEXPORT_BYTE_ORDER 0x01020304u

/* The plan of an export (netexport_plan.c): per tensor and per node. */
typedef struct netexport_plan {
    const dt_graph *g;
    const dt_netexport_params *params;
    const dt_export_choice *choices;
    int *producer;       /* per tensor: the node that writes it, or -1 */
    int *last_use;       /* per tensor: the last node that reads it (else its producer) */
    int *alias;          /* per tensor: the tensor its floats lie in (itself: its own) */
    size_t *alias_at;    /* ... at this many floats from that tensor's start */
    int *first, *last;   /* per root tensor: the nodes its floats live over */
    size_t *arena_at;    /* per arena root: its offset */
    size_t arena_floats;
    int *choice;         /* per node: the choice of its kernel, or -1 */
    int *slot;           /* per node: its kernel's workspace, or -1 */
    int nslots;          /* slot 0 is the scratch the kernels that pack nothing share */
    int nkernels;
} netexport_plan;

/* The plan of g for the n choices (dt_graph_ref_check passed): every field
 * above. Free with netexport_plan_free, also after a failure. Returns 0,
 * DT_EINVAL (a node without a choice of its geometry, a config outside its
 * space), DT_ENOMEM. */
int netexport_plan_make(netexport_plan *p, const dt_netexport_params *params, const dt_graph *g,
                        const dt_export_choice *choices, int n, dt_error *err);

void netexport_plan_free(netexport_plan *p);

/* The tensor whose floats hold t's (t itself when t is no view), and where
 * t starts in them (*at floats). */
int netexport_root(const netexport_plan *p, int t, size_t *at);

extern const char netexport_runtime_head[];
extern const char netexport_runtime_tail[];
extern const char netexport_run_program[];

#endif
