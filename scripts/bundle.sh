#!/bin/sh
# bundle.sh — bin/dtune (and any built bin/*_bench) with every shared library
# they need, in one folder that runs on a machine with no package registry,
# e.g. a lent GPU machine that has only the NVIDIA driver.
#
#   sh scripts/bundle.sh [--out DIR] [--no-nvrtc] [--benches "A B"] [--tests] [--tar]
#
#   DIR/bin/       dtune and every built bin/*_bench, or those --benches names
#                  (e.g. "cuda_bench": measure_bench alone brings oneDNN)
#   DIR/tests/     with --tests: the CUDA test binaries (build/tests/test_cuda,
#                  test_codegen_cuda), run from a checkout's root with
#                  LD_LIBRARY_PATH=DIR/lib (scripts/gpu_session.sh does)
#   DIR/lib/       every library ldd lists except the C runtime itself (libc,
#                  libm, libpthread, libdl, librt, ld-linux), plus libnvrtc and
#                  libnvrtc-builtins from $CUDA_HOME/lib64 (dlopen'ed at run
#                  time, so ldd does not list them) unless --no-nvrtc
#   DIR/plplot/    PLplot's SVG driver and data (the report's latency.svg)
#   DIR/models/, DIR/config.yaml
#   DIR/run.sh     run.sh [PROGRAM] ARGS...: sets LD_LIBRARY_PATH and the
#                  PLplot paths, then runs bin/PROGRAM (default dtune)
#
# libcuda.so.1 is never bundled: it belongs to the target's driver. cuDNN and
# cuBLAS (only cuda_bench uses them, through dlopen) are not bundled either;
# point $DTUNE_CUDNN / $DTUNE_CUBLAS at them on the target if the loader
# cannot find them. --tar also writes DIR.tar.xz (NVRTC alone is ~110 MB
# unpacked, ~32 MB packed). Exits non-zero if a bundled program would still
# miss a library.
set -eu

out=bundle
nvrtc=1
benches=
tests=0
tarball=0
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=$2; shift 2 ;;
        --no-nvrtc) nvrtc=0; shift ;;
        --benches) benches=$2; shift 2 ;;
        --tests) tests=1; shift ;;
        --tar) tarball=1; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "bundle.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
cuda_home=${CUDA_HOME:-/usr/local/cuda}

[ -x bin/dtune ] || { echo "bundle.sh: bin/dtune is not built (run make first)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/plplot"

programs="bin/dtune"
if [ -n "$benches" ]; then
    for b in $benches; do
        [ -x "bin/$b" ] || { echo "bundle.sh: bin/$b is not built (run make bench)" >&2; exit 1; }
        programs="$programs bin/$b"
    done
else
    for b in bin/*_bench; do
        [ -x "$b" ] && programs="$programs $b"
    done
fi
for p in $programs; do
    cp "$p" "$out/bin/"
done

# The C runtime comes with every Linux system and must match its kernel and
# loader: never bundle it.
is_system_lib() {
    case "$(basename "$1")" in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|linux-vdso*) return 0 ;;
    esac
    return 1
}

# Copies every library an ELF file needs (ldd resolves them transitively).
copy_needed() {
    ldd "$1" | awk '/=> \// { print $3 }' | while read -r lib; do
        if ! is_system_lib "$lib" && [ ! -e "$out/lib/$(basename "$lib")" ]; then
            cp -L "$lib" "$out/lib/"
        fi
    done
}

if [ "$tests" = 1 ]; then
    mkdir -p "$out/tests"
    for t in test_cuda test_codegen_cuda; do
        [ -x "build/tests/$t" ] || { echo "bundle.sh: build/tests/$t is not built (run make tests)" >&2; exit 1; }
        cp "build/tests/$t" "$out/tests/"
        programs="$programs build/tests/$t"
    done
fi

for p in $programs; do
    copy_needed "$p"
done

if [ "$nvrtc" = 1 ]; then
    found=0
    for lib in "$cuda_home"/lib64/libnvrtc.so.[0-9]* "$cuda_home"/lib64/libnvrtc-builtins.so.[0-9]*; do
        [ -e "$lib" ] || continue
        cp -L "$lib" "$out/lib/"
        found=1
    done
    [ "$found" = 1 ] || { echo "bundle.sh: no libnvrtc under $cuda_home/lib64 (set CUDA_HOME, or --no-nvrtc)" >&2; exit 1; }
    # dtune dlopens libnvrtc.so first: point it at the bundled major version.
    major=$(cd "$out/lib" && ls libnvrtc.so.[0-9]* | head -n 1)
    ln -sf "$major" "$out/lib/libnvrtc.so"
fi

# PLplot loads its output drivers at run time from a directory, and its
# colour maps and fonts from another.
drivers=$(ls -d /usr/lib/*/plplot*/drivers /usr/lib/plplot*/drivers 2>/dev/null | head -n 1 || true)
data=$(ls -d /usr/share/plplot* 2>/dev/null | head -n 1 || true)
if [ -n "$drivers" ]; then
    mkdir -p "$out/plplot/drivers"
    for d in svg null mem; do
        cp "$drivers/$d".* "$out/plplot/drivers/" 2>/dev/null || true
    done
    for so in "$out"/plplot/drivers/*.so; do
        [ -e "$so" ] && copy_needed "$so"
    done
fi
[ -n "$data" ] && cp -r "$data" "$out/plplot/data"

cp -r models "$out/models"
[ -f config.yaml ] && cp config.yaml "$out/config.yaml"

cat > "$out/run.sh" <<'EOF'
#!/bin/sh
# run.sh [PROGRAM] ARGS... — runs bin/PROGRAM (default: dtune) of this bundle
# with its own libraries first on the loader's path.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PLPLOT_DRV_DIR="$here/plplot/drivers"
export PLPLOT_LIB="$here/plplot/data"
program=dtune
if [ $# -gt 0 ] && [ -x "$here/bin/$1" ]; then
    program=$1
    shift
fi
exec "$here/bin/$program" "$@"
EOF
chmod +x "$out/run.sh"

# Every bundled program must resolve all its libraries from the bundle.
missing=0
for p in "$out"/bin/* "$out"/tests/*; do
    [ -f "$p" ] || continue
    if LD_LIBRARY_PATH="$out/lib" ldd "$p" | grep -q "not found"; then
        echo "bundle.sh: $p still misses:" >&2
        LD_LIBRARY_PATH="$out/lib" ldd "$p" | grep "not found" >&2
        missing=1
    fi
done
[ "$missing" = 0 ] || exit 1

if [ "$tarball" = 1 ]; then
    tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
    echo "bundle.sh: wrote $out.tar.xz ($(du -h "$out.tar.xz" | cut -f1))"
fi
echo "bundle.sh: wrote $out/ ($(du -sh "$out" | cut -f1)): $(ls "$out/bin" | tr '\n' ' ')"
