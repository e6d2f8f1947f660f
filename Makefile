# tempo build. `make` builds build/tempo; `make test` builds everything
# (normal and ASan+UBSan) and runs the whole test suite; `make run` is the main job.
CC      ?= gcc
ifeq ($(origin CC),default)
CC      := gcc
endif
WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
BASE    := -std=c11 -D_GNU_SOURCE -Isrc -fopenmp -g $(WARN)
CFLAGS  ?= -O3 -march=x86-64-v2 -mtune=native
SANFLAGS := -O1 -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
LDLIBS  := -llzma -lsqlite3 -lm

LIB_SRC  := $(shell find src -name '*.c' ! -path 'src/cli/*' | sort)
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
HEADERS  := $(shell find src tests -name '*.h')

OBJ      := $(LIB_SRC:%.c=build/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=build/obj/%.o)
SAN_OBJ  := $(LIB_SRC:%.c=build/asan/obj/%.o)
TESTS    := $(TEST_SRC:tests/unit/%.c=build/tests/%)
SAN_TESTS := $(TEST_SRC:tests/unit/%.c=build/asan/tests/%)

# Extra link flags of single tests: test_step_alloc counts tempo's own
# allocations through --wrap (tests/unit/test_step_alloc.c).
TEST_LDFLAGS_test_step_alloc := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=posix_memalign

.PHONY: all test unit asan run clean fuzz
all: build/tempo

build/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	@echo CC $<
	@$(CC) $(BASE) $(CFLAGS) -c $< -o $@

build/asan/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	@echo CC-SAN $<
	@$(CC) $(BASE) $(SANFLAGS) -c $< -o $@

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

# libFuzzer harnesses (tests/fuzz/fuzz_*.c) over the library built by clang
# with ASan+UBSan; `make fuzz FUZZ_SECONDS=N` runs each for N seconds from
# its committed seed corpus (tests/fuzz/run.sh).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 10
FUZZ_FLAGS   := -std=c11 -D_GNU_SOURCE -Isrc -fopenmp -g -O1 -fno-omit-frame-pointer \
                -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
FUZZ_OBJ     := $(LIB_SRC:%.c=build/fuzz/obj/%.o)
FUZZ_BINS    := $(patsubst tests/fuzz/fuzz_%.c,build/fuzz/fuzz_%,$(wildcard tests/fuzz/fuzz_*.c))

build/fuzz/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	@echo CC-FUZZ $<
	@$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

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
test: build/tempo $(TESTS) $(SAN_TESTS)
	bash tests/run_all.sh

# The main job: prepare the bundled corpus, train under the default budget, report.
BUDGET ?= 5m
run: build/tempo
	bash scripts/main_job.sh $(BUDGET)

clean:
	rm -rf build
