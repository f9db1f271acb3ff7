/* costmodel_internal.h — private to src/: the width of a cost model's rows.
 * costmodel.c defines it; the only callers outside it are the tests (built
 * with -Isrc). Not part of dtune's interface. */
#ifndef DTUNE_COSTMODEL_INTERNAL_H
#define DTUNE_COSTMODEL_INTERNAL_H

#include "dtune/costmodel.h"

/* The number of features a row of this model has. */
int dt_costmodel_nfeatures(const dt_costmodel *cm);

#endif
