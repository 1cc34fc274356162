# plugins/hybrid - the hybrid linear-attention wrappers, one .so per kind,
# from shared sources.  Compute files are built twice: float (*.o) and the
# float64 reference (*.f64.o, -DHYB_F64).  `make hybrid` builds this module
# alone (plugins, its tests and its bench); `make hybrid-check` runs the tests.

HYB_DIR := plugins/hybrid
HYB_KINDS := gdn kda mamba2 short_conv lightning minimax_sparse
HYB_COMMON := wrapper create plan state_pool state_ops check_io tensor_io error workers probe
HYB_CORES := conv1d delta_rule delta_layer declin drive

CFLAGS_plugins_hybrid_ := -O3 -ffp-contract=fast

hyb_obj = $(addprefix $(OBJDIR)/$(HYB_DIR)/,$(addsuffix .o,$(1)))
hyb_obj64 = $(addprefix $(OBJDIR)/$(HYB_DIR)/,$(addsuffix .f64.o,$(1)))

# Everything but the entry points, with the SDK's objects: what tests and the
# bench link directly.
HYB_LIB_OBJS := $(call hyb_obj,$(HYB_COMMON) $(HYB_CORES) $(HYB_KINDS) $(addprefix plugin_,$(HYB_KINDS))) \
                $(call hyb_obj64,$(HYB_CORES) $(HYB_KINDS)) $(SDK_OBJS)
HYB_LIB := $(OBJDIR)/$(HYB_DIR)/libhybrid.a
HYB_PLUGINS := $(addprefix $(PLUGDIR)/,$(addsuffix .so,$(HYB_KINDS)))

$(OBJDIR)/$(HYB_DIR)/%.f64.o: $(HYB_DIR)/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS_plugins_hybrid_) -DHYB_F64 -MMD -MP -c $< -o $@

$(OBJDIR)/$(HYB_DIR)/entry.%.o: $(HYB_DIR)/entry.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS_plugins_hybrid_) -DHYB_DESC=hyb_plugin_$* -MMD -MP -c $< -o $@

$(HYB_LIB): $(HYB_LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# A kind's .so: its entry, its descriptor and compute, the shared parts, the SDK.
define HYB_PLUGIN_RULE
$(PLUGDIR)/$(1).so: $(OBJDIR)/$(HYB_DIR)/entry.$(1).o $(call hyb_obj,plugin_$(1) $(1) $(HYB_COMMON) $(HYB_CORES)) \
                    $(call hyb_obj64,$(1) $(HYB_CORES)) $(SDK_LIB)
	@mkdir -p $$(@D)
	$$(CC) -shared -o $$@ $$^ $$(LDFLAGS_COMMON) -Wl,-z,defs -lm
endef
$(foreach k,$(HYB_KINDS),$(eval $(call HYB_PLUGIN_RULE,$(k))))

ALL += $(HYB_PLUGINS)
PLUGINS += $(HYB_PLUGINS)

hybrid: $(HYB_PLUGINS)
.PHONY: hybrid hybrid-check

# The top Makefile does not scan bench/*/: this module's bench comes with it.
include bench/hybrid/module.mk
