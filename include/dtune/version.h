/* version.h — the version of dtune, which the ranks of an MPI run compare
 * (a worker running another dtune may generate other code for a config). */
#ifndef DTUNE_VERSION_H
#define DTUNE_VERSION_H

#define DT_VERSION "0.18"

#endif
