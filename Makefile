# tempo build. `make` builds build/tempo; `make test` builds everything
# (normal and ASan+UBSan) and runs the whole test suite; `make run` is the main job.
CC      ?= gcc
ifeq ($(origin CC),default)
CC      := gcc
endif
WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
BASE    = -std=c11 -D_GNU_SOURCE -Isrc -fopenmp -g $(WARN) $(BASE_MPI)
CFLAGS  ?= -O3 -march=x86-64-v2 -mtune=native
SANFLAGS := -O1 -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
LDLIBS  := -llzma -lsqlite3 -lm -ldl -lpthread

# Open MPI (multi-process training, src/parallel/): used when mpicc is there,
# unless MPI=0. Its headers come in as system headers (no -Werror on them).
MPI ?= $(if $(shell command -v mpicc 2>/dev/null),1,0)
ifeq ($(MPI),1)
BASE_MPI := -DTEMPO_MPI $(patsubst -I%,-isystem %,$(shell mpicc --showme:compile))
LDLIBS   += $(shell mpicc --showme:link)
endif

LIB_SRC  := $(shell find src -name '*.c' ! -path 'src/cli/*' | sort)
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
# C++ tests: kernels of their own in the GPU dialect, run on the emulator
TEST_CXX_SRC := $(sort $(wildcard tests/unit/test_*.cpp))
HEADERS  := $(shell find src tests -name '*.h' -o -name '*.def')

