# plugins/sdk - the plugin SDK (README.md): code several plugins share, built
# once (PIC, hidden visibility, every symbol prefixed sgl_sdk_) into
# $(SDK_LIB), which each plugin .so links.  The top Makefile names $(SDK_OBJS)
# and $(SDK_LIB), so fragments read before this one can use them.
#
#   make sdk   the archive alone

# libsglattn embeds cpu_ref and validate: it links the SDK's objects once,
# after theirs (host/module.mk expands HOST_EMBED_OBJS late).  What links an
# embedded plugin's objects on its own (its tests, its bench) adds $(SDK_LIB).
HOST_EMBED_OBJS += $(if $(CPU_REF_OBJS)$(VALIDATE_OBJS),$(SDK_OBJS))

$(SDK_LIB): $(SDK_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

sdk: $(SDK_LIB)
.PHONY: sdk

# No two files of the SDK call each other (make layout-cycles).
LAYOUT_CYCLE_DIRS += plugins/sdk
