/* cpu_machine.c — the CPU target's machine fingerprint (machine.h, the
 * target table's fingerprint): /proc/cpuinfo's first processor, named
 * precisely enough that two CPUs sold under one name differ; and the
 * measurement conditions its figures depend on.
 */
#include "cpu_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtune/measure.h"

/* The SIMD flags that decide which kernels a CPU runs, in this order. */
static const char *const simd_flags[] = { "asimd", "avx2", "avx512f", "fma", "neon" };

/* When line is "NAME<blanks>: value", the value (without its newline) into out. */
static void take_field(const char *line, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    if (out[0] || strncmp(line, name, n) != 0 || !strchr(" \t:", line[n]))
        return;
    const char *value = line + n + strspn(line + n, " \t");
    if (*value != ':')
        return;
    value += 1 + strspn(value + 1, " \t");
    snprintf(out, len, "%.*s", (int)strcspn(value, "\n"), value);
}

/* Whether word is one of the space-separated words of list. */
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

int dt_cpu_machine_fingerprint(int device, char *buf, size_t len, dt_error *err)
{
    char name[128] = "", family[16] = "", model[16] = "", stepping[16] = "", simd[64] = "";
    char *line = NULL, *flags = NULL;
    size_t cap = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return dt_error_set(err, DT_EIO, "/proc/cpuinfo: cannot open");
    /* the first processor's block ends at the first blank line */
    while (getline(&line, &cap, f) > 0 && line[0] != '\n') {
        take_field(line, "model name", name, sizeof name);
        take_field(line, "cpu family", family, sizeof family);
        take_field(line, "model", model, sizeof model);
        take_field(line, "stepping", stepping, sizeof stepping);
        if (!flags && (strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0))
            flags = strdup(line);
    }
    fclose(f);
    free(line);
    for (size_t i = 0; flags && i < sizeof simd_flags / sizeof simd_flags[0]; i++)
        if (has_word(flags, simd_flags[i]))
            snprintf(simd + strlen(simd), sizeof simd - strlen(simd), "%s%s", simd[0] ? " " : "",
                     simd_flags[i]);
    free(flags);
    snprintf(buf, len, "%s, family %s model %s stepping %s, %s, nproc %ld", name[0] ? name : "unknown CPU",
             family, model, stepping, simd[0] ? simd : "no avx", sysconf(_SC_NPROCESSORS_ONLN));
    return 0;
}

void dt_cpu_machine_conditions(const dt_measure_params *measure, char *buf, size_t len)
{
    snprintf(buf, len, "threads %d, weights %s%s", measure->threads,
             measure->cold_weights ? "cold" : "warm",
             measure->threads > 1 && measure->spread_input ? ", input spread" : "");
}
