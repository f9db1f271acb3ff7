/* export_internal.h — the export's private contract: the job being written
 * (export.c makes it, cpu_export.c and cuda_export.c write their target's
 * form of it) and what both forms share, defined in export_text.c. */
#ifndef DTUNE_EXPORT_INTERNAL_H
#define DTUNE_EXPORT_INTERNAL_H

#include <stdbool.h>

#include "dtune/export.h"
#include "dtune/util.h"

/* Longest C name of a library or a task (sanitised model or task name). */
#define EXPORT_NAME_MAX DT_NAME_MAX

/* The export being written. */
typedef struct export_job {
    const dt_export_params *params;
    const dt_export_choice *choices;
    int n;
    const char *out_dir;
    char lib[EXPORT_NAME_MAX];          /* library name: NAME */
    char upper[EXPORT_NAME_MAX];        /* NAME in capitals, for macros */
    char (*task)[EXPORT_NAME_MAX];      /* per choice: TASK as a C name */
} export_job;

/* name as a C identifier into out (len bytes): other characters become
 * '_', an empty name or a leading digit gets prefix; the library's NAME
 * (prefix "m") and each TASK (prefix "t") are made so. */
void export_c_name(const char *name, const char *prefix, char *out, size_t len);

/* text as it may stand inside a C comment or string literal, into out (len
 * bytes): characters other than printable ASCII, and '*', '"' and '\\',
 * become '_', so that a name (a task's, a graph node's, a model's path) can
 * neither end a comment or string nor break its line. Returns out. */
const char *export_plain_text(const char *text, char *out, size_t len);

/* A header's C++ guards: after its includes, and before its closing #endif,
 * so that a C++ program links against the C library. */
extern const char export_cplusplus_open[];
extern const char export_cplusplus_close[];

/* Each choice's TASK, a C name unique in the library: export_c_name of its
 * task's name, "t_" before a name of the network's (net, net_*), and "_2",
 * "_3", ... added where it would share a symbol with an earlier task's (its
 * entry points included) or the library's own (NAME_kernels,
 * NAME_reference, NAME_cuda). The header says which tasks were renamed. */
void export_task_names(const dt_export_choice *choices, int n, char (*task)[EXPORT_NAME_MAX]);

/* Appends printf-formatted text to b. */
void export_emit(dt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends text as the lines of a C string literal (escaped). */
void export_emit_string(dt_buf *b, const char *text);

/* Opens a table row of choice c: "    { .name = ..., .kind = ..., .shape =
 * ..., .config = ...," with the strings escaped, and a newline. */
void export_emit_names(dt_buf *b, const dt_export_choice *c);

/* Writes a table row's geometry fields (export_geometry_fields) of c. */
void export_emit_geometry(dt_buf *b, const dt_export_choice *c);

/* The geometry fields of a kernel_info struct, as C declarations. */
extern const char export_geometry_fields[];

/* The operator semantics of model.h as plain C loops accumulating in double:
 * static conv() and matmul() over a `kernel_info` (a typedef the including
 * file provides) with export_geometry_fields. */
extern const char export_reference_body[];

/* The test programs' shared C text (see export_text.c): their system
 * #includes, and the functions every test program calls. */
extern const char export_test_includes[];
extern const char export_test_common[];

/* The test programs' measure settings: the export's tolerance and CV rule
 * (job's measure params) and the automatic batch of its target's runner
 * (auto_batch_s, auto_batch_max_calls), as the macros export_test_common
 * reads. */
void export_emit_test_settings(dt_buf *b, const export_job *job, double auto_batch_s,
                               int auto_batch_max_calls);

/* Writes b's text to OUT_DIR/name (b freed). Returns 0, DT_ENOMEM, DT_EIO. */
int export_write_file(const export_job *job, const char *name, dt_buf *b, dt_error *err);

/* The space of choice i (with the job's vector width) and its point;
 * checks that the config lies in the space. Free with dt_space_free.
 * Returns 0, DT_EINVAL, DT_ENOTSUP, DT_ENOMEM. */
int export_point(const export_job *job, int i, dt_space *space, dt_point *point, dt_error *err);

/* What an export is on a target that has one (the target table's
 * export_form): how it is written, whether its space depends on the vector
 * width the run's space offered, and how a user builds it (a format of the
 * export's folder). */
typedef struct dt_export_form {
    int (*write)(const export_job *job, dt_error *err);
    bool vector_widths;
    const char *build_hint;
} dt_export_form;

/* The forms of the targets that have one: cpu_export.c, cuda_export.c. */
extern const dt_export_form dt_cpu_export;
extern const dt_export_form dt_cuda_export;

#endif
