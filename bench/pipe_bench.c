/* pipe_bench.c — which 512-bit shuffles share issue pipes with FMAs on
 * this CPU.
 *
 * A stride-2 depthwise kernel in the plane form (cpu_codegen.h) picks every
 * tap with one vpermt2ps and multiplies it in with one FMA. Whether the
 * shuffles cost FMA slots decides how close such a kernel can come to a
 * bound that counts FMAs alone, and which shuffle a kernel should split a
 * row into even and odd columns with. This bench times 144 instructions a
 * loop iteration in 12 independent register chains (so latency never
 * limits) of FMAs alone, then of each shuffle (vpermt2ps, vshufps, vpermps,
 * valignd) alone and alternating with FMAs. If the mix runs at about the
 * FMAs' time per instruction, the shuffle takes FMA slots (a tap then costs
 * two slots where the bound counts one); if it runs near half of it, the
 * two issue side by side.
 *
 * Usage: bin/pipe_bench [ITERATIONS]   (default 10^7: 1.44e9 instructions
 * a kind; under a second on a 2 GHz core). Medians of 5 repeats. On a CPU
 * without AVX-512F it says so and exits 0. Never beside a timing job.
 */
#include <stdbool.h>
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
/* Twelve instructions, one a chain: OP (its sources and a comma, e.g.
 * "vpermt2ps %%zmm20, %%zmm21,") into zmm1-zmm12; zmm20 and zmm21 are read,
 * never written. */
#define OPS12(OP)                                                                         \
    OP " %%zmm1\n" OP " %%zmm2\n" OP " %%zmm3\n" OP " %%zmm4\n" OP " %%zmm5\n"         \
    OP " %%zmm6\n" OP " %%zmm7\n" OP " %%zmm8\n" OP " %%zmm9\n" OP " %%zmm10\n"        \
    OP " %%zmm11\n" OP " %%zmm12\n"
#define FMA "vfmadd231ps %%zmm20, %%zmm21,"
/* OP and FMAs alternating, six of each, FMAs into zmm13-zmm18. */
#define MIXED12(OP)                                                                       \
    OP " %%zmm1\n" FMA " %%zmm13\n" OP " %%zmm2\n" FMA " %%zmm14\n"                     \
    OP " %%zmm3\n" FMA " %%zmm15\n" OP " %%zmm4\n" FMA " %%zmm16\n"                     \
    OP " %%zmm5\n" FMA " %%zmm17\n" OP " %%zmm6\n" FMA " %%zmm18\n"

/* The shuffles a stride-2 kernel could split a row into even and odd
 * columns with: the two-source permute (any lanes), the in-lane two-source
 * shuffle (evens of two vectors within each 128-bit lane), the one-source
 * permute, and the lane shift (valignd). */
#define PERMT2 "vpermt2ps %%zmm20, %%zmm21,"
#define SHUFPS "vshufps $0x88, %%zmm20, %%zmm21,"
#define PERMPS "vpermps %%zmm20, %%zmm21,"
#define ALIGND "valignd $1, %%zmm20, %%zmm21,"
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

#define NKINDS 5
static const char *const kind_names[NKINDS] = { "vfmadd231ps", "vpermt2ps", "vshufps",
                                                  "vpermps", "valignd" };

/* Median over REPEATS of nanoseconds an instruction: kind k alone (mixed
 * false) or alternating with FMAs (mixed true; kind 0, the FMAs, has no
 * mix). Built for AVX-512F whatever the build's flags (the registers it
 * clobbers exist only there); called only where the CPU has it. */
__attribute__((target("avx512f"))) static double ns_per_instruction(int kind, bool mixed,
                                                                   long iters)
{
    double t[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        double t0 = dt_now_seconds();
        switch (kind * 2 + mixed) {
        case 0: LOOP(OPS12(FMA), iters); break;
        case 2: LOOP(OPS12(PERMT2), iters); break;
        case 3: LOOP(MIXED12(PERMT2), iters); break;
        case 4: LOOP(OPS12(SHUFPS), iters); break;
        case 5: LOOP(MIXED12(SHUFPS), iters); break;
        case 6: LOOP(OPS12(PERMPS), iters); break;
        case 7: LOOP(MIXED12(PERMPS), iters); break;
        case 8: LOOP(OPS12(ALIGND), iters); break;
        case 9: LOOP(MIXED12(ALIGND), iters); break;
        default: return 0;
        }
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
    double fma = ns_per_instruction(0, false, iters);
    printf("ns per instruction, %d chains, median of %d; alternating: with FMAs, six of each\n",
           CHAINS, REPEATS);
    printf("%-12s %8s %12s %14s\n", "instruction", "alone", "alternating", "alt / FMAs");
    printf("%-12s %8.4f %12s %14s\n", kind_names[0], fma, "-", "-");
    for (int k = 1; k < NKINDS; k++) {
        double alone = ns_per_instruction(k, false, iters), mixed = ns_per_instruction(k, true, iters);
        printf("%-12s %8.4f %12.4f %14.2f\n", kind_names[k], alone, mixed, mixed / fma);
    }
    printf("alt / FMAs: 1.00 where the instruction takes FMA slots, 0.50 where it issues beside "
           "the FMAs\n");
#else
    printf("not x86-64: nothing to time\n");
#endif
    return 0;
}
