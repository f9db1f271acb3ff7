/* scratch.c — the harnesses' scratch files: the readers take paths, so each
 * input is written to one file per harness and process first. */
#include "fuzz.h"

#include <stdio.h>
#include <unistd.h>

int dt_fuzz_scratch(const char *name, const uint8_t *data, size_t size, char *path, size_t len)
{
    snprintf(path, len, "/tmp/dtune-fuzz-%d-%s", (int)getpid(), name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t written = fwrite(data, 1, size, f);
    return fclose(f) == 0 && written == size ? 0 : -1;
}
