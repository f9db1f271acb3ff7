#!/bin/sh
# Installs, as root on Debian 12, whichever build and test dependencies of
# dtune are missing. Each package is checked with dpkg first, so a second run
# installs nothing and needs no network.
set -eu

# g++: the tests link an exported library from C++ (its headers' extern "C");
# prometheus: its promtool checks the status server's /metrics in the tests;
# chromium: the tests load the live page and report.html in a headless browser;
# openmpi-bin, libopenmpi-dev: one run over many ranks (`mpirun ... dtune tune`),
# optional at build time (the Makefile builds without them);
# protobuf-c-compiler, libprotobuf-c-dev, python3-onnx: `dtune import` reads
# ONNX with protobuf-c from the onnx.proto python3-onnx ships, and the tests
# write small ONNX files with it; python3-torch, python3-torchvision: the tests
# export torchvision's networks to ONNX and import them.
pkgs="gcc g++ make pkg-config libgsl-dev libyaml-dev libxgboost-dev libjansson-dev
libmicrohttpd-dev libcmocka-dev libplplot-dev libsqlite3-dev curl prometheus chromium
openmpi-bin libopenmpi-dev protobuf-c-compiler libprotobuf-c-dev python3-onnx python3-torch
python3-torchvision"
if [ "${1:-}" = "--bench" ]; then
    # wrk and jq: scripts/load_cv.sh loads the status server during a run;
    # python3-torch: bench/torch_bench, PyTorch's paths against dtune's kernels.
    pkgs="$pkgs libdnnl-dev libopenblas-dev python3-emcee python3-numpy wrk jq python3-torch"
fi
# clang: only `make fuzz` (libFuzzer) needs it; `make test` replays the
# corpora with the ordinary compiler.
if [ "${1:-}" = "--fuzz" ]; then
    pkgs="$pkgs clang"
fi

missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

echo "setup: installing$missing" >&2
if [ "$(id -u)" != 0 ]; then
    echo "setup: not root; install these packages:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
