/* daemon_db.c — a run and the tuning database (db.h).
 *
 * At set-up (dt_run_db_open, after the run's own log is open) the run finds
 * the database's records of this machine and measurement conditions
 * (dt_machine_key: threads, cold weights), target and knob schema:
 *   - a task of this model (same signature) gets its DT_DB_REMEASURE best
 *     configs as its tuner's first candidates — measured again, since
 *     machines drift — and every other record as history (visited, cost
 *     model rows), as a resume would feed it;
 *   - with tuner.transfer, the records of the kind, of any task, go to the
 *     run's transfer store, so tasks of the same kind start from them: per
 *     task signature its best DT_TRANSFER_ROWS_PER_TASK by GFLOPS (the rows
 *     a prior takes of one task, transfer.h; a record past them would be
 *     kept and never used), so a database of many runs costs the store no
 *     more than one long run of each shape.
 * Each record is checked against its space (index inside it, knobs as the
 * index names them) before it is used. None of this counts as the run's own
 * trials: a task's best in this run is what this run measured.
 *
 * A new log's run record carries that key (the machine's fingerprint and
 * the conditions), a random run id
 * and the dtune version (dt_run_db_stamp), so an import of the log later
 * keys its records as the live run did. Each measurement the run logs is
 * then added (dt_run_db_add), and each change of a task's best, in config
 * or figure, is written as the run's best of it (dt_run_db_best), so the
 * database's best is what the run decided, confirmed figures included. The JSONL
 * log stays the durable record: any database failure is reported once, the
 * database is dropped for the rest of the run, and the run goes on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/random.h>
#include <unistd.h>

#include "daemon_internal.h"
#include "dtune/backend.h"
#include "dtune/db.h"
#include "dtune/machine.h"
#include "dtune/target.h"
#include "dtune/util.h"
#include "dtune/version.h"

struct dt_run_db {
    dt_db *db;
    char path[DT_PATH_MAX];
    char machine[DT_MACHINE_MAX];
    int64_t run_id;
};

/* Reports a database failure once and drops the database. */
static void give_up(dt_run *r, const char *path, const dt_error *err)
{
    fprintf(stderr, "dtune: tuning database %s: %s; the run goes on without it "
            "(tuning.jsonl keeps every measurement)\n", path, err->msg);
    if (r->db)
        dt_db_free(r->db->db);
    free(r->db);
    r->db = NULL;
}

/* ---- the run's key ------------------------------------------------------------ */

static int first_run_record(void *ctx, const dt_run_record *rec)
{
    *(dt_run_record *)ctx = *rec;
    return 1;   /* the first record is enough */
}

static int run_key(dt_run *r, dt_db_run *key, dt_error *err)
{
    char path[DT_PATH_MAX + 32];
    dt_run_record rec;
    memset(&rec, 0, sizeof rec);
    snprintf(path, sizeof path, "%s/tuning.jsonl", r->run_dir);
    dt_tunelog_visitor v = { .run = first_run_record, .ctx = &rec };
    dt_error ignored;
    dt_tunelog_replay(path, &v, NULL, &ignored);
    if (!rec.started[0])
        return dt_error_set(err, DT_EINVAL, "%s starts with no run record", path);
    memset(key, 0, sizeof *key);
    snprintf(key->machine, sizeof key->machine, "%s", r->db->machine);
    snprintf(key->target, sizeof key->target, "%s", rec.target);
    snprintf(key->model, sizeof key->model, "%s", rec.model);
    key->seed = rec.seed;
    snprintf(key->started, sizeof key->started, "%s", rec.started);
    snprintf(key->id, sizeof key->id, "%s", rec.id);
    return 0;
}

/* ---- lookup ------------------------------------------------------------------------ */

typedef struct lookup {
    dt_run *run;
    const dt_space *kind;      /* a space of the kind looked up (its vector width) */
    char signature[DT_DB_SIGNATURE_MAX];   /* the group being read */
    int task;                  /* the model's task of that signature, -1 none */
    dt_space other;            /* its space when no task of the model has it */
    bool other_ok;
    int nseeds;
    dt_point seeds[DT_DB_REMEASURE];
    int group_records;         /* of the task being read that it took */
    int group_transferred;     /* of the signature being read, to the transfer store */
    int tasks, history, transferred, foreign;
} lookup;

