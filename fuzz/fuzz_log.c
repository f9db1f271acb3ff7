/* fuzz_log.c — a tuning.jsonl through the log reader, every record visited. */
#include "fuzz.h"

#include <string.h>

#include "dtune/tunelog.h"

static int seen_run(void *ctx, const dt_run_record *r)
{
    *(size_t *)ctx += strlen(r->model);
    return 0;
}

static int seen_measure(void *ctx, const dt_measure_record *r)
{
    *(size_t *)ctx += strlen(r->task) + strlen(r->knobs) + (size_t)(r->m.gflops > 0);
    return 0;
}

static int seen_slot(void *ctx, const dt_slot_record *r)
{
    *(size_t *)ctx += (size_t)(r->slot > 0);
    return 0;
}

static int seen_failed(void *ctx, const dt_failed_record *r)
{
    *(size_t *)ctx += strlen(r->reason);
    return 0;
}

static int seen_retime(void *ctx, const dt_retime_record *r)
{
    *(size_t *)ctx += (size_t)(r->round > 0);
    return 0;
}

static int seen_confirm(void *ctx, const dt_confirm_record *r)
{
    *(size_t *)ctx += (size_t)(r->round > 0);
    return 0;
}

static int seen_confirmed(void *ctx, const dt_confirmed_record *r)
{
    *(size_t *)ctx += (size_t)(r->accepted != 0);
    return 0;
}

static int seen_drift(void *ctx, const dt_drift_record *r)
{
    *(size_t *)ctx += (size_t)(r->slot >= 0);
    return 0;
}

int dt_fuzz_log(const uint8_t *data, size_t size)
{
    char path[128];
    if (dt_fuzz_scratch("tuning.jsonl", data, size, path, sizeof path) != 0)
        return 0;
    size_t touched = 0;
    dt_tunelog_visitor visitor = { seen_run, seen_measure, seen_slot, &touched, seen_failed,
                                   seen_retime, seen_confirm, seen_confirmed, seen_drift };
    dt_tunelog_stats stats;
    dt_error err;
    dt_tunelog_replay(path, &visitor, &stats, &err);
    return 0;
}

DT_FUZZ_TARGET(dt_fuzz_log)
