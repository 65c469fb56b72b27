# gxboot - one non-recursive Makefile.
#   make            build/gxboot (static, stripped, release)
#   make check      lint + every test (unit plain/ASan+UBSan/valgrind, fuzz smoke, e2e)
#   make demo       4-pod simulated cluster, torchrun over net1
#   make deps       apt-install everything build, tests and demo need (idempotent)
#   make image      container/Dockerfile built with podman, offline (container/image.sh)
#   make man        regenerate gxboot.1 from the binary's --help and 'help CMD' texts
#   make install    build/gxboot and gxboot.1 under $(DESTDIR)$(PREFIX) (default /usr/local)
#   make asan | debug | valgrind | fuzz | fuzz-bins | bench | fmt | lint | clean
# V=1 shows the commands.

CC ?= cc
CLANG ?= clang-14
PKG_CONFIG ?= pkg-config
# ARCH=arm64 cross-builds with Debian's aarch64-linux-gnu toolchain and the :arm64 -dev
# packages (`make arm64`; tests/cross_arm64.sh installs them and checks the result).
ifeq ($(ARCH),arm64)
CC := aarch64-linux-gnu-gcc
AR := aarch64-linux-gnu-ar
PKG_CONFIG := PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config
endif
AR ?= ar
Q := $(if $(V),,@)
MODE ?= release
PREFIX ?= /usr/local
# BUILD and MODULES let parallel work build a subset out of the way of others.
BUILD ?= build
MODULES ?= rdzv netdetect agent
B := $(BUILD)/$(MODE)

PKGS := libibverbs librdmacm libnl-route-3.0 libcares libsodium jansson
# The RDMA providers compiled into the static binary: the NICs GPU clusters use (ConnectX-4
# and later, EFA, Intel E810, Broadcom, Azure MANA, Alibaba eRDMA) and soft-RoCE, which the
# tests run on; it keeps build/gxboot under 2.5 MiB stripped. Left out: mlx4 (ConnectX-3,
# end of life, 29 KB) and siw (software iWARP, no GPU fabric, 7 KB).
RDMA_PROVIDERS := mlx5,efa,irdma,bnxt_re,mana,erdma,rxe
# Only the file that calls ibv_get_device_list needs the define.
STATIC_PROVIDER_SRCS := netdetect/nd_verbs.c

GIT_REV := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
VERSION := 1.0.0

WARN := -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
	-Wshadow -Wvla
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE -I. $(WARN) -fno-common \
	-DGX_VERSION='"$(VERSION)"' -DGX_GIT_REV='"$(GIT_REV)"' \
	$(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)

ifeq ($(MODE),release)
# -ffunction-sections / --gc-sections: the linker drops our functions no path calls (Debian's
# own .a files have no per-function sections, so this reaches only our code)
MODE_CFLAGS := -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong -ffunction-sections -fdata-sections
# EXTRA_LDFLAGS: added to the link (tests/bench/profile.sh: -Wl,--eh-frame-hdr for perf)
MODE_LDFLAGS := -static -Wl,-z,relro,-z,now -Wl,--gc-sections $(EXTRA_LDFLAGS)
LIBS := $(shell $(PKG_CONFIG) --static --libs $(PKGS) 2>/dev/null)
else ifeq ($(MODE),asan)
MODE_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
MODE_LDFLAGS := -fsanitize=address,undefined
LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
else ifeq ($(MODE),fuzz)
# libFuzzer with ASan+UBSan (clang only): `make fuzz-bins` builds $(BUILD)/fuzz/fuzz_*
CC := $(CLANG)
MODE_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
MODE_LDFLAGS := -fsanitize=fuzzer,address,undefined
LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
else
MODE_CFLAGS := -O0 -g -D_FORTIFY_SOURCE=0
MODE_LDFLAGS :=
LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
endif

CFLAGS_ALL = $(BASE_CFLAGS) $(MODE_CFLAGS) $(CFLAGS)

