/* netexport_internal.h — what netexport.c (the network's plan and the text
 * around it) and netexport_text.c (the text that is the same for every
 * network) share.
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
 */
#ifndef DTUNE_NETEXPORT_INTERNAL_H
#define DTUNE_NETEXPORT_INTERNAL_H

/* The weights file: a header of NETEXPORT_HEADER_BYTES (magic, version,
 * byte order, network id, float count, checksum, zeros), then the floats. */
#define NETEXPORT_MAGIC "dtunenet"
#define NETEXPORT_VERSION 1
#define NETEXPORT_HEADER_BYTES 64
#define NETEXPORT_BYTE_ORDER 0x01020304u

extern const char netexport_runtime_head[];
extern const char netexport_runtime_tail[];
extern const char netexport_run_program[];

#endif
