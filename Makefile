# dtune — one hand-written Makefile.
#
#   make            build bin/dtune (installs missing Debian packages first)
#   make test       set-up, no file circles (scripts/include_graph.sh), no public
#                   function only tests call (scripts/public_api.sh), build,
#                   run every cmocka test; the summary is the last line
#   make SAN=1 test the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make SAN=thread test  the same under ThreadSanitizer (data races)
#   make MPI=off test     the same without Open MPI (found by pkg-config otherwise)
#   make bench      build the benchmarks in bench/
#   make fuzz       build the libFuzzer harnesses of fuzz/ (clang, ASan + UBSan)
#   make run        tune the default config.yaml (models/resnet18.yaml on the CPU)

# ---- settings ---------------------------------------------------------------
CC       ?= cc
PKGS     := gsl yaml-0.1 jansson libmicrohttpd xgboost plplot sqlite3 libprotobuf-c
# The ONNX schema Debian's python3-onnx ships: protoc-c turns it into C in
# $(BUILD)/gen at build time (src/onnx.c reads model files with it).
ONNX_PROTO ?= /usr/lib/python3/dist-packages/onnx/onnx.proto
OPT      ?= -O2
WARN     := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wno-unused-parameter
CPPFLAGS := -Iinclude -D_GNU_SOURCE -MMD -MP
CFLAGS   := -std=c11 $(OPT) -g $(WARN) -pthread
LDLIBS    = $(shell pkg-config --libs $(PKGS)) -ldl -lm -pthread
PKGCFLAGS = $(shell pkg-config --cflags $(PKGS))

ifeq ($(SAN),1)
BUILD    := build-san
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
else ifeq ($(SAN),thread)
BUILD    := build-tsan
CFLAGS   += -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=thread
else
BUILD    := build
endif

# CUDA headers are optional: cuda_backend compiles against them when present
# and reaches the driver and NVRTC only through dlopen at run time.
CUDA_HOME ?= /usr/local/cuda
ifneq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
CPPFLAGS += -DDT_HAVE_CUDA_H -isystem $(CUDA_HOME)/include
endif

# Open MPI is optional: where pkg-config finds it (ompi-c, else mpi) the MPI
# transport (src/mpi_run.c) is built and DT_HAVE_MPI defined; `make MPI=off`
# builds without it on a machine that has it (into BUILD-nompi/, dtune too).
MPI      ?= auto
MPI_SRC  := src/mpi_run.c
ifeq ($(MPI),off)
BUILD    := $(BUILD)-nompi
else
MPI_PKG  := $(firstword $(foreach p,ompi-c mpi,$(shell pkg-config --exists $(p) && echo $(p))))
endif
ifneq ($(MPI_PKG),)
PKGS     += $(MPI_PKG)
CPPFLAGS += -DDT_HAVE_MPI
endif

