# machine.sh — sourced by the study scripts: sets $machine to this CPU named
# precisely enough that two CPUs sold under one name differ (the name alone,
# "AMD EPYC", was the same on a Zen 5 with AVX-512 and a Zen 4 whose
# hypervisor hides AVX-512): model name, family, model, stepping, SIMD
# flags, cores.
cpu_field() { grep -m1 "^$1[[:space:]]*:" /proc/cpuinfo | sed 's/^[^:]*: *//'; }
simd=$(cpu_field flags | tr ' ' '\n' | grep -E '^(avx512f|avx2|fma|neon|asimd)$' | sort | tr '\n' ' ' | sed 's/ $//')
machine="$(cpu_field 'model name'), family $(cpu_field 'cpu family') model $(cpu_field model) stepping $(cpu_field stepping), ${simd:-no avx}, nproc $(nproc)"
