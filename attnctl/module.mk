# attnctl/ - the command-line front end, linked against libsglattn with an
# rpath of $ORIGIN/../lib (works in the build tree and the install tree).
#
#   make attnctl   the CLI (and the library it needs)
#   make demo      list plugins, then one real attention run on the CPU default
#
# Commands and the harness are found by wildcard; ATTNCTL_LIBS takes the
# extra libraries other owners' files need (recursive, append with +=).

ATTNCTL_SRCS := $(sort $(wildcard attnctl/*.c attnctl/harness/*.c))
ATTNCTL_OBJS := $(ATTNCTL_SRCS:%.c=$(OBJDIR)/%.o)
ATTNCTL_LIBS = -lm -lcjson
CFLAGS_attnctl_ = -Iattnctl
CFLAGS_attnctl_harness_ = -Iattnctl -Iattnctl/harness

ALL += $(ATTNCTL)

$(ATTNCTL): $(ATTNCTL_OBJS) $(LIBSGLATTN) | $(LIBDIR)/libsglattn.so
	@mkdir -p $(@D)
	$(CC) -o $@ $(ATTNCTL_OBJS) -L$(LIBDIR) -lsglattn -Wl,-rpath,'$$ORIGIN/../lib' \
	    $(LDFLAGS_COMMON) $(ATTNCTL_LIBS)

attnctl: $(ATTNCTL)

demo: all
	$(ATTNCTL) list-plugins
	$(ATTNCTL) run --model examples/models/llama-3.1-8b.json

.PHONY: attnctl demo