# The GPU's kernels (src/kernels/cuda/*.cu) are built twice: by clang to PTX,
# embedded in the binary (build/gen/gpu_ptx.c) for the CUDA driver to compile
# at run time, and by the C++ compiler for the CPU emulator (emulator.h).
# No CUDA SDK is used. Without clang the PTX table is empty (tempo --version
# and --device cuda say so); scripts/install_deps.sh installs clang.
CU_SRC   := $(sort $(wildcard src/kernels/cuda/*.cu))
EMU_SRC  := $(CU_SRC) src/kernels/cuda/emulator.cpp
CXX_EMU  ?= g++
EMU_BASE := -x c++ -std=c++17 -D_GNU_SOURCE -Isrc -g -fno-exceptions -fno-rtti $(WARN) -Wno-unused-function
PTX_CC   ?= clang
PTX_ARCH := sm_80
HAVE_PTX := $(if $(shell command -v $(PTX_CC) 2>/dev/null),1,0)
PTX_FLAGS := -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-path=/nonexistent \
             --cuda-gpu-arch=$(PTX_ARCH) -Xclang -target-feature -Xclang +ptx72 -O3 -Isrc \
             -Wall -Wextra -Werror -Wno-unused-parameter -Wno-unused-function -Wno-unknown-cuda-version -S
PTX      := $(if $(filter 1,$(HAVE_PTX)),$(CU_SRC:src/kernels/cuda/%.cu=build/ptx/%.ptx))

OBJ      := $(LIB_SRC:%.c=build/obj/%.o) $(EMU_SRC:%=build/obj/%.o) build/obj/gen/gpu_ptx.o
CLI_OBJ  := $(CLI_SRC:%.c=build/obj/%.o)
SAN_OBJ  := $(LIB_SRC:%.c=build/asan/obj/%.o) $(EMU_SRC:%=build/asan/obj/%.o) build/obj/gen/gpu_ptx.o
TESTS    := $(TEST_SRC:tests/unit/%.c=build/tests/%) $(TEST_CXX_SRC:tests/unit/%.cpp=build/tests/%)
SAN_TESTS := $(TEST_SRC:tests/unit/%.c=build/asan/tests/%) $(TEST_CXX_SRC:tests/unit/%.cpp=build/asan/tests/%)

# Extra link flags of single tests: test_step_alloc counts tempo's own
# allocations through --wrap (tests/unit/test_step_alloc.c).
TEST_LDFLAGS_test_step_alloc := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=posix_memalign

.PHONY: all test test-suite unit asan run run-job clean fuzz install uninstall
all: build/tempo

build/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	@echo CC $<
	@$(CC) $(BASE) $(CFLAGS) -c $< -o $@

build/asan/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	@echo CC-SAN $<
	@$(CC) $(BASE) $(SANFLAGS) -c $< -o $@

build/obj/%.cu.o: %.cu $(HEADERS)
	@mkdir -p $(dir $@)
	@echo CXX-EMU $<
	@$(CXX_EMU) $(EMU_BASE) $(CFLAGS) -c $< -o $@

build/obj/%.cpp.o: %.cpp $(HEADERS)
	@mkdir -p $(dir $@)
	@echo CXX-EMU $<
	@$(CXX_EMU) $(EMU_BASE) $(CFLAGS) -c $< -o $@

build/asan/obj/%.cu.o: %.cu $(HEADERS)
	@mkdir -p $(dir $@)
	@echo CXX-EMU-SAN $<
	@$(CXX_EMU) $(EMU_BASE) $(SANFLAGS) -c $< -o $@

build/asan/obj/%.cpp.o: %.cpp $(HEADERS)
	@mkdir -p $(dir $@)
	@echo CXX-EMU-SAN $<
	@$(CXX_EMU) $(EMU_BASE) $(SANFLAGS) -c $< -o $@

build/ptx/%.ptx: src/kernels/cuda/%.cu src/kernels/cuda/cuda_dialect.h
	@mkdir -p $(dir $@)
	@echo PTX $<
	@$(PTX_CC) $(PTX_FLAGS) $< -o $@

build/gen/gpu_ptx.c: $(PTX) scripts/embed_ptx.sh
	@mkdir -p $(dir $@)
	@bash scripts/embed_ptx.sh $@ $(PTX_ARCH) $(PTX)

build/obj/gen/gpu_ptx.o: build/gen/gpu_ptx.c src/kernels/cuda/gpu_ptx.h
	@mkdir -p $(dir $@)
	@echo CC $<
	@$(CC) $(BASE) -O1 -c $< -o $@

build/libtempo.a: $(OBJ)
	@rm -f $@
	@ar rcs $@ $^

build/asan/libtempo.a: $(SAN_OBJ)
	@rm -f $@
	@ar rcs $@ $^

build/tempo: $(CLI_OBJ) build/libtempo.a
	@echo LD $@
	@$(CC) $(BASE) $(CFLAGS) $(CLI_OBJ) build/libtempo.a $(LDLIBS) -o $@

build/tests/%: tests/unit/%.c build/libtempo.a $(HEADERS)
	@mkdir -p $(dir $@)
	@echo LD $@
	@$(CC) $(BASE) $(CFLAGS) -Itests $< build/libtempo.a $(LDLIBS) $(TEST_LDFLAGS_$*) -o $@

build/asan/tests/%: tests/unit/%.c build/asan/libtempo.a $(HEADERS)
	@mkdir -p $(dir $@)
	@echo LD-SAN $@
	@$(CC) $(BASE) $(SANFLAGS) -Itests $< build/asan/libtempo.a $(LDLIBS) $(TEST_LDFLAGS_$*) -o $@

build/tests/%: tests/unit/%.cpp build/libtempo.a $(HEADERS)
	@mkdir -p $(dir $@)
	@echo LD $@
	@$(CXX_EMU) $(EMU_BASE) $(CFLAGS) -Itests -c $< -o $@.o
	@$(CC) $(BASE) $(CFLAGS) $@.o build/libtempo.a $(LDLIBS) -o $@
	@rm -f $@.o

build/asan/tests/%: tests/unit/%.cpp build/asan/libtempo.a $(HEADERS)
	@mkdir -p $(dir $@)
	@echo LD-SAN $@
	@$(CXX_EMU) $(EMU_BASE) $(SANFLAGS) -Itests -c $< -o $@.o
	@$(CC) $(BASE) $(SANFLAGS) $@.o build/asan/libtempo.a $(LDLIBS) -o $@
	@rm -f $@.o

# Test tools beside the suite (tests/llama/*.c): programs the e2e scripts run,
# linked to the normal library.
build/tests-llama/%: tests/llama/%.c build/libtempo.a $(HEADERS)
	@mkdir -p $(dir $@)
	@echo LD $@
	@$(CC) $(BASE) $(CFLAGS) $< build/libtempo.a $(LDLIBS) -o $@

# libFuzzer harnesses (tests/fuzz/fuzz_*.c) over the library built by clang
# with ASan+UBSan; `make fuzz FUZZ_SECONDS=N` runs each for N seconds from
# its committed seed corpus (tests/fuzz/run.sh).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 10
FUZZ_FLAGS   := -std=c11 -D_GNU_SOURCE -Isrc -fopenmp -g -O1 -fno-omit-frame-pointer \
                -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
FUZZ_OBJ     := $(LIB_SRC:%.c=build/fuzz/obj/%.o) $(EMU_SRC:%=build/fuzz/obj/%.o) build/obj/gen/gpu_ptx.o
FUZZ_BINS    := $(patsubst tests/fuzz/fuzz_%.c,build/fuzz/fuzz_%,$(wildcard tests/fuzz/fuzz_*.c))

build/fuzz/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	@echo CC-FUZZ $<
	@$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

FUZZ_EMU = @mkdir -p $(dir $@); echo CXX-EMU-FUZZ $<; $(FUZZ_CC) $(EMU_BASE) -O1 -fno-omit-frame-pointer \
           -fsanitize=address,undefined -fno-sanitize=function -fsanitize=fuzzer-no-link -c $< -o $@
build/fuzz/obj/%.cu.o: %.cu $(HEADERS)
	$(FUZZ_EMU)
build/fuzz/obj/%.cpp.o: %.cpp $(HEADERS)
	$(FUZZ_EMU)

build/fuzz/libtempo.a: $(FUZZ_OBJ)
	@rm -f $@
	@ar rcs $@ $^

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c build/fuzz/libtempo.a
	@echo LD-FUZZ $@
	@$(FUZZ_CC) $(FUZZ_FLAGS) $(WARN) -fsanitize=fuzzer $< build/fuzz/libtempo.a $(LDLIBS) -o $@

fuzz:
	@bash tests/fuzz/run.sh $(FUZZ_SECONDS)

unit: $(TESTS)
asan: $(SAN_TESTS)

# The whole suite: unit tests (normal and sanitized), then end-to-end tests.
# Missing Debian packages are installed first (scripts/install_deps.sh), in a
# make of its own, so that the build sees what was installed (mpicc). That
# make builds on every core (JOBS, default nproc): the normal and sanitized
# builds are minutes of the suite's time on one.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
test:
	@bash scripts/install_deps.sh
	@$(MAKE) --no-print-directory -j$(JOBS) test-suite
LLAMA_TOOLS := $(patsubst tests/llama/%.c,build/tests-llama/%,$(wildcard tests/llama/*.c))
test-suite: build/tempo $(TESTS) $(SAN_TESTS) $(LLAMA_TOOLS)
	bash tests/run_all.sh

# The main job: prepare the bundled corpus, train under the default budget, report.
BUDGET ?= 5m
run:
	@bash scripts/install_deps.sh
	@$(MAKE) --no-print-directory -j$(JOBS) run-job
run-job: build/tempo
	bash scripts/main_job.sh $(BUDGET)

# make install [PREFIX=/usr/local] [DESTDIR=staging]: the binary in PREFIX/bin, what it finds beside
# itself (core/data_path.h: presets, chip profiles and the planner's fits, the PyTorch reference
# scripts) in PREFIX/share/tempo, the manual in PREFIX/share/doc/tempo. llama.cpp's comparison
# (bench infer --vs-llama-cpp) builds from a source tree and is not installed.
PREFIX ?= /usr/local
SHARE  := $(DESTDIR)$(PREFIX)/share/tempo
install: build/tempo
	install -d $(DESTDIR)$(PREFIX)/bin $(SHARE)/scripts $(DESTDIR)$(PREFIX)/share/doc/tempo
	install -m 755 build/tempo $(DESTDIR)$(PREFIX)/bin/tempo
	cd configs && find . -type d -exec install -d $(abspath $(SHARE))/configs/{} \; \
	    && find . -type f -exec install -m 644 {} $(abspath $(SHARE))/configs/{} \;
	install -m 644 scripts/torch_reference.py scripts/torch_reference_cuda.py $(SHARE)/scripts/
	install -m 644 README.md docs/*.md docs/*.svg $(DESTDIR)$(PREFIX)/share/doc/tempo/
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/tempo
	rm -rf $(SHARE) $(DESTDIR)$(PREFIX)/share/doc/tempo

clean:
	rm -rf build
