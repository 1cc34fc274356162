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
# The library finds its plugins at <libdir>/sglattn/plugins and its conf at
# sysconfdir, both from its own location: the conf's path relative to libdir
# is compiled into paths.o (a stamp follows the directories), so a relocated
# or DESTDIR-staged tree works too.  The build tree has the same shape.
CONF_FROM_LIBDIR := $(shell realpath -m --relative-to='$(libdir)' '$(sysconfdir)' 2>/dev/null || echo ../etc)
HOST_DIRS_STAMP := $(OBJDIR)/host/install-dirs.stamp
$(HOST_DIRS_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(CONF_FROM_LIBDIR)' | cmp -s - $@ || echo '$(CONF_FROM_LIBDIR)' > $@
$(OBJDIR)/host/paths.o: $(HOST_DIRS_STAMP)
$(OBJDIR)/host/paths.o: CFLAGS_COMMON += -DSGL_ATTN_CONF_FROM_LIBDIR='"$(CONF_FROM_LIBDIR)"'

LIB_REAL := libsglattn.so.$(SOMAJOR).0.0
# The .pc names directories under ${prefix} where they are, so that
# pkg-config --define-prefix relocates them.
PC_EXEC_PREFIX = $(patsubst $(prefix)%,$${prefix}%,$(exec_prefix))
PC_LIBDIR = $(patsubst $(exec_prefix)/%,$${exec_prefix}/%,$(libdir))
PC_INCLUDEDIR = $(patsubst $(prefix)/%,$${prefix}/%,$(includedir))
PC_SYSCONFDIR = $(patsubst $(prefix)/%,$${prefix}/%,$(sysconfdir))

$(BUILD)/sglattn.pc: host/sglattn.pc.in FORCE
	@mkdir -p $(@D)
	@sed -e 's|@PREFIX@|$(prefix)|g' -e 's|@EXEC_PREFIX@|$(PC_EXEC_PREFIX)|g' -e 's|@LIBDIR@|$(PC_LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(PC_INCLUDEDIR)|g' -e 's|@SYSCONFDIR@|$(PC_SYSCONFDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    $< > $@.tmp && (cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@)

install-host: all $(BUILD)/sglattn.pc
	$(call install_file,755,$(LIBSGLATTN),$(libdir)/$(LIB_REAL))
	ln -sfn $(LIB_REAL) $(DESTDIR)$(libdir)/libsglattn.so.$(SOMAJOR) && echo '$(libdir)/libsglattn.so.$(SOMAJOR)' >> $(INSTALL_MANIFEST)
	ln -sfn libsglattn.so.$(SOMAJOR) $(DESTDIR)$(libdir)/libsglattn.so && echo '$(libdir)/libsglattn.so' >> $(INSTALL_MANIFEST)
	$(call install_file,644,host/sgl_attn.h,$(includedir)/sglattn/sgl_attn.h)
	$(call install_file,644,abi/sgl_attn_abi.h,$(includedir)/sglattn/sgl_attn_abi.h)
	$(call install_file,644,$(BUILD)/sglattn.pc,$(libdir)/pkgconfig/sglattn.pc)
	install -d $(DESTDIR)$(libdir)/sglattn/plugins
	@set -e; for p in $(PLUGINS); do f=$(libdir)/sglattn/plugins/$$(basename $$p); \
	  echo "install -m 755 $$p $(DESTDIR)$$f"; install -m 755 $$p $(DESTDIR)$$f; echo "$$f" >> $(INSTALL_MANIFEST); done
	$(if $(HOST_CONF),$(call install_file,644,$(HOST_CONF),$(sysconfdir)/sglattn/sglattn.json))

INSTALL_HOOKS := install-host $(INSTALL_HOOKS)

FORCE:
.PHONY: host install-host FORCE
