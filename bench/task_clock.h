/* task_clock.h — each task's own tuning seconds in a tuning log, for the
 * bench tools that read logs (trace_convert, db_bench).
 *
 * A log's "time" is the run's elapsed budget, every task together. A task's
 * own seconds at one of its measurements are the time of that record minus
 * the time its current stretch of tuning began (the previous timed record
 * of the log, usually the slot record before it), added to the seconds of
 * its earlier stretches (warm-up, a slot cut by an interruption and
 * resumed). Feed every measure record (task_clock_measure) and every slot
 * record (task_clock_slot) in log order.
 */
#ifndef DTUNE_BENCH_TASK_CLOCK_H
#define DTUNE_BENCH_TASK_CLOCK_H

typedef struct task_clock {
    double done_seconds;       /* seconds of earlier stretches */
    double stretch_start;      /* run time the current stretch began; < 0: none open */
} task_clock;

typedef struct log_clock {
    task_clock *tasks;         /* one per task of the model, the caller's */
    double last_time;          /* time of the previous timed record */
    int last_task;             /* task of the previous record; -1 after a slot record */
} log_clock;

/* Starts the clock of ntasks tasks (tasks[] filled here). */
static inline void log_clock_init(log_clock *c, task_clock *tasks, int ntasks)
{
    c->tasks = tasks;
    c->last_time = 0;
    c->last_task = -1;
    for (int k = 0; k < ntasks; k++)
        tasks[k] = (task_clock){ .done_seconds = 0, .stretch_start = -1 };
}

static inline void log_clock_close_stretch(log_clock *c)
{
    if (c->last_task < 0)
        return;
    task_clock *t = &c->tasks[c->last_task];
    t->done_seconds += c->last_time - t->stretch_start;
    t->stretch_start = -1;
}

/* A measure record of task k at run time `time`: its own seconds. */
static inline double task_clock_measure(log_clock *c, int k, double time)
{
    if (k != c->last_task) {
        log_clock_close_stretch(c);
        c->tasks[k].stretch_start = c->last_time;
    }
    double seconds = c->tasks[k].done_seconds + (time - c->tasks[k].stretch_start);
    c->last_time = time;
    c->last_task = k;
    return seconds;
}

/* A slot record at run time `time`. */
static inline void task_clock_slot(log_clock *c, double time)
{
    log_clock_close_stretch(c);
    c->last_time = time;
    c->last_task = -1;
}

#endif
