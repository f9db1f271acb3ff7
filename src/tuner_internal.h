/* tuner_internal.h — private to src/: the strategy a tuner runs, by name.
 * tuner.c defines it; the only callers outside it are the tests (built with
 * -Isrc). Not part of dtune's interface. */
#ifndef DTUNE_TUNER_INTERNAL_H
#define DTUNE_TUNER_INTERNAL_H

#include "dtune/tuner.h"

/* The strategy's name ("chameleon", ...). */
const char *dt_tuner_strategy(const dt_tuner *t);

#endif
