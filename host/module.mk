# host/ - libsglattn.so.1 (soname libsglattn.so.1, symlink libsglattn.so),
# its headers and conf in the build tree, and `make install`.
#
#   make host     the library, headers and conf alone
#
# Embedded plugins: when plugins/cpu/module.mk defines CPU_REF_OBJS (and
# plugins/validate/module.mk VALIDATE_OBJS) those objects are linked in and
# host/embedded.c is compiled with -DSGL_ATTN_EMBED_CPU_REF (_VALIDATE).
# Those fragments are read after this one, so the lists are expanded late:
# recursive variables in recipes, second expansion in prerequisites.

HOST_SRCS := $(sort $(wildcard host/*.c))
HOST_OBJS := $(HOST_SRCS:%.c=$(OBJDIR)/%.o)

# The layout table (sgl_attn_layout_json, sgl_attn_struct_size): generated
# from the public headers, so it is the layout of the library it is linked
# into.  Only the generator needs a Python (standard library).
PYTHON3 ?= python3
LAYOUT_C := $(BUILD)/gen/layout_table.c
LAYOUT_O := $(OBJDIR)/gen/layout_table.o
HOST_OBJS += $(LAYOUT_O)
$(LAYOUT_C): host/gen_layout.py host/sgl_attn.h abi/sgl_attn_abi.h
	@mkdir -p $(@D)
	$(PYTHON3) host/gen_layout.py host/sgl_attn.h abi/sgl_attn_abi.h > $@.tmp && mv $@.tmp $@
$(LAYOUT_O): $(LAYOUT_C) host/layout_impl.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -MMD -MP -c $< -o $@
HOST_LIBS = -lltdl -lcjson -ldl -lm
HOST_EMBED_OBJS = $(CPU_REF_OBJS) $(VALIDATE_OBJS)
HOST_EMBED_DEFS = $(if $(CPU_REF_OBJS),-DSGL_ATTN_EMBED_CPU_REF) $(if $(VALIDATE_OBJS),-DSGL_ATTN_EMBED_VALIDATE)
CFLAGS_host_ = $(HOST_EMBED_DEFS)

HOST_HEADERS := $(INCDIR)/sgl_attn.h $(INCDIR)/sgl_attn_abi.h
HOST_CONF := $(if $(wildcard conf/sglattn.json),$(ETCDIR)/sglattn.json)
LIBSGLATTN_LINK := $(LIBDIR)/libsglattn.so

ALL += $(LIBSGLATTN) $(LIBSGLATTN_LINK) $(HOST_HEADERS) $(HOST_CONF)

# embedded.o must follow the set of embedded plugins: a stamp holding the
# flags, rewritten only when they change.
HOST_EMBED_STAMP := $(OBJDIR)/host/embed-defs.stamp
$(HOST_EMBED_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(HOST_EMBED_DEFS)' | cmp -s - $@ || echo '$(HOST_EMBED_DEFS)' > $@
$(OBJDIR)/host/embedded.o: $(HOST_EMBED_STAMP)

.SECONDEXPANSION:
$(LIBSGLATTN): $(HOST_OBJS) $$(HOST_EMBED_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libsglattn.so.$(SOMAJOR) -Wl,--no-undefined -o $@ \
	    $(HOST_OBJS) $(HOST_EMBED_OBJS) $(LDFLAGS_COMMON) $(HOST_LIBS)

$(LIBSGLATTN_LINK): | $(LIBSGLATTN)
	ln -sfn libsglattn.so.$(SOMAJOR) $@

$(INCDIR)/sgl_attn.h: host/sgl_attn.h
	@mkdir -p $(@D)
	cp $< $@
$(INCDIR)/sgl_attn_abi.h: abi/sgl_attn_abi.h
	@mkdir -p $(@D)
	cp $< $@
$(ETCDIR)/sglattn.json: conf/sglattn.json
	@mkdir -p $(@D)
	cp $< $@

host: $(LIBSGLATTN) $(LIBSGLATTN_LINK) $(HOST_HEADERS) $(HOST_CONF)

# ------------------------------------------------------------------ install
# Same layout as the build tree, so the library finds its plugins
# (<libdir>/sglattn/plugins) and conf (<libdir>/../etc/sglattn) from its own
# location, with no environment variable.
INST := $(DESTDIR)$(PREFIX)
LIB_REAL := libsglattn.so.$(SOMAJOR).0.0

$(BUILD)/sglattn.pc: host/sglattn.pc.in
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

install: all $(BUILD)/sglattn.pc
	install -d $(INST)/lib/pkgconfig $(INST)/lib/sglattn/plugins $(INST)/include/sglattn \
	    $(INST)/etc/sglattn $(INST)/bin
	install -m 755 $(LIBSGLATTN) $(INST)/lib/$(LIB_REAL)
	ln -sfn $(LIB_REAL) $(INST)/lib/libsglattn.so.$(SOMAJOR)
	ln -sfn libsglattn.so.$(SOMAJOR) $(INST)/lib/libsglattn.so
	install -m 644 host/sgl_attn.h abi/sgl_attn_abi.h $(INST)/include/sglattn/
	install -m 644 $(BUILD)/sglattn.pc $(INST)/lib/pkgconfig/sglattn.pc
	$(if $(strip $(PLUGINS)),install -m 755 $(PLUGINS) $(INST)/lib/sglattn/plugins/)
	$(if $(HOST_CONF),install -m 644 $(HOST_CONF) $(INST)/etc/sglattn/sglattn.json)
	install -m 755 $(ATTNCTL) $(INST)/bin/attnctl
	$(if $(strip $(INSTALL_HOOKS)),$(MAKE) --no-print-directory $(INSTALL_HOOKS))

FORCE:
.PHONY: host install FORCE
