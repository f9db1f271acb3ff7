/* tuner_random.c — the `random` strategy: uniformly random unmeasured valid
 * configs. The baseline every model-based strategy must beat. */
#include "tuner_impl.h"

static int random_create(dt_tuner *t, void **state, dt_error *err)
{
    *state = NULL;
    return 0;
}

static int random_propose(void *state, dt_tuner *t, int max, dt_point *out, int *n, dt_error *err)
{
    *n = dt_tuner_random_points(t, max, out);
    return 0;
}

static void random_destroy(void *state)
{
}

const dt_tuner_strategy_i dt_tuner_random = {
    .name = "random",
    .uses_model = false,
    .create = random_create,
    .propose = random_propose,
    .destroy = random_destroy,
};
