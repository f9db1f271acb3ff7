/* space_table.h — internal: how target files (cpu_space.c, cuda_space.c) add
 * knobs and declare validity, and how target.c builds a space from them.
 * Not for callers outside the space module and the target table. */
#ifndef DTUNE_SPACE_TABLE_H
#define DTUNE_SPACE_TABLE_H

#include "dtune/space.h"

/* Adds a split knob of axis_len into parts factors; returns 0 or DT_ENOMEM. */
int dt_space_add_split(dt_space *space, const char *name, int axis_len, int parts);

/* Adds a choice knob with the given values; returns 0 or DT_ENOMEM. */
int dt_space_add_choice(dt_space *space, const char *name, const int *values, int nvalues);

/* One op kind on one target: builds the knobs and says which points are
 * valid. canonical (NULL: none) moves a point to the one point of its
 * class where several points build the same kernel (knobs a form has no
 * use for); valid accepts only such points, so every kernel has one index
 * and a tuner never measures a kernel twice under two names. */
typedef struct dt_space_template {
    int (*build)(dt_space *space);
    bool (*valid)(const dt_space *space, const dt_point *point);
    void (*canonical)(const dt_space *space, dt_point *point);
} dt_space_template;

/* Builds the space of task on target from tpl (NULL: none) with opts (NULL:
 * every option 0); target_name is for messages. For target.c, which picks
 * tpl from the target's table. Returns as dt_target_space_init_opts. */
int dt_space_build(dt_space *space, const dt_task *task, dt_target target,
                   const char *target_name, const dt_space_template *tpl,
                   const dt_space_opts *opts, dt_error *err);

/* The tables, indexed by dt_op_kind. */
extern const dt_space_template dt_cpu_space_templates[DT_OP_KIND_COUNT];
extern const dt_space_template dt_cuda_space_templates[DT_OP_KIND_COUNT];

#endif