LIB_SRCS := $(sort $(filter-out agent/cli/main.c,$(foreach m,$(MODULES),$(wildcard $(m)/*.c $(m)/*/*.c))))
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/%.o)
MAIN_OBJ := $(B)/agent/cli/main.o
UNIT_SRCS := $(filter-out tests/unit/test_support.c,$(sort $(wildcard $(addprefix tests/unit/,$(addsuffix .c,$(or $(TESTS),test_*))))))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)
SUPPORT_OBJ := $(B)/tests/unit/test_support.o
HARNESS_OBJ := $(B)/tests/unit/rdzv_harness.o
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)

.PHONY: all release debug asan check unit deps demo fmt fmt-check lint clean valgrind fuzz fuzz-bins arm64 \
	bench tools image man install uninstall
.DEFAULT_GOAL := all

all: build/gxboot

build/gxboot: FORCE_RELEASE
	$(Q)$(MAKE) --no-print-directory MODE=release build/release/gxboot
	$(Q)cp build/release/gxboot build/gxboot.tmp && strip build/gxboot.tmp && \
		mv build/gxboot.tmp build/gxboot
.PHONY: FORCE_RELEASE

$(B)/gxboot: $(MAIN_OBJ) $(B)/libgx.a
	@echo "  LD      $@"
	$(Q)$(CC) $(MODE_LDFLAGS) -o $@ $^ $(LIBS) 2> $@.ldlog || { cat $@.ldlog; exit 1; }

$(B)/libgx.a: $(LIB_OBJS)
	@echo "  AR      $@"
	$(Q)rm -f $@ && $(AR) rcs $@ $^

ifeq ($(MODE),release)
$(STATIC_PROVIDER_SRCS:%.c=$(B)/%.o): MODE_CFLAGS += -DRDMA_STATIC_PROVIDERS=$(RDMA_PROVIDERS)
# Size over speed where speed does not matter (the 2.5 MiB cap): the agent (options, files,
# rewrites, check, the transport watcher a few times a second), netdetect (once per run), and
# the parts of rdzv/ a pod runs once (the member's side, RDMA-CM verification, preflight,
# blame, the IPAM check, transport reports). The coordinator's per-member path keeps -O2:
# rdzv_coord*.c, rdzv_conn.c, rdzv_wire.c, rdzv_auth.c, rdzv_carry.c and rdzv/gx.
SIZE_SRCS := $(foreach m,agent netdetect rdzv/rdma,$(wildcard $(m)/*.c $(m)/*/*.c)) \
	$(addprefix rdzv/,rdzv_member.c rdzv_member_msg.c rdzv_relay.c rdzv_preflight.c \
		rdzv_blame.c rdzv_addrs.c rdzv_fabric.c)
$(patsubst %.c,$(B)/%.o,$(SIZE_SRCS)): MODE_CFLAGS += -Os
endif

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS_ALL) -MMD -MP -c -o $@ $<

$(B)/tests/test_%: $(B)/tests/unit/test_%.o $(SUPPORT_OBJ) $(HARNESS_OBJ) $(B)/libgx.a
	@echo "  LD      $@"
	$(Q)$(CC) $(MODE_LDFLAGS) -o $@ $^ $(LIBS) -lcmocka

$(B)/tests/unit/test_support.o: MODE_CFLAGS += -Wno-missing-prototypes
# counts c-ares' library init and cleanup calls: once per process, not once per lookup
$(B)/tests/test_agent_dns: MODE_LDFLAGS += -Wl,--wrap=ares_library_init,--wrap=ares_library_cleanup
# every other recv and send fails EINTR, as a signal mid-call makes it
$(B)/tests/test_agent_check_eintr: MODE_LDFLAGS += -Wl,--wrap=recv,--wrap=send

.PRECIOUS: $(BUILD)/fuzz/tests/fuzz/%.o
$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/tests/fuzz/fuzz_%.o $(SUPPORT_OBJ) $(B)/libgx.a
	@echo "  LD      $@"
	$(Q)$(CC) $(MODE_LDFLAGS) -o $@ $^ $(LIBS)