static int task_of_signature(const dt_run *r, const char *signature, const char *hash)
{
    char sig[DT_DB_SIGNATURE_MAX], h[24];
    for (int k = 0; k < r->model->ntasks; k++) {
        dt_db_task_signature(&r->model->tasks[k], sig, sizeof sig);
        dt_db_space_hash(&r->tasks[k].space, h, sizeof h);
        if (strcmp(sig, signature) == 0 && strcmp(h, hash) == 0)
            return k;
    }
    return -1;
}

static void end_group(lookup *lk)
{
    lk->tasks += lk->task >= 0 && lk->group_records > 0;
    lk->group_records = 0;
    lk->group_transferred = 0;
    if (lk->task >= 0 && lk->nseeds > 0)
        dt_tuner_seed(lk->run->tasks[lk->task].tuner, lk->seeds, lk->nseeds);
    if (lk->other_ok)
        dt_space_free(&lk->other);
    lk->other_ok = false;
    lk->task = -1;
    lk->nseeds = 0;
}

static void start_group(lookup *lk, const char *signature)
{
    char hash[24];
    end_group(lk);
    snprintf(lk->signature, sizeof lk->signature, "%s", signature);
    dt_db_space_hash(lk->kind, hash, sizeof hash);
    lk->task = task_of_signature(lk->run, signature, hash);
    if (lk->task >= 0 || !lk->run->transfer)
        return;
    dt_task task;
    dt_space_opts opts = { .cpu_max_vec = lk->kind->cpu_max_vec };
    char other_hash[24];
    if (dt_db_task_parse(signature, &task, NULL) != 0 ||
        dt_target_space_init_opts(&lk->other, &task, lk->kind->target, &opts, NULL) != 0)
        return;
    lk->other_ok = true;
    dt_db_space_hash(&lk->other, other_hash, sizeof other_hash);
    if (strcmp(other_hash, hash) != 0)
        end_group(lk);
}

static bool seeded(const lookup *lk, const dt_point *p)
{
    for (int i = 0; i < lk->nseeds; i++)
        if (memcmp(&lk->seeds[i], p, sizeof *p) == 0)
            return true;
    return false;
}

static int take_record(void *ctx, const dt_db_record *rec)
{
    lookup *lk = ctx;
    dt_run *r = lk->run;
    if (strcmp(rec->signature, lk->signature) != 0)
        start_group(lk, rec->signature);
    const dt_space *space = lk->task >= 0 ? &r->tasks[lk->task].space : lk->other_ok ? &lk->other : NULL;
    dt_point p;
    bool known = (int)rec->m.result >= 0 && rec->m.result < DT_RESULT_COUNT;
    if (!space || !known || !dt_space_point_named(space, rec->config, rec->knobs, &p)) {
        lk->foreign += space != NULL;
        return 0;
    }
    /* dt_db_each gives a signature's records best first: the cap keeps the best */
    bool transfer = r->transfer && lk->group_transferred < DT_TRANSFER_ROWS_PER_TASK;
    if (transfer && dt_transfer_add(r->transfer, space, &p, &rec->m) != 0)
        return DT_ENOMEM;
    lk->group_transferred += transfer;
    lk->transferred += transfer && lk->task < 0;
    if (lk->task < 0 || seeded(lk, &p))
        return 0;
    lk->group_records++;
    bool ok = rec->m.result == DT_RESULT_OK && isfinite(rec->m.gflops) && rec->m.gflops > 0;
    if (ok && lk->nseeds < DT_DB_REMEASURE) {
        lk->seeds[lk->nseeds++] = p;
        return 0;
    }
    lk->history++;
    return dt_tuner_add_record(r->tasks[lk->task].tuner, &p, &rec->m) == 0 ? 0 : DT_ENOMEM;
}

