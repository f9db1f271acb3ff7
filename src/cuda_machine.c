/* cuda_machine.c — the CUDA target's machine in the target table: its
 * fingerprint (machine.h), the driver's report of the device measured on,
 * its kind (name, compute capability, driver) and not its ordinal, so two
 * identical devices agree; and the device a cluster worker measures on.
 */
#include "cuda_backend.h"

#include <stdio.h>

#include "dtune/measure.h"

int dt_cuda_machine_worker_device(int node_rank, bool rank0_on_node)
{
    const dt_cuda_driver *cu;
    dt_cu_device dev;
    int count = 0;
    dt_error why;
    (void)dt_cuda_api_device_open(0, &cu, &dev, &count, &why);
    return dt_cuda_api_worker_device(node_rank, rank0_on_node, count, -1);
}

int dt_cuda_machine_fingerprint(int device, char *buf, size_t len, dt_error *err)
{
    dt_cuda_device_info info;
    int rc = dt_cuda_api_device_probe(device, &info, err);
    if (rc)
        return rc;
    snprintf(buf, len, "%s, cc %d.%d, driver %d", info.name, info.cc / 10, info.cc % 10,
             info.driver_version);
    return 0;
}

void dt_cuda_machine_conditions(const dt_measure_params *measure, char *buf, size_t len)
{
    snprintf(buf, len, "L2 %s", measure->flush_l2 ? "flushed" : "kept");
}
