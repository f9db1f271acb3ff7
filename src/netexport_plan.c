/* netexport_plan.c — the plan of a network export (netexport_internal.h):
 * where each tensor's floats live, which tensors are views of others (a
 * concat's inputs written in place, a flatten's output), each tensor's
 * lifetime over the node order and the arena offsets a greedy interval
 * allocation gives them, and each kernel node's choice and workspace.
 */
#include "netexport_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_codegen.h"
#include "dtune/target.h"

void netexport_plan_free(netexport_plan *p)
{
    free(p->producer);
    free(p->last_use);
    free(p->alias);
    free(p->alias_at);
    free(p->first);
    free(p->last);
    free(p->arena_at);
    free(p->choice);
    free(p->slot);
}

static bool runs_kernel(const dt_graph_node *node)
{
    return node->op == DT_GRAPH_CONV || node->op == DT_GRAPH_DENSE;
}

/* The tensor whose floats hold t's, and where t starts in them. */
int netexport_root(const netexport_plan *p, int t, size_t *at)
{
    *at = 0;
    while (p->alias[t] != t) {
        *at += p->alias_at[t];
        t = p->alias[t];
    }
    return t;
}

static bool is_activation(const netexport_plan *p, int t)
{
    return t != p->g->input && !p->g->tensors[t].constant && p->producer[t] >= 0;
}

/* Whether input k of concat node is its only use there and may be written
 * straight into the concat's output: batch 1 (a channel slice is then
 * contiguous), a node's output, not the graph's, not a view already. */
static bool concat_in_place(const netexport_plan *p, const dt_graph_node *node, int k)
{
    int x = node->inputs[k];
    if (p->g->tensors[node->output].dims[0] != 1 || !is_activation(p, x) || x == p->g->output ||
        p->alias[x] != x)
        return false;
    for (int j = 0; j < node->ninputs; j++)
        if (j != k && node->inputs[j] == x)
            return false;
    return true;
}

static void plan_views(netexport_plan *p)
{
    const dt_graph *g = p->g;
    for (int i = 0; i < g->nnodes; i++) {
        const dt_graph_node *node = &g->nodes[i];
        if (node->op == DT_GRAPH_FLATTEN && is_activation(p, node->inputs[0]) &&
            node->output != g->output) {
            p->alias[node->output] = node->inputs[0];
            continue;
        }
        if (node->op != DT_GRAPH_CONCAT)
            continue;
        size_t at = 0;
        for (int k = 0; k < node->ninputs; k++) {
            int x = node->inputs[k];
            if (concat_in_place(p, node, k)) {
                p->alias[x] = node->output;
                p->alias_at[x] = at;
            }
            at += dt_graph_tensor_elements(g, x);   /* batch 1: else never in place */
        }
    }
}

static void note_use(netexport_plan *p, int t, int node)
{
    if (t >= 0 && node > p->last_use[t])
        p->last_use[t] = node;
}

/* Producers, last uses, and each root's lifetime over its views'. */
static void plan_lifetimes(netexport_plan *p)
{
    const dt_graph *g = p->g;
    for (int i = 0; i < g->nnodes; i++) {
        p->producer[g->nodes[i].output] = i;
        p->last_use[g->nodes[i].output] = i;
    }
    for (int i = 0; i < g->nnodes; i++) {
        for (int k = 0; k < g->nodes[i].ninputs; k++)
            note_use(p, g->nodes[i].inputs[k], i);
        if (runs_kernel(&g->nodes[i]))
            note_use(p, g->nodes[i].epilogue.residual, i);
    }
    plan_views(p);
    for (int t = 0; t < g->ntensors; t++) {
        p->first[t] = INT_MAX;
        p->last[t] = -1;
    }
    for (int t = 0; t < g->ntensors; t++) {
        if (!is_activation(p, t))
            continue;
        size_t at;
        int r = netexport_root(p, t, &at);
        p->first[r] = p->producer[t] < p->first[r] ? p->producer[t] : p->first[r];
        p->last[r] = p->last_use[t] > p->last[r] ? p->last_use[t] : p->last[r];
    }
}

static bool in_arena(const netexport_plan *p, int t)
{
    return is_activation(p, t) && p->alias[t] == t && t != p->g->output;
}

static size_t arena_size(const netexport_plan *p, int t)
{
    return (dt_graph_tensor_elements(p->g, t) + 15) / 16 * 16;   /* 64-byte steps */
}

/* Whether tensor x goes before y: bigger first, then the earlier born. */
static bool before(const netexport_plan *p, int x, int y)
{
    size_t sx = arena_size(p, x), sy = arena_size(p, y);
    return sx != sy ? sx > sy : p->first[x] < p->first[y];
}

/* Greedy interval allocation: biggest tensor first, each at the lowest
 * offset that no placed tensor alive at the same time covers. */
