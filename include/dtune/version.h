/* version.h — the version of dtune, one definition: recorded with every run
 * (the log's run record and the tuning database) and compared between MPI
 * ranks, which must all run the same dtune. */
#ifndef DTUNE_VERSION_H
#define DTUNE_VERSION_H

#define DT_VERSION "0.20"

#endif
