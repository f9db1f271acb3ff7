/* pipe_bench.c — whether 512-bit two-source permutes and FMAs share issue
 * pipes on this CPU.
 *
 * A stride-2 depthwise kernel in the plane form (codegen_cpu.h) picks every
 * tap with one vpermt2ps and multiplies it in with one FMA. Whether the
 * permutes cost FMA slots decides how close such a kernel can come to a
 * bound that counts FMAs alone. This bench times 144 instructions a loop
 * iteration in 12 independent register chains (so latency never limits)
 * of: vpermt2ps alone, vfmadd231ps alone, and the two alternating. If both
 * alone and the mix all run at about the same time per instruction, the
 * two kinds share their pipes (a tap then costs two slots where the bound
 * counts one); if the mix runs near half the time per instruction, they
 * issue side by side.
 *
 * Usage: bin/pipe_bench [ITERATIONS]   (default 10^7: 1.44e9 instructions
 * a kind; under a second on a 2 GHz core). Medians of 5 repeats. On a CPU
 * without AVX-512F it says so and exits 0. Never beside a timing job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtune/machine.h"
#include "dtune/util.h"
#include "rank_stats.h"

#define CHAINS 12
#define UNROLL 12
#define REPEATS 5

#if defined(__x86_64__)
/* Twelve instructions, one a chain; zmm20 and zmm21 are read, never written. */
#define PERMS12                                                                           \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm1\n vpermt2ps %%zmm20, %%zmm21, %%zmm2\n"           \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm3\n vpermt2ps %%zmm20, %%zmm21, %%zmm4\n"           \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm5\n vpermt2ps %%zmm20, %%zmm21, %%zmm6\n"           \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm7\n vpermt2ps %%zmm20, %%zmm21, %%zmm8\n"           \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm9\n vpermt2ps %%zmm20, %%zmm21, %%zmm10\n"          \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm11\n vpermt2ps %%zmm20, %%zmm21, %%zmm12\n"
#define FMAS12                                                                            \
    "vfmadd231ps %%zmm20, %%zmm21, %%zmm1\n vfmadd231ps %%zmm20, %%zmm21, %%zmm2\n"       \
    "vfmadd231ps %%zmm20, %%zmm21, %%zmm3\n vfmadd231ps %%zmm20, %%zmm21, %%zmm4\n"       \
    "vfmadd231ps %%zmm20, %%zmm21, %%zmm5\n vfmadd231ps %%zmm20, %%zmm21, %%zmm6\n"       \
    "vfmadd231ps %%zmm20, %%zmm21, %%zmm7\n vfmadd231ps %%zmm20, %%zmm21, %%zmm8\n"       \
    "vfmadd231ps %%zmm20, %%zmm21, %%zmm9\n vfmadd231ps %%zmm20, %%zmm21, %%zmm10\n"      \
    "vfmadd231ps %%zmm20, %%zmm21, %%zmm11\n vfmadd231ps %%zmm20, %%zmm21, %%zmm12\n"
#define MIXED12                                                                           \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm1\n vfmadd231ps %%zmm20, %%zmm21, %%zmm13\n"        \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm2\n vfmadd231ps %%zmm20, %%zmm21, %%zmm14\n"        \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm3\n vfmadd231ps %%zmm20, %%zmm21, %%zmm15\n"        \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm4\n vfmadd231ps %%zmm20, %%zmm21, %%zmm16\n"        \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm5\n vfmadd231ps %%zmm20, %%zmm21, %%zmm17\n"        \
    "vpermt2ps %%zmm20, %%zmm21, %%zmm6\n vfmadd231ps %%zmm20, %%zmm21, %%zmm18\n"

#define CLOBBERS                                                                          \
    "rcx", "memory", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",     \
        "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17",  \
        "xmm18", "xmm20", "xmm21"

/* The registers start as zeros (a permute index of 0, FMAs of 0 x 0), so
 * no denormal or NaN slows a chain down. */
#define LOOP(body, iters)                                                                 \
    __asm__ volatile("vpxord %%zmm20, %%zmm20, %%zmm20\n vpxord %%zmm21, %%zmm21, %%zmm21\n" \
                     "mov %0, %%rcx\n"                                                    \
                     "1:\n"                                                               \
                     ".rept 12\n" body ".endr\n"                                          \
                     "dec %%rcx\n jnz 1b\n"                                               \
                     :                                                                    \
                     : "r"(iters)                                                         \
                     : CLOBBERS)

/* Median over REPEATS of nanoseconds an instruction of kind 0 (permutes),
 * 1 (FMAs) or 2 (alternating). Built for AVX-512F whatever the build's
 * flags (the registers it clobbers exist only there); called only where
 * the CPU has it. */
__attribute__((target("avx512f"))) static double ns_per_instruction(int kind, long iters)
{
    double t[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        double t0 = dt_now_seconds();
        if (kind == 0)
            LOOP(PERMS12, iters);
        else if (kind == 1)
            LOOP(FMAS12, iters);
        else
            LOOP(MIXED12, iters);
        t[r] = (dt_now_seconds() - t0) / ((double)iters * CHAINS * UNROLL) * 1e9;
    }
    return median_sorting(t, REPEATS);
}
#endif

int main(int argc, char **argv)
{
    long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 10000000L;
    if (iters < 1 || argc > 2) {
        fprintf(stderr, "usage: pipe_bench [ITERATIONS]\n");
        return 2;
    }
    char machine[DT_MACHINE_MAX];
    if (dt_machine_fingerprint("cpu", 0, 0, machine, sizeof machine, NULL) != 0)
        snprintf(machine, sizeof machine, "(unknown)");
    printf("pipe_bench: %s\n", machine);
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) {
        printf("no AVX-512F: nothing to time\n");
        return 0;
    }
    double perm = ns_per_instruction(0, iters), fma = ns_per_instruction(1, iters),
           mixed = ns_per_instruction(2, iters);
    printf("ns per instruction, %d chains, median of %d: vpermt2ps %.4f  vfmadd231ps %.4f  "
           "alternating %.4f\n", CHAINS, REPEATS, perm, fma, mixed);
    printf("alternating / FMAs alone: %.2f (1.00: permutes take FMA slots; 0.50: they issue "
           "beside the FMAs)\n", mixed / fma);
#else
    printf("not x86-64: nothing to time\n");
#endif
    return 0;
}