static int plan_arena(netexport_plan *p, dt_error *err)
{
    const dt_graph *g = p->g;
    int *order = malloc((size_t)g->ntensors * sizeof *order), n = 0;
    if (!order)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    for (int t = 0; t < g->ntensors; t++)
        if (in_arena(p, t))
            order[n++] = t;
    for (int i = 1; i < n; i++)   /* insertion sort: a network has hundreds of tensors */
        for (int j = i; j > 0 && before(p, order[j], order[j - 1]); j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        int t = order[i];
        size_t at = 0, size = arena_size(p, t);
        for (bool moved = true; moved;) {
            moved = false;
            for (int j = 0; j < i; j++) {
                int u = order[j];
                bool together = p->first[u] <= p->last[t] && p->first[t] <= p->last[u];
                if (together && p->arena_at[u] < at + size && at < p->arena_at[u] + arena_size(p, u)) {
                    at = p->arena_at[u] + arena_size(p, u);
                    moved = true;
                }
            }
        }
        p->arena_at[t] = at;
        if (at + size > p->arena_floats)
            p->arena_floats = at + size;
    }
    free(order);
    return 0;
}

static bool same_geometry(const dt_task *a, const dt_task *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == DT_OP_DENSE || a->kind == DT_OP_BATCH_MATMUL)
        return a->mm.b == b->mm.b && a->mm.m == b->mm.m && a->mm.n == b->mm.n && a->mm.k == b->mm.k;
    const dt_conv_shape *x = &a->conv, *y = &b->conv;
    return x->n == y->n && x->c_in == y->c_in && x->h == y->h && x->w == y->w &&
           x->c_out == y->c_out && x->kh == y->kh && x->kw == y->kw && x->sh == y->sh &&
           x->sw == y->sw && x->ph == y->ph && x->pw == y->pw && x->dh == y->dh && x->dw == y->dw;
}

/* Whether choice c's kernel keeps packed weights in its workspace (then
 * each node of its task needs a workspace of its own). */
static int packs_weights(const netexport_plan *p, const dt_export_choice *c, bool *packs, dt_error *err)
{
    *packs = false;
    if (!c->tuned)
        return 0;   /* the reference loops keep nothing */
    dt_space space;
    dt_space_opts opts = { .cpu_max_vec = p->params->kernels.cpu_max_vec };
    int rc = dt_target_space_init_opts(&space, &c->task, p->params->kernels.target, &opts, err);
    if (rc)
        return rc;
    if (c->config >= space.size) {
        dt_space_free(&space);
        return dt_error_set(err, DT_EINVAL, "task %s: config %llu is outside its space", c->task.name,
                            (unsigned long long)c->config);
    }
    dt_point point;
    dt_space_point(&space, c->config, &point);
    dt_cpu_plan plan;
    dt_cpu_plan_from_point(&space, &point, p->params->kernels.measure.threads, &plan);
    dt_space_free(&space);
    *packs = plan.pack_weight != 0;
    return 0;
}

/* Each kernel node's choice and workspace slot. */
static int plan_kernels(netexport_plan *p, int n, dt_error *err)
{
    p->nslots = 1;
    for (int i = 0; i < p->g->nnodes; i++) {
        const dt_graph_node *node = &p->g->nodes[i];
        p->choice[i] = p->slot[i] = -1;
        if (!runs_kernel(node))
            continue;
        dt_task t = node->attr.kernel;
        dt_task_finish(&t, NULL);   /* dt_graph_ref_check passed it */
        for (int c = 0; c < n && p->choice[i] < 0; c++)
            if (same_geometry(&t, &p->choices[c].task))
                p->choice[i] = c;
        if (p->choice[i] < 0) {
            char shape[128];
            dt_task_shape_str(&t, shape, sizeof shape);
            return dt_error_set(err, DT_EINVAL, "node '%s' (%s %s): no task of the export has its "
                                "geometry", node->name, dt_op_kind_name(t.kind), shape);
        }
        bool packs;
        int rc = packs_weights(p, &p->choices[p->choice[i]], &packs, err);
        if (rc)
            return rc;
        p->slot[i] = packs ? p->nslots++ : 0;
        p->nkernels++;
    }
    return 0;
}

int netexport_plan_make(netexport_plan *p, const dt_netexport_params *params, const dt_graph *g,
                     const dt_export_choice *choices, int n, dt_error *err)
{
    memset(p, 0, sizeof *p);
    p->g = g;
    p->params = params;
    p->choices = choices;
    size_t nt = (size_t)g->ntensors, nn = (size_t)g->nnodes;
    p->producer = malloc(nt * sizeof *p->producer);
    p->last_use = malloc(nt * sizeof *p->last_use);
    p->alias = malloc(nt * sizeof *p->alias);
    p->alias_at = calloc(nt, sizeof *p->alias_at);
    p->first = malloc(nt * sizeof *p->first);
    p->last = malloc(nt * sizeof *p->last);
    p->arena_at = calloc(nt, sizeof *p->arena_at);
    p->choice = malloc(nn * sizeof *p->choice);
    p->slot = malloc(nn * sizeof *p->slot);
    if (!p->producer || !p->last_use || !p->alias || !p->alias_at || !p->first || !p->last ||
        !p->arena_at || !p->choice || !p->slot)
        return dt_error_set(err, DT_ENOMEM, "out of memory");
    for (size_t t = 0; t < nt; t++) {
        p->producer[t] = p->last_use[t] = -1;
        p->alias[t] = (int)t;
    }
    plan_lifetimes(p);
    int rc = plan_arena(p, err);
    return rc ? rc : plan_kernels(p, n, err);
}
