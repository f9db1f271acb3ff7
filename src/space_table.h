/* space_table.h — internal: how target files (space_cpu.c, space_cuda.c) add
 * knobs and declare validity. Not for callers outside the space module. */
#ifndef DTUNE_SPACE_TABLE_H
#define DTUNE_SPACE_TABLE_H

#include "dtune/space.h"

/* Adds a split knob of axis_len into parts factors; returns 0 or DT_ENOMEM. */
int dt_space_add_split(dt_space *space, const char *name, int axis_len, int parts);

/* Adds a choice knob with the given values; returns 0 or DT_ENOMEM. */
int dt_space_add_choice(dt_space *space, const char *name, const int *values, int nvalues);

/* One op kind on one target: builds the knobs and says which points are valid. */
typedef struct dt_space_template {
    int (*build)(dt_space *space);
    bool (*valid)(const dt_space *space, const dt_point *point);
} dt_space_template;

/* The tables, indexed by dt_op_kind. */
extern const dt_space_template dt_space_cpu_templates[DT_OP_KIND_COUNT];
extern const dt_space_template dt_space_cuda_templates[DT_OP_KIND_COUNT];

#endif
