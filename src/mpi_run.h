/* mpi_run.h — `dtune tune` as one run over the ranks of an MPI job (built
 * only where Open MPI was found: DT_HAVE_MPI). See mpi_run.c. */
#ifndef DTUNE_MPI_RUN_H
#define DTUNE_MPI_RUN_H

#include <stdbool.h>

#include "daemon.h"

/* Runs cfg's tuning run over the ranks of the job this process belongs to:
 * rank 0 runs the daemon (result filled as dt_daemon_run fills it) and
 * measures on the workers; every other rank measures for rank 0 until told
 * to stop, sets *worker and prints its own messages ("dtune rank N: ...").
 * Initialises MPI and leaves it initialised (even when it fails after
 * that), so that rank 0 can print its summary before dt_mpi_finish. Returns
 * 0 or a DT_E* code (on rank
 * 0 with err filled): DT_EINVAL where a worker is refused (other machine,
 * dtune or spaces) or a message is malformed, DT_ENOTSUP for a job size or
 * target not supported yet, DT_EIO where MPI itself failed, or the daemon's
 * error. */
int dt_mpi_tune(const dt_config *cfg, dt_daemon_result *result, bool *worker, dt_error *err);

/* Flushes stdout and stderr and finalises MPI where dt_mpi_tune
 * initialised it: once, after dt_mpi_tune, whatever it returned. */
void dt_mpi_finish(void);

#endif
