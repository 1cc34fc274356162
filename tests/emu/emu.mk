# tests/emu/emu.mk - the CPU emulator of CUDA (fibers for threads, block and
# named barriers, warp collectives, ldmatrix / mma.sync fragments, cp.async
# groups; Hopper's mbarriers, wgmma and TMA (emu_sm90.h); a host-memory
# runtime with the tensor map encoder), shared by the tests that run real kernels
# built by g++ with -DLK_EMU: test_lin_emu and the emulated linear wrapper
# plugins (tests/cuda_linear; programmatic dependent launch: emu_pdl.h) and the
# emulated cuda_attn and cuda_mla plugins (tests/cuda_emu).  Included by both
# module.mk files (the top Makefile includes only module.mk files); read once.
ifndef EMU_MK_READ
EMU_MK_READ := 1

EMU_DIR := tests/emu
EMU_OBJ := $(OBJDIR)/tests/emu
EMU_CXXFLAGS := -std=c++17 -O1 -g -fPIC $(SANFLAGS) -DLK_EMU -include $(EMU_DIR)/emu_prelude.h -I$(CUDA_HOME)/include \
                $(INC_PLUGIN) -I$(EMU_DIR) -Wall -Wextra -Werror \
                -Wno-attributes -Wno-unknown-pragmas -Wno-unused-parameter -Wno-unused-function
EMU_SIMT_OBJ := $(EMU_OBJ)/emu_simt.o
# The runtime reports one device: SM 9.0 with the H200's limits, or (the _sm80
# object) SM 8.0 with the A100's, so a plugin takes its SM 8.x paths.
EMU_CUDART_OBJ := $(EMU_OBJ)/emu_cudart.o
EMU_CUDART_SM80_OBJ := $(EMU_OBJ)/emu_cudart_sm80.o

$(EMU_OBJ)/%.o: $(EMU_DIR)/%.cpp $(EMU_DIR)/emu_prelude.h $(EMU_DIR)/emu_sm90.h $(EMU_DIR)/emu_pdl.h
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -c $< -o $@
$(EMU_CUDART_SM80_OBJ): $(EMU_DIR)/emu_cudart.cpp $(EMU_DIR)/emu_prelude.h $(EMU_DIR)/emu_sm90.h
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -DEMU_SM=80 -c $< -o $@
endif
