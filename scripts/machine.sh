# machine.sh — sourced by the study scripts (from the repository root, with
# bin/dtune built): sets $machine to this machine's fingerprint, the text the
# tuning database keys its records by (src/machine.c, `dtune db machine`):
# the CPU named precisely enough that two CPUs sold under one name differ
# (the name alone, "AMD EPYC", was the same on a Zen 5 with AVX-512 and a
# Zen 4 whose hypervisor hides AVX-512): model name, family, model,
# stepping, SIMD flags, cores.
machine=$(bin/dtune db machine)