# the test_agent_check* binaries share their fixtures (tests/unit/check_fixture.c), and so
# does test_wire_golden (the check service's answers)
CHECK_UNIT_BINS := $(filter $(B)/tests/test_agent_check% $(B)/tests/test_wire_golden,$(UNIT_BINS))
$(CHECK_UNIT_BINS): $(B)/tests/%: $(B)/tests/unit/%.o $(SUPPORT_OBJ) \
		$(B)/tests/unit/check_fixture.o $(B)/libgx.a
	@echo "  LD      $@"
	$(Q)$(CC) $(MODE_LDFLAGS) -o $@ $^ $(LIBS) -lcmocka

$(B)/bench/bench_%: $(B)/tests/bench/bench_%.o $(SUPPORT_OBJ) $(B)/libgx.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(MODE_LDFLAGS) -o $@ $^ $(LIBS) 2> $@.ldlog || { cat $@.ldlog; exit 1; }

# The static binary for arm64 (GH200 and GB200 nodes): build-arm64/gxboot, stripped.
arm64:
	$(Q)$(MAKE) --no-print-directory ARCH=arm64 BUILD=build-arm64 MODE=release \
		build-arm64/release/gxboot
	$(Q)aarch64-linux-gnu-strip -o build-arm64/gxboot build-arm64/release/gxboot

debug:
	$(Q)$(MAKE) --no-print-directory MODE=debug $(BUILD)/debug/gxboot unit-bins
asan:
	$(Q)$(MAKE) --no-print-directory MODE=asan $(BUILD)/asan/gxboot unit-bins
release:
	$(Q)$(MAKE) --no-print-directory build/gxboot
unit-bins: $(UNIT_BINS)
.PHONY: unit-bins tools tools-mpich

# Small tools the e2e tests and bench use (MPI program), built on demand.
tools: build/tools/mpi_allreduce
build/tools/mpi_allreduce: tests/e2e/mpi_allreduce.c
	@mkdir -p $(dir $@)
	$(Q)mpicc -O2 -o $@ $<
# the same program against MPICH (Hydra, ch4:ofi; the Hydra e2e): mpicc stays OpenMPI's
tools-mpich: build/tools/mpi_allreduce_mpich
build/tools/mpi_allreduce_mpich: tests/e2e/mpi_allreduce.c
	@mkdir -p $(dir $@)
	$(Q)mpicc.mpich -O2 -o $@ $<

deps:
	$(Q)tests/deps.sh

check:
	$(Q)tests/deps.sh --if-missing
	$(Q)tests/check.sh

image:
	$(Q)container/image.sh

# gxboot.1 is made from the binary's help texts, their one source (tests/man.py); it is
# committed so `man ./gxboot.1` works on a checkout, and `make check` fails when it and the
# binary disagree.
man: all
	$(Q)tests/man.py build/gxboot > gxboot.1.tmp && mv gxboot.1.tmp gxboot.1

# Where packagers expect them: DESTDIR for a staging root, PREFIX for the layout.
install: all
	install -D -m 0755 build/gxboot $(DESTDIR)$(PREFIX)/bin/gxboot
	install -D -m 0644 gxboot.1 $(DESTDIR)$(PREFIX)/share/man/man1/gxboot.1
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/gxboot $(DESTDIR)$(PREFIX)/share/man/man1/gxboot.1

unit: debug
	$(Q)tests/run-unit.sh build/debug

valgrind: debug
	$(Q)tests/run-unit.sh build/debug valgrind

fuzz-bins:
	$(Q)$(MAKE) --no-print-directory MODE=fuzz $(FUZZ_BINS)
fuzz:
	$(Q)tests/fuzz/run.sh $(or $(FUZZ_SECONDS),60)

bench: all
	$(Q)$(MAKE) --no-print-directory MODE=release build/release/bench/bench_rdzv
	$(Q)tests/bench/run.sh

demo:
	$(Q)tests/deps.sh --if-missing
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/e2e/demo.sh

FMT_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
fmt:
	$(Q)clang-format-14 -i $(sort $(FMT_SRCS))
fmt-check:
	$(Q)clang-format-14 --dry-run -Werror $(sort $(FMT_SRCS))
lint: fmt-check
	$(Q)tests/lint.sh --selftest
	$(Q)tests/lint.sh

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
