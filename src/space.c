/* space.c — knob spaces: factorisation enumeration, mixed-radix indexing,
 * features, neighbours and random valid points.
 *
 * The knobs of each (op kind, target) come from the template tables in
 * cpu_space.c and cuda_space.c, handed to dt_space_build by the target's
 * table (target.c); this file is target-independent.
 */
#include "dtune/space.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space_table.h"
#include "dtune/util.h"

/* ---- factorisations ------------------------------------------------------- */

typedef struct factor_list {
    int parts, n, cap;
    int *rows;
    int current[DT_MAX_PARTS];
} factor_list;

static int factor_push(factor_list *fl)
{
    if (fl->n == fl->cap) {
        size_t cap = dt_grow_capacity((size_t)fl->cap, (size_t)fl->n + 1);
        if (cap > INT_MAX || dt_resize(&fl->rows, cap * (size_t)fl->parts, sizeof *fl->rows) != 0)
            return DT_ENOMEM;
        fl->cap = (int)cap;
    }
    memcpy(fl->rows + (size_t)fl->n * fl->parts, fl->current, (size_t)fl->parts * sizeof(int));
    fl->n++;
    return 0;
}

/* Fills parts 1..parts-1 (inner factors) in lexicographic order; part 0 takes
 * what is left, so the innermost factor varies fastest between rows. */
static int factor_fill(factor_list *fl, int part, int remaining)
{
    if (part == fl->parts) {
        fl->current[0] = remaining;
        return factor_push(fl);
    }
    for (int d = 1; d <= remaining; d++) {
        if (remaining % d)
            continue;
        fl->current[part] = d;
        int rc = factor_fill(fl, part + 1, remaining / d);
        if (rc)
            return rc;
    }
    return 0;
}

int dt_count_factorisations(int n, int parts)
{
    if (parts <= 1)
        return n >= 1 ? 1 : 0;
    int total = 0;
    for (int d = 1; d <= n; d++)
        if (n % d == 0)
            total += dt_count_factorisations(n / d, parts - 1);
    return total;
}