/* Feeds every record of each distinct space kind of the model. */
static int look_up(dt_run *r, dt_error *err)
{
    lookup lk = { .run = r, .task = -1 };
    const char *target = dt_target_name(r->cfg->target);
    for (int k = 0; k < r->model->ntasks; k++) {
        char hash[24], earlier[24];
        bool done = false;
        dt_db_space_hash(&r->tasks[k].space, hash, sizeof hash);
        for (int j = 0; j < k && !done; j++) {
            dt_db_space_hash(&r->tasks[j].space, earlier, sizeof earlier);
            done = strcmp(hash, earlier) == 0;
        }
        if (done)
            continue;
        lk.kind = &r->tasks[k].space;
        lk.signature[0] = '\0';
        int rc = dt_db_each(r->db->db, r->db->machine, target, hash, take_record, &lk, err);
        end_group(&lk);
        if (rc)
            return rc == DT_ENOMEM ? dt_error_set(err, rc, "out of memory reading records") : rc;
    }
    if (lk.tasks + lk.transferred + lk.foreign > 0)
        fprintf(stderr, "dtune: tuning database %s: %d tasks start from earlier records (best %d "
                "re-measured first, %d as history), %d records of other tasks for transfer%s, "
                "%d that do not fit this space skipped\n", r->db->path, lk.tasks, DT_DB_REMEASURE,
                lk.history, lk.transferred, r->transfer ? "" : " (tuner.transfer is off)", lk.foreign);
    return 0;
}

/* ---- hooks --------------------------------------------------------------------------- */

/* The key of the run's figures (dt_machine_key): the machine it measures
 * on, its workers' where a remote says so, else this process's, with the
 * run's measurement conditions. */
static int run_machine(const dt_run *r, char *buf, size_t len, dt_error *err)
{
    const char *backend = dt_backend_choose(r->cfg->target, r->cfg->backend)->name;
    if (r->remote && r->remote->machine)
        return dt_machine_key(r->remote->machine, backend, &r->cfg->measure, buf, len, err);
    return dt_machine_local_key(backend, r->cfg->seed, &r->cfg->measure, buf, len, err);
}

void dt_run_db_stamp(const dt_run *r, dt_run_record *run)
{
    if (run_machine(r, run->machine, sizeof run->machine, NULL) != 0)
        run->machine[0] = '\0';
    snprintf(run->dtune_version, sizeof run->dtune_version, "%s", DT_VERSION);
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, 0) != sizeof id)
        id = (uint64_t)getpid() << 32 ^ (uint64_t)dt_now_seconds();
    snprintf(run->id, sizeof run->id, "%016llx", (unsigned long long)id);
}


void dt_run_db_open(dt_run *r)
{
    dt_error err = { 0 };
    char path[DT_PATH_MAX];
    if (dt_db_resolve_path(&r->cfg->db, path, sizeof path, &err) != 0) {
        give_up(r, r->cfg->db.path, &err);
        return;
    }
    if (!path[0])
        return;
    r->db = calloc(1, sizeof *r->db);
    if (!r->db) {
        dt_error_set(&err, DT_ENOMEM, "out of memory");
        give_up(r, path, &err);
        return;
    }
    snprintf(r->db->path, sizeof r->db->path, "%s", path);
    dt_db_run key;
    int rc = run_machine(r, r->db->machine, sizeof r->db->machine, &err);
    if (rc == 0)
        rc = dt_db_open(path, &r->db->db, &err);
    if (rc == 0)
        rc = run_key(r, &key, &err);
    if (rc == 0)
        rc = dt_db_run_id(r->db->db, &key, &r->db->run_id, &err);
    if (rc == 0)
        rc = look_up(r, &err);
    if (rc)
        give_up(r, path, &err);
}

void dt_run_db_add(dt_run *r, int k, const dt_measure_record *rec)
{
    dt_error err = { 0 };
    if (r->db && dt_db_add(r->db->db, r->db->run_id, &r->tasks[k].space, rec, &err) != 0)
        give_up(r, r->db->path, &err);
}

void dt_run_db_best(dt_run *r, int k)
{
    const dt_run_task *tr = &r->tasks[k];
    dt_error err = { 0 };
    if (!r->db || !(tr->best_gflops > 0) || tr->best_index >= tr->space.size)
        return;
    if (dt_db_set_best(r->db->db, r->db->run_id, &tr->space, tr->best_index, NULL, tr->best_gflops,
                       &err) != 0)
        give_up(r, r->db->path, &err);
}

void dt_run_db_close(dt_run *r)
{
    if (r->db)
        dt_db_free(r->db->db);
    free(r->db);
    r->db = NULL;
}