# ---- sources ----------------------------------------------------------------
LIB_SRC   := $(filter-out src/main.c $(if $(MPI_PKG),,$(MPI_SRC)),$(wildcard src/*.c))
LIB_OBJ   := $(LIB_SRC:src/%.c=$(BUILD)/obj/%.o) $(BUILD)/gen/onnx.pb-c.o
LIB       := $(BUILD)/libdtune.a
TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_SUPPORT := $(wildcard tests/support/*.c)
BENCH_SRC := $(wildcard bench/*_bench.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=bin/%)
ifneq ($(SAN)$(filter off,$(MPI)),)
DTUNE     := $(BUILD)/dtune
else
DTUNE     := bin/dtune
endif

.PHONY: all setup build test tests bench run clean bundle fuzz
all: setup
	@$(MAKE) --no-print-directory build

setup:
	@sh scripts/setup.sh

build: $(DTUNE)

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(PKGCFLAGS) $(CFLAGS) -c $< -o $@

# ONNX's protobuf schema as C, generated (never committed) into the build
# folder; the generated file is not ours, so -Werror does not apply to it.
%/gen/onnx.pb-c.c %/gen/onnx.pb-c.h: $(ONNX_PROTO)
	@mkdir -p $*/gen
	protoc-c --proto_path=$(dir $(ONNX_PROTO)) --c_out=$*/gen $(ONNX_PROTO)

$(BUILD)/gen/onnx.pb-c.o: $(BUILD)/gen/onnx.pb-c.c
	$(CC) $(CPPFLAGS) -I$(BUILD)/gen $(PKGCFLAGS) $(filter-out -Werror,$(CFLAGS)) -c $< -o $@

$(BUILD)/obj/onnx.o $(BUILD)/obj/onnx_ir.o: $(BUILD)/gen/onnx.pb-c.h
$(BUILD)/obj/onnx.o $(BUILD)/obj/onnx_ir.o: CPPFLAGS += -I$(BUILD)/gen

# Under ThreadSanitizer, ppo.c is compiled without instrumentation: its
# network's forward and backward loops belong to one tuner, on one thread,
# and touch nothing another thread sees, yet instrumented they make the
# tuner tests about 20 times slower (most of the TSan run's time).
ifeq ($(SAN),thread)
$(BUILD)/obj/ppo.o: CFLAGS := $(filter-out -fsanitize=thread,$(CFLAGS))
endif

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(DTUNE): $(BUILD)/obj/main.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(TEST_SUPPORT) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests -Isrc $(PKGCFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_SUPPORT) $(TEST_EXTRA) $(LIB) $(LDLIBS) -lcmocka

# The fuzz harnesses, built with $(CC) into the corpus replay test.
FUZZ_SRC := $(wildcard fuzz/*.c)
$(BUILD)/tests/test_fuzz_corpus: $(FUZZ_SRC) fuzz/fuzz.h
$(BUILD)/tests/test_fuzz_corpus: TEST_EXTRA := $(FUZZ_SRC)
$(BUILD)/tests/test_fuzz_corpus: CPPFLAGS += -Ifuzz

tests: $(DTUNE) $(TEST_BIN)

test: setup
	@sh scripts/include_graph.sh
	@sh scripts/public_api.sh
	@$(MAKE) --no-print-directory -j2 tests
	@DTUNE_BIN=$(abspath $(DTUNE)) sh scripts/run_tests.sh $(TEST_BIN)

# ---- fuzzing: clang's libFuzzer under ASan + UBSan (make fuzz) ----------------
# Only this target needs clang (scripts/setup.sh --fuzz installs it); the
# corpus replay in `make test` is built with $(CC). CONTRIBUTING.md ("Fuzzing")
# says how to run the fuzzers.
FUZZ_CC    ?= clang
FUZZ_BUILD := build-fuzz
FUZZ_NAMES := config model log http
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=c11 -O1 -g $(WARN) -pthread $(FUZZ_SAN)
FUZZ_OBJ   := $(LIB_SRC:src/%.c=$(FUZZ_BUILD)/obj/%.o) $(FUZZ_BUILD)/gen/onnx.pb-c.o
FUZZ_BIN   := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)

$(FUZZ_BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(PKGCFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/gen/onnx.pb-c.o: $(FUZZ_BUILD)/gen/onnx.pb-c.c
	$(FUZZ_CC) $(CPPFLAGS) -I$(FUZZ_BUILD)/gen $(PKGCFLAGS) $(filter-out -Werror,$(FUZZ_CFLAGS)) \
	    -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/obj/onnx.o $(FUZZ_BUILD)/obj/onnx_ir.o: $(FUZZ_BUILD)/gen/onnx.pb-c.h
$(FUZZ_BUILD)/obj/onnx.o $(FUZZ_BUILD)/obj/onnx_ir.o: CPPFLAGS += -I$(FUZZ_BUILD)/gen

$(FUZZ_BUILD)/libdtune.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c fuzz/scratch.c fuzz/fuzz.h $(FUZZ_BUILD)/libdtune.a
	$(FUZZ_CC) $(CPPFLAGS) -Ifuzz -DDT_LIBFUZZER $(PKGCFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer \
	    -o $@ $< fuzz/scratch.c $(FUZZ_BUILD)/libdtune.a $(LDLIBS)

fuzz:
	@sh scripts/setup.sh --fuzz
	@$(MAKE) --no-print-directory -j2 $(FUZZ_BIN)

# The benches, like the tests, may reach a target's private headers in src/
# (the CPU and CUDA kernels measured against vendor libraries).
bin/%_bench: bench/%_bench.c $(LIB)
	@mkdir -p bin
	$(CC) $(CPPFLAGS) -Isrc $(PKGCFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS) $(BENCH_LIBS_$*)

bin/trace_convert: bench/trace_convert.c $(LIB)
	@mkdir -p bin
	$(CC) $(CPPFLAGS) $(PKGCFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

bench: setup
	@sh scripts/setup.sh --bench
	@$(MAKE) --no-print-directory build $(BENCH_BIN) bin/trace_convert

# Extra libraries and flags of individual benches (vendor baselines, OpenMP).
BENCH_LIBS_measure = -ldnnl -lopenblas
BENCH_LIBS_omp = -fopenmp

bundle: all
	@sh scripts/bundle.sh

# The demo's tuning database stays under runs/ unless DTUNE_DB names another.
run: all
	DTUNE_DB="$${DTUNE_DB:-runs/dtune.db}" ./bin/dtune tune -c config.yaml

clean:
	rm -rf build build-san build-tsan build-fuzz build-nompi build-san-nompi build-tsan-nompi bin

-include $(LIB_OBJ:.o=.d) $(BUILD)/obj/main.d $(FUZZ_OBJ:.o=.d)
