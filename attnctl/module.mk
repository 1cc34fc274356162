# attnctl/ - the command-line front end, linked against libsglattn with an
# rpath of $ORIGIN/../lib (works in the build tree and the install tree).
#
#   make attnctl   the CLI (and the library it needs), its man page and its
#                  bash completion, both generated from the CLI's own help
#   make demo      list plugins, then one real attention run on the CPU default
#
# Commands and the harness are found by wildcard; ATTNCTL_LIBS takes the
# extra libraries other owners' files need (recursive, append with +=).

ATTNCTL_SRCS := $(sort $(wildcard attnctl/*.c attnctl/harness/*.c))
ATTNCTL_OBJS := $(ATTNCTL_SRCS:%.c=$(OBJDIR)/%.o)
ATTNCTL_LIBS = -lm -lcjson
CFLAGS_attnctl_ = -Iattnctl
CFLAGS_attnctl_harness_ = -Iattnctl -Iattnctl/harness

# The man page: help2man over `attnctl help --all` (every command's --help);
# skipped, with a message, where help2man is not installed.
HELP2MAN ?= $(shell command -v help2man 2>/dev/null)
ATTNCTL_MAN := $(BUILD)/share/man/man1/attnctl.1
ATTNCTL_COMPLETION := $(BUILD)/share/bash-completion/completions/attnctl

ALL += $(ATTNCTL) $(ATTNCTL_COMPLETION)
ifneq ($(HELP2MAN),)
ALL += $(ATTNCTL_MAN)
else
SKIPPED += attnctl.1
SKIP_WHY_attnctl.1 := help2man not installed (scripts/install-deps.sh installs it): no man page
endif

$(ATTNCTL): $(ATTNCTL_OBJS) $(LIBSGLATTN) | $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CC) -o $@ $(ATTNCTL_OBJS) -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' \
	    $(LDFLAGS_COMMON) $(ATTNCTL_LIBS)

$(ATTNCTL_MAN): $(ATTNCTL)
	@mkdir -p $(@D)
	$(HELP2MAN) --no-info --section=1 --source='sglattn $(VERSION)' \
	    --name='choose and check LLM attention kernels (libsglattn)' \
	    --help-option='help --all' --version-option=--version --output=$@.tmp $(ATTNCTL) && mv $@.tmp $@

$(ATTNCTL_COMPLETION): $(ATTNCTL)
	@mkdir -p $(@D)
	$(ATTNCTL) completion bash > $@.tmp && mv $@.tmp $@

attnctl: $(ATTNCTL) $(ATTNCTL_COMPLETION) $(if $(HELP2MAN),$(ATTNCTL_MAN))

install-attnctl: all
	$(call install_file,755,$(ATTNCTL),$(bindir)/attnctl)
	$(call install_file,644,$(ATTNCTL_COMPLETION),$(bashcompletiondir)/attnctl)
	$(if $(wildcard $(ATTNCTL_MAN)),$(call install_file,644,$(ATTNCTL_MAN),$(man1dir)/attnctl.1),@echo "install: no man page: help2man is not installed")

INSTALL_HOOKS += install-attnctl

demo: all
	$(ATTNCTL) list-plugins
	$(ATTNCTL) run --model examples/models/llama-3.1-8b.json

.PHONY: attnctl demo install-attnctl
