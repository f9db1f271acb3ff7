/* run_view.h — the parts of a tuning run that name and measure configs,
 * built alike on every rank of a run: cfg's model, every task's knob space
 * and the measurer of cfg's backend. An MPI worker opens one and answers
 * rank 0's requests from it (mpi_run.c); the daemon builds its own tasks'
 * spaces and its measurer through the same two functions
 * (dt_run_view_space_init, dt_run_view_measurer_new), so a config index
 * names the same config on every rank. The daemon's run state
 * (daemon_internal.h) stays behind the daemon: a view holds none of it. */
#ifndef DTUNE_RUN_VIEW_H
#define DTUNE_RUN_VIEW_H

#include "daemon.h"
#include "dtune/config.h"
#include "dtune/error.h"
#include "dtune/measure.h"
#include "dtune/model.h"
#include "dtune/space.h"

/* Read-only to its users; made by dt_run_view_new, freed by
 * dt_run_view_free. */
typedef struct dt_run_view {
    dt_model *model;
    dt_space *spaces;          /* spaces[k]: task k's, model->ntasks of them */
    int nspaces;               /* built (model->ntasks once opened) */
    dt_measurer *measurer;     /* NULL in a view opened without a work dir */
} dt_run_view;

/* Opens cfg's model (every task, unchecked against the target's memory:
 * rank 0 checks that), every task's space and, where work_dir is not NULL,
 * the measurer of cfg's backend with its work under work_dir (made when
 * missing). 0 with *out set, or a DT_E* code with err filled and *out
 * NULL (what was made is freed). */
int dt_run_view_new(const dt_config *cfg, const char *work_dir, dt_run_view **out,
                    dt_error *err);

/* Frees the view, its spaces, measurer and model; accepts NULL. */
void dt_run_view_free(dt_run_view *view);

/* Task's knob space on cfg's target as every rank of cfg's run builds it:
 * the replay backend's spaces offer every vector width (the replay
 * surface is no machine's), a real backend's this machine's. 0 or the
 * error of dt_target_space_init_opts. */
int dt_run_view_space_init(const dt_config *cfg, const dt_task *task, dt_space *space,
                           dt_error *err);

/* The measurer of cfg's backend with its work under work_dir: 0, DT_ENOTSUP
 * for a backend this dtune lacks, or dt_measurer_new's error. */
int dt_run_view_measurer_new(const dt_config *cfg, const char *work_dir, dt_measurer **out,
                             dt_error *err);

#endif
