# machine.sh — sourced by the study scripts (from the repository root, with
# bin/dtune built): sets $machine to this machine's fingerprint, the text the
# tuning database keys its records by (src/machine.c, `dtune db machine`):
# the CPU named precisely enough that two CPUs sold under one name differ
# (the name alone, "AMD EPYC", was the same on a Zen 5 with AVX-512 and a
# Zen 4 whose hypervisor hides AVX-512): model name, family, model,
# stepping, SIMD flags, cores.
machine=$(bin/dtune db machine)

# claim_outdir DIR: DIR holds one machine's runs only. Creates DIR and
# records $machine in DIR/machine.txt; exits 1 when DIR already holds
# another machine's runs (a set of runs never mixes machines).
claim_outdir() {
    mkdir -p "$1"
    if [ -f "$1/machine.txt" ] && [ "$(cat "$1/machine.txt")" != "$machine" ]; then
        echo "$0: $1 holds runs of '$(cat "$1/machine.txt")', this is '$machine'; use another OUTDIR" >&2
        exit 1
    fi
    echo "$machine" > "$1/machine.txt"
}
