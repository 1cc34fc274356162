# tests/fuzz - libFuzzer targets: the conf reader, the model reader (our JSON
# and HF config.json) and the plugin descriptor/caps checks.
#
#   make fuzz                 fetch cJSON's source, build, run each target FUZZ_SECONDS (60)
#   make fuzz FUZZ_SECONDS=3600 FUZZ_TARGETS=model     one target, longer
#   make fuzz-build           only build build-fuzz/bin/fuzz_*
#
# The fuzz build (build-fuzz/) compiles every host/*.c and cJSON.c from the
# Debian source package (tests/fuzz/fetch_cjson.sh: apt-get source through a
# private apt configuration; nothing vendored) with clang
# -fsanitize=fuzzer,address,undefined; the project itself keeps linking the
# system libcjson.  When the source cannot be fetched (offline) the step says
# so and is skipped.  Each target's new inputs go to build-fuzz/work/<target>;
# a crash is saved under build-fuzz/artifacts/ and fails the step: commit the
# input under tests/fuzz/regressions/<target>/ with the fix, and the replay
# tests below keep it fixed.

FUZZ_TARGETS ?= conf model descriptor
FUZZ_SECONDS ?= 60
FUZZ_DIR := build-fuzz
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(FUZZ_SAN) -I$(FUZZ_DIR)/include -Iabi -Ihost
FUZZ_HOST_OBJS := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(sort $(wildcard host/*.c))) $(FUZZ_DIR)/obj/cjson/cJSON.o
FUZZ_DICT_conf := -dict=tests/fuzz/json.dict
FUZZ_DICT_model := -dict=tests/fuzz/json.dict
# Seed directories: committed seeds, then the project's own files.
FUZZ_SEEDS_conf := tests/fuzz/corpus/conf conf
# The real config.json corpus in shared/ (tests/data/hf-configs/README.md),
# when it is there (libFuzzer refuses a seed folder that does not exist).
HF_CORPUS_DIR ?= $(abspath ../shared/hf-configs)
FUZZ_SEEDS_model := tests/fuzz/corpus/model examples/models $(wildcard $(HF_CORPUS_DIR))
FUZZ_SEEDS_descriptor := tests/fuzz/corpus/descriptor

$(FUZZ_DIR)/cjson/cJSON.c $(FUZZ_DIR)/include/cjson/cJSON.h:
	tests/fuzz/fetch_cjson.sh $(FUZZ_DIR)

# Host objects with coverage hooks (fuzzer-no-link) and the sanitizers.
$(FUZZ_DIR)/obj/host/%.o: host/%.c $(FUZZ_DIR)/include/cjson/cJSON.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(FUZZ_DIR)/obj/cjson/cJSON.o: $(FUZZ_DIR)/cjson/cJSON.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(FUZZ_DIR)/include/cjson -fsanitize=fuzzer-no-link -c $< -o $@
$(FUZZ_DIR)/bin/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_HOST_OBJS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_HOST_OBJS) -o $@ -lltdl -ldl -lm -pthread

fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_DIR)/bin/fuzz_%)
.SECONDARY: $(FUZZ_HOST_OBJS)

# One target: new inputs go to the work corpus (libFuzzer reads the seed dirs
# too), then the summary from libFuzzer's final stats.
define fuzz_run_rule
fuzz-run-$(1): $(FUZZ_DIR)/bin/fuzz_$(1)
	@mkdir -p $(FUZZ_DIR)/work/$(1) $(FUZZ_DIR)/artifacts
	@echo "== fuzz_$(1): $$(FUZZ_SECONDS) s"
	@if ! $(FUZZ_DIR)/bin/fuzz_$(1) -max_total_time=$$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 $(FUZZ_DICT_$(1)) -artifact_prefix=$(FUZZ_DIR)/artifacts/$(1)- \
	    $(FUZZ_DIR)/work/$(1) $(FUZZ_SEEDS_$(1)) > $(FUZZ_DIR)/$(1).log 2>&1; then \
	  tail -n 40 $(FUZZ_DIR)/$(1).log; \
	  echo "fuzz_$(1) FOUND A CRASH: input in $(FUZZ_DIR)/artifacts/$(1)-*; commit it under tests/fuzz/regressions/$(1)/ with the fix"; \
	  exit 1; fi
	@awk '/^stat::number_of_executed_units/ {e=$$$$2} /^stat::peak_rss_mb/ {r=$$$$2} \
	      /^Done [0-9]+ runs in/ {t=$$$$5} END {printf "   fuzz_$(1): %s executions in %s s, peak RSS %s MB\n", e, t, r}' \
	    $(FUZZ_DIR)/$(1).log
	@grep -E "^#[0-9]+" $(FUZZ_DIR)/$(1).log | tail -n 1 | sed 's/^/   last: /'
.PHONY: fuzz-run-$(1)
endef
$(foreach t,conf model descriptor,$(eval $(call fuzz_run_rule,$(t))))

fuzz:
	@mkdir -p $(FUZZ_DIR)
	@if ! tests/fuzz/fetch_cjson.sh $(FUZZ_DIR) 2> $(FUZZ_DIR)/fetch.err; then \
	  echo "skipped fuzz: cannot get cJSON's source for the fuzz build: $$(cat $(FUZZ_DIR)/fetch.err)"; \
	elif ! command -v $(FUZZ_CC) > /dev/null; then \
	  echo "skipped fuzz: $(FUZZ_CC) not found (scripts/install-deps.sh installs clang and libclang-rt-14-dev)"; \
	else $(MAKE) --no-print-directory fuzz-run; fi

fuzz-run: $(FUZZ_TARGETS:%=fuzz-run-%)

fuzz-seeds: $(OBJDIR)/tests/fuzz/descriptor_seeds.o
	$(PYTHON3) tests/fuzz/json_seeds.py
	$(CC) $< -o $(OBJDIR)/tests/fuzz/descriptor_seeds
	mkdir -p tests/fuzz/corpus/descriptor
	$(OBJDIR)/tests/fuzz/descriptor_seeds tests/fuzz/corpus/descriptor

-include $(shell test -d $(FUZZ_DIR)/obj && find $(FUZZ_DIR)/obj -name '*.d' 2>/dev/null)

# ------------------------------------------------------------- regressions
# Each target replayed without libFuzzer over its committed regressions and
# seeds, in the normal build (and so under ASan and valgrind in the sanitize
# steps), linked to the host's objects and the system cJSON.
FUZZ_EMPTY :=
FUZZ_SPACE := $(FUZZ_EMPTY) $(FUZZ_EMPTY)
FUZZ_REPLAY_LIBS = $(HOST_OBJS) $(HOST_EMBED_OBJS) $(LDFLAGS_COMMON) $(HOST_LIBS)
# The JSON readers' replays also check that reading time grows linearly.
FUZZ_REPLAY_SHAPES_conf := -DREPLAY_SHAPES=1
FUZZ_REPLAY_SHAPES_model := -DREPLAY_SHAPES=2
define fuzz_replay_rule
$(TESTDIR)/test_fuzz_replay_$(1): $(OBJDIR)/tests/fuzz/fuzz_$(1).o $(OBJDIR)/tests/fuzz/replay_$(1).o \
    $(HOST_OBJS) $$$$(HOST_EMBED_OBJS)
	@mkdir -p $$(@D)
	$$(CC) -o $$@ $(OBJDIR)/tests/fuzz/fuzz_$(1).o $(OBJDIR)/tests/fuzz/replay_$(1).o $$(FUZZ_REPLAY_LIBS)
$(OBJDIR)/tests/fuzz/replay_$(1).o: tests/fuzz/replay_main.c tests/fuzz/json_shapes.h
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS_COMMON) -DREPLAY_DIRS='"$(subst $(FUZZ_SPACE),:,$(abspath tests/fuzz/regressions/$(1) $(FUZZ_SEEDS_$(1))))"' \
	    $(FUZZ_REPLAY_SHAPES_$(1)) -c $$< -o $$@
TESTS += $(TESTDIR)/test_fuzz_replay_$(1)
endef
$(foreach t,conf model descriptor,$(eval $(call fuzz_replay_rule,$(t))))

TEST_STEPS += fuzz
.PHONY: fuzz fuzz-build fuzz-run fuzz-seeds