int dt_space_add_split(dt_space *space, const char *name, int axis_len, int parts)
{
    if (space->nknobs == DT_MAX_KNOBS || parts < 1 || parts > DT_MAX_PARTS || axis_len < 1)
        return DT_EINVAL;
    factor_list fl = { .parts = parts };
    /* The recursion sets parts 1..; part 0 is filled last from the remainder. */
    int rc = parts == 1 ? (fl.current[0] = axis_len, factor_push(&fl)) : factor_fill(&fl, 1, axis_len);
    if (rc) {
        free(fl.rows);
        return rc;
    }
    dt_knob *k = &space->knobs[space->nknobs++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->type = DT_KNOB_SPLIT;
    k->parts = parts;
    k->axis_len = axis_len;
    k->noptions = fl.n;
    k->options = fl.rows;
    return 0;
}

int dt_space_add_choice(dt_space *space, const char *name, const int *values, int nvalues)
{
    if (space->nknobs == DT_MAX_KNOBS || nvalues < 1)
        return DT_EINVAL;
    int *copy = malloc((size_t)nvalues * sizeof *copy);
    if (!copy)
        return DT_ENOMEM;
    memcpy(copy, values, (size_t)nvalues * sizeof *copy);
    dt_knob *k = &space->knobs[space->nknobs++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->type = DT_KNOB_CHOICE;
    k->parts = 1;
    k->noptions = nvalues;
    k->options = copy;
    return 0;
}

/* ---- construction ---------------------------------------------------------- */

int dt_space_build(dt_space *space, const dt_task *task, dt_target target,
                   const char *target_name, const dt_space_template *tpl,
                   const dt_space_opts *opts, dt_error *err)
{
    memset(space, 0, sizeof *space);
    int max_vec = opts ? opts->cpu_max_vec : 0;
    if (max_vec != 0 && max_vec != 4 && max_vec != 8 && max_vec != 16)
        return dt_error_set(err, DT_EINVAL, "cpu_max_vec %d is not 0, 4, 8 or 16", max_vec);
    space->target = target;
    space->task = *task;
    space->cpu_max_vec = max_vec;   /* 0: the CPU template puts the machine's width */
    space->tpl = tpl;
    if (!tpl || !tpl->build)
        return dt_error_set(err, DT_ENOTSUP, "no %s template for %s", target_name,
                            dt_op_kind_name(task->kind) ? dt_op_kind_name(task->kind) : "?");
    int rc = tpl->build(space);
    if (rc) {
        dt_space_free(space);
        return dt_error_set(err, rc, "cannot build the %s space of %s", target_name,
                            task->name);
    }
    space->size = 1;
    for (int i = 0; i < space->nknobs; i++) {
        const dt_knob *k = &space->knobs[i];
        if (k->noptions > DT_KNOB_MAX_OPTIONS || space->size > UINT64_MAX / (uint64_t)k->noptions) {
            int n = k->noptions;
            char knob[sizeof k->name];
            snprintf(knob, sizeof knob, "%s", k->name);
            dt_space_free(space);
            if (n > DT_KNOB_MAX_OPTIONS)
                return dt_error_set(err, DT_EINVAL, "task %s: knob %s has %d options, more than the %d "
                                    "a knob can hold (the axis has too many factorisations)",
                                    task->name, knob, n, DT_KNOB_MAX_OPTIONS);
            return dt_error_set(err, DT_EINVAL, "task %s: its %s space has 2^64 configs or more",
                                task->name, target_name);
        }
        space->size *= (uint64_t)k->noptions;
        space->nfeatures += k->type == DT_KNOB_SPLIT ? k->parts : 1;
    }
    return 0;
}

int dt_space_copy(dt_space *dst, const dt_space *src)
{
    *dst = *src;
    for (int i = 0; i < src->nknobs; i++) {
        const dt_knob *k = &src->knobs[i];
        size_t n = (size_t)k->noptions * (size_t)k->parts;
        dst->knobs[i].options = malloc(n * sizeof *k->options);
        if (!dst->knobs[i].options) {
            dst->nknobs = i;
            dt_space_free(dst);
            return DT_ENOMEM;
        }
        memcpy(dst->knobs[i].options, k->options, n * sizeof *k->options);
    }
    return 0;
}

void dt_space_free(dt_space *space)
{
    if (!space)
        return;
    for (int i = 0; i < space->nknobs; i++) {
        free(space->knobs[i].options);
        space->knobs[i].options = NULL;
    }
    space->nknobs = 0;
}

/* ---- points ----------------------------------------------------------------- */

void dt_space_point(const dt_space *space, uint64_t index, dt_point *point)
{
    memset(point, 0, sizeof *point);
    for (int i = 0; i < space->nknobs; i++) {
        uint64_t n = (uint64_t)space->knobs[i].noptions;
        point->opt[i] = (int16_t)(index % n);
        index /= n;
    }
}

uint64_t dt_space_index(const dt_space *space, const dt_point *point)
{
    uint64_t index = 0;
    for (int i = space->nknobs - 1; i >= 0; i--)
        index = index * (uint64_t)space->knobs[i].noptions + (uint64_t)point->opt[i];
    return index;
}

bool dt_space_valid(const dt_space *space, const dt_point *point)
{
    for (int i = 0; i < space->nknobs; i++)
        if (point->opt[i] < 0 || point->opt[i] >= space->knobs[i].noptions)
            return false;
    return !space->tpl || !space->tpl->valid || space->tpl->valid(space, point);
}

int64_t dt_space_count_valid(const dt_space *space, uint64_t limit)
{
    if (space->size > limit)
        return -1;
    int64_t valid = 0;
    dt_point p;
    for (uint64_t i = 0; i < space->size; i++) {
        dt_space_point(space, i, &p);
        valid += dt_space_valid(space, &p);
    }
    return valid;
}

void dt_space_features(const dt_space *space, const dt_point *point, float *features)
{
    int f = 0;
    for (int i = 0; i < space->nknobs; i++) {
        const dt_knob *k = &space->knobs[i];
        if (k->type == DT_KNOB_SPLIT) {
            const int *row = k->options + (size_t)point->opt[i] * k->parts;
            for (int p = 0; p < k->parts; p++)
                features[f++] = (float)log2((double)row[p]);
        } else {
            features[f++] = (float)point->opt[i];
        }
    }
}

void dt_space_normalised(const dt_space *space, const dt_point *point, double *coords)
{
    for (int i = 0; i < space->nknobs; i++) {
        int n = space->knobs[i].noptions;
        coords[i] = n > 1 ? (double)point->opt[i] / (n - 1) : 0.0;
    }
}

void dt_space_canonical(const dt_space *space, dt_point *point)
{
    if (space->tpl && space->tpl->canonical)
        space->tpl->canonical(space, point);
}

bool dt_space_same_point(const dt_space *space, const dt_point *a, const dt_point *b)
{
    for (int i = 0; i < space->nknobs; i++)
        if (a->opt[i] != b->opt[i])
            return false;
    return true;
}

int dt_space_neighbours(const dt_space *space, const dt_point *point, dt_point *out)
{
    int count = 0;
    for (int i = 0; i < space->nknobs; i++) {
        for (int step = -1; step <= 1; step += 2) {
            int v = point->opt[i] + step;
            if (v < 0 || v >= space->knobs[i].noptions)
                continue;
            out[count] = *point;
            out[count].opt[i] = (int16_t)v;
            dt_space_canonical(space, &out[count]);
            if (!dt_space_valid(space, &out[count]) ||
                dt_space_same_point(space, &out[count], point))
                continue;
            bool again = false;
            for (int j = 0; j < count && !again; j++)
                again = dt_space_same_point(space, &out[j], &out[count]);
            count += !again;
        }
    }
    return count;
}

static void random_point(const dt_space *space, gsl_rng *rng, dt_point *point)
{
    memset(point, 0, sizeof *point);
    for (int i = 0; i < space->nknobs; i++)
        point->opt[i] = (int16_t)gsl_rng_uniform_int(rng, (unsigned long)space->knobs[i].noptions);
}

void dt_space_random(const dt_space *space, gsl_rng *rng, dt_point *point)
{
    for (int tries = 0; tries < 10000; tries++) {
        random_point(space, rng, point);
        dt_space_canonical(space, point);
        if (dt_space_valid(space, point))
            return;
    }
    random_point(space, rng, point);
}

/* strcmp(a, b) == 0 written inline: a code generator reads about a dozen
 * knobs by name for every point a space's validity is asked of (`dtune
 * models` counts the valid points of whole spaces, the tuner of a part), and
 * the names differ in their first bytes, where a library call costs more
 * than the compare. */
static bool same_name(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

int dt_space_knob(const dt_space *space, const char *name)
{
    for (int i = 0; i < space->nknobs; i++)
        if (same_name(space->knobs[i].name, name))
            return i;
    return -1;
}

int dt_space_get(const dt_space *space, const dt_point *point, const char *name, int part,
                 int fallback)
{
    int i = dt_space_knob(space, name);
    if (i < 0)
        return fallback;
    const dt_knob *k = &space->knobs[i];
    if (k->type == DT_KNOB_CHOICE)
        return k->options[point->opt[i]];
    if (part < 0 || part >= k->parts)
        return fallback;
    return k->options[(size_t)point->opt[i] * k->parts + part];
}

void dt_space_point_str(const dt_space *space, const dt_point *point, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < space->nknobs && used < len; i++) {
        const dt_knob *k = &space->knobs[i];
        int w = snprintf(buf + used, len - used, "%s%s=", i ? " " : "", k->name);
        used += w > 0 ? (size_t)w : 0;
        for (int p = 0; p < k->parts && used < len; p++) {
            int v = dt_space_get(space, point, k->name, p, 0);
            w = k->type == DT_KNOB_SPLIT
                    ? snprintf(buf + used, len - used, "%s%d%s", p ? "," : "[", v, p + 1 == k->parts ? "]" : "")
                    : snprintf(buf + used, len - used, "%d", v);
            used += w > 0 ? (size_t)w : 0;
        }
    }
}

/* The option of knob k whose value prints as text (up to a space or the end). */
static int option_named(const dt_knob *k, const char *text)
{
    size_t n = strcspn(text, " ");
    for (int o = 0; o < k->noptions; o++) {
        char v[128];
        size_t used = 0;
        v[0] = '\0';
        for (int p = 0; p < k->parts && used < sizeof v; p++) {
            int w = k->type == DT_KNOB_SPLIT
                        ? snprintf(v + used, sizeof v - used, "%s%d%s", p ? "," : "[",
                                   k->options[o * k->parts + p], p + 1 == k->parts ? "]" : "")
                        : snprintf(v + used, sizeof v - used, "%d", k->options[o * k->parts + p]);
            used += w > 0 ? (size_t)w : 0;
        }
        if (strlen(v) == n && strncmp(v, text, n) == 0)
            return o;
    }
    return -1;
}

bool dt_space_point_parse(const dt_space *space, const char *knobs, dt_point *point)
{
    memset(point, 0, sizeof *point);
    for (int i = 0; i < space->nknobs; i++) {
        const dt_knob *k = &space->knobs[i];
        size_t len = strlen(k->name);
        const char *at = knobs;
        while ((at = strstr(at, k->name)) && ((at > knobs && at[-1] != ' ') || at[len] != '='))
            at++;
        int o = at ? option_named(k, at + len + 1) : -1;
        if (o < 0)
            return false;
        point->opt[i] = (int16_t)o;
    }
    char here[512];
    dt_space_point_str(space, point, here, sizeof here);
    return strcmp(here, knobs) == 0;
}

bool dt_space_point_named(const dt_space *space, uint64_t config, const char *knobs, dt_point *point)
{
    char here[256];
    if (config >= space->size)
        return false;
    dt_space_point(space, config, point);
    dt_space_point_str(space, point, here, sizeof here);
    return !knobs[0] || strcmp(here, knobs) == 0;
}
