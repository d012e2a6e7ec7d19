# Top-level, non-recursive Makefile. Each component contributes a module.mk
# that names its programs; library sources are every src/*.c that is not a
# program's main file (*_main.c). Everything is built under build/.

.DEFAULT_GOAL := all
SHELL := /bin/bash
B := build

# config.mk is (re)made by configure; a fresh clone gets its system packages
# installed first, so `make check` alone works on a new Debian machine.
-include config.mk
config.mk: configure VERSION
	@bash test/install-deps.sh build
	./configure $(CONFIGURE_ARGS)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2 \
	-Wno-format-nonliteral -Wvla
COMPONENTS := dttools resource_monitor work_queue batch_drivers makeflow
# A component's src/ may be split into sides (work_queue/src/{proto,master,worker,catalog,status});
# every folder of sources is on the include path, and lint enforces who may include whom.
SRC_DIRS := $(foreach c,$(COMPONENTS),$(c)/src $(patsubst %/,%,$(sort $(dir $(wildcard $(c)/src/*/*.[ch])))))
INCLUDES := -I. $(addprefix -I,$(SRC_DIRS))
ALL_CFLAGS = -std=gnu11 $(OPT) $(SAN_FLAGS) $(WARN) -D_GNU_SOURCE $(INCLUDES) \
	$(DEP_CFLAGS) $(PIC_CFLAGS) $(EXTRA_CFLAGS) -MMD -MP
ALL_LDFLAGS = $(SAN_FLAGS) $(EXTRA_LDFLAGS)
ALL_LIBS = $(DEP_LIBS) -lm

# Library name and link chain per component (a component links itself and
# every component to its left; see doc/design.md "Layering").
LIB_dttools := dttools
LIB_resource_monitor := rmonitor
LIB_work_queue := work_queue
LIB_batch_drivers := batch
LIB_makeflow := makeflow

PROGS :=
STATIC_PROGS :=
FUZZERS :=
include $(foreach c,$(COMPONENTS),$(c)/module.mk)

# ---- derived lists -------------------------------------------------------
src_c = $(wildcard $(1)/src/*.c $(1)/src/*/*.c)
MAIN_SRCS := $(foreach c,$(COMPONENTS),$(filter %_main.c,$(call src_c,$(c))))
lib_srcs = $(filter-out $(MAIN_SRCS),$(call src_c,$(1)))
obj = $(patsubst %.c,$(B)/%.o,$(1))
libfile = $(if $(call lib_srcs,$(1)),$(B)/lib/lib$(LIB_$(1)).a)
# Libraries to link for component $(1): itself and everything to its left,
# right-most first (static link order).
chain_dttools := dttools
chain_resource_monitor := resource_monitor $(chain_dttools)
chain_work_queue := work_queue $(chain_resource_monitor)
chain_batch_drivers := batch_drivers $(chain_work_queue)
chain_makeflow := makeflow $(chain_batch_drivers)
link_libs = $(foreach c,$(chain_$(1)),$(call libfile,$(c)))

ALL_LIBFILES := $(foreach c,$(COMPONENTS),$(call libfile,$(c)))
ALL_OBJS := $(call obj,$(foreach c,$(COMPONENTS),$(call src_c,$(c)) $(wildcard $(c)/test/*.c)))

# ---- external libraries per program and per library --------------------------
# A dependency is named by its pkg-config module (configure writes PKG_LIBS_<module> into
# config.mk) or `m` for libm. module.mk lists, per component, what its library uses itself
# (`comp_LIB_DEPS`, which its shared object links and its .pc file names) and, per program, what
# the program uses (`prog_DEPS`); a program without a list gets its whole chain's. Programs link
# with --no-as-needed, so the link line is exactly the NEEDED list, and e2e 04-install checks
# with `ldd -u` that every library a program names is used (doc/design.md, "Build").
dep_flags = $(foreach d,$(1),$(if $(filter m,$(d)),-lm,$(PKG_LIBS_$(d))))
chain_deps = $(sort $(foreach c,$(chain_$(1)),$($(c)_LIB_DEPS)))
prog_deps = $(if $(filter undefined,$(origin $(1)_DEPS)),$(call chain_deps,$($(1)_COMPONENT)),$($(1)_DEPS))
prog_libs = -Wl,--no-as-needed $(call dep_flags,$(call prog_deps,$(1)))
# A changed list relinks: programs and shared objects depend on their module.mk and config.mk.
$(foreach p,$(PROGS),$(eval $(B)/bin/$(p): $($(p)_COMPONENT)/module.mk config.mk))
# ---- end external libraries -------------------------------------------------------

define lib_rule
$(call libfile,$(1)): $(call obj,$(call lib_srcs,$(1)))
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach c,$(COMPONENTS),$(if $(call lib_srcs,$(c)),$(eval $(call lib_rule,$(c)))))

# ---- shared libraries -------------------------------------------------------
# The libraries of API_COMPONENTS are installed (doc/install.md), static and shared. Every
# object is compiled -fPIC (measured against the default PIE: no difference in build time, code
# 0.2% larger; -fno-semantic-interposition keeps inlining within a file), so the shared objects
# are linked from the static libraries' objects: lib*.so.VERSION with soname lib*.so.ABI, each
# against the shared objects of its chain and its own LIB_DEPS, with -z defs so nothing is left
# unresolved. The programs keep linking the static libraries. `make SHARED=no` builds (and
# `make install SHARED=no` installs) the static libraries only.
API_COMPONENTS := dttools resource_monitor work_queue batch_drivers
SHARED ?= yes
PIC_CFLAGS := -fPIC -fno-semantic-interposition
# A build directory whose objects predate -fPIC has no stamp: they are all rebuilt once.
$(ALL_OBJS): $(B)/.pic-objects
$(B)/.pic-objects:
	@mkdir -p $(@D)
	@touch $@
VERSION := $(shell cat VERSION)
version_word = $(word $(1),$(subst ., ,$(VERSION)))
# The ABI is the major version, or 0.MINOR while the major is 0 (any 0.x may change it).
SO_ABI := $(if $(filter 0,$(call version_word,1)),0.$(call version_word,2),$(call version_word,1))
soname = lib$(LIB_$(1)).so.$(SO_ABI)
sofile = $(B)/lib/lib$(LIB_$(1)).so.$(VERSION)
so_chain = $(wordlist 2,99,$(chain_$(1)))
define so_rule
$(call sofile,$(1)): $(call obj,$(call lib_srcs,$(1))) $(foreach c,$(call so_chain,$(1)),$(call sofile,$(c))) \
		$(1)/module.mk config.mk
	@mkdir -p $$(@D)
	$$(CC) -shared $$(ALL_LDFLAGS) -Wl,-soname,$(call soname,$(1)) -Wl,-z,defs -o $$@ \
		$$(filter %.o,$$^) -Wl,--no-as-needed -L$(B)/lib \
		$(foreach c,$(call so_chain,$(1)),-l$(LIB_$(c))) $(call dep_flags,$($(1)_LIB_DEPS))
	ln -sf $$(@F) $(B)/lib/$(call soname,$(1))
	ln -sf $(call soname,$(1)) $(B)/lib/lib$(LIB_$(1)).so
endef
$(foreach c,$(API_COMPONENTS),$(eval $(call so_rule,$(c))))
SHARED_LIBFILES := $(if $(filter yes,$(SHARED)),$(foreach c,$(API_COMPONENTS),$(call sofile,$(c))))
# ---- end shared libraries ---------------------------------------------------

# Programs: module.mk says `PROGS += name` and `name_COMPONENT := comp`;
# the main file is comp/src/name_main.c or comp/src/SIDE/name_main.c.
main_of = $(filter %/$(1)_main.c,$(MAIN_SRCS))
define prog_rule
$(B)/bin/$(1): $(call obj,$(call main_of,$(1))) $(call link_libs,$($(1)_COMPONENT))
	@mkdir -p $$(@D)
	$$(CC) $$(ALL_LDFLAGS) -o $$@ $$(filter %.o,$$^) $(call link_libs,$($(1)_COMPONENT)) $(call prog_libs,$(1))
endef
$(foreach p,$(PROGS),$(eval $(call prog_rule,$(p))))
PROG_FILES := $(addprefix $(B)/bin/,$(PROGS))

# Static programs: module.mk says `STATIC_PROGS += name`, `name_COMPONENT := comp` and, for
# sources of the tree compiled in, `name_SRCS := ...` (they must use the C library only). They
# link none of the tree's libraries, without sanitizers (a static binary cannot carry them):
# they run where no library of ours is (inside any image).
define static_prog_rule
$(B)/bin/$(1): $(call main_of,$(1)) $($(1)_SRCS) config.mk
	@mkdir -p $$(@D)
	$$(CC) -std=gnu11 -O2 $$(WARN) -D_GNU_SOURCE $$(INCLUDES) -static -o $$@ $$(filter %.c,$$^)
endef
$(foreach p,$(STATIC_PROGS),$(eval $(call static_prog_rule,$(p))))
PROG_FILES += $(addprefix $(B)/bin/,$(STATIC_PROGS))

# Scripts: module.mk says `SCRIPTS += name` and `name_SCRIPT := path`; copied into bin/ beside
# the programs and installed with them.
define script_rule
$(B)/bin/$(1): $($(1)_SCRIPT)
	@mkdir -p $$(@D)
	install -m 755 $$< $$@
endef
$(foreach s,$(SCRIPTS),$(eval $(call script_rule,$(s))))
SCRIPT_FILES := $(addprefix $(B)/bin/,$(SCRIPTS))

# ---- test-support libraries ------------------------------------------------
# COMPONENT/test/support/*.c (fixtures, fakes and loop helpers that tests share) is compiled into
# $(B)/lib/lib<LIB>_testsupport.a, which every unit test and helper of that component and of the
# components to its right links before the component libraries. Not installed. Test sources find
# the support headers on their include path ("ts_loop.h"); lint checks the layering of includes.
ts_srcs = $(wildcard $(1)/test/support/*.c)
ts_libfile = $(if $(call ts_srcs,$(1)),$(B)/lib/lib$(LIB_$(1))_testsupport.a)
test_link_libs = $(foreach c,$(chain_$(1)),$(call ts_libfile,$(c))) $(call link_libs,$(1))
TS_OBJS := $(call obj,$(foreach c,$(COMPONENTS),$(call ts_srcs,$(c))))
TEST_OBJS := $(call obj,$(foreach c,$(COMPONENTS),$(wildcard $(c)/test/*.c))) $(TS_OBJS)
$(TEST_OBJS): ALL_CFLAGS += $(addprefix -I,$(wildcard $(addsuffix /test/support,$(COMPONENTS))))
ALL_OBJS += $(TS_OBJS)
define ts_lib_rule
$(call ts_libfile,$(1)): $(call obj,$(call ts_srcs,$(1)))
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach c,$(COMPONENTS),$(if $(call ts_srcs,$(c)),$(eval $(call ts_lib_rule,$(c)))))
# ---- end of test-support libraries --------------------------------------------

# Unit tests: comp/test/test_*.c, one cmocka binary per module (linked with the test-support
# libraries above, then the component's library chain).
UNIT_SRCS := $(foreach c,$(COMPONENTS),$(wildcard $(c)/test/test_*.c))
define unit_rule
$(B)/$(basename $(1)): $(call obj,$(1)) $(call test_link_libs,$(firstword $(subst /, ,$(1))))
	@mkdir -p $$(@D)
	$$(CC) $$(ALL_LDFLAGS) -o $$@ $$(filter %.o,$$^) $(call test_link_libs,$(firstword $(subst /, ,$(1)))) $$(CMOCKA_LIBS) $$(ALL_LIBS)
endef
$(foreach t,$(UNIT_SRCS),$(eval $(call unit_rule,$(t))))
UNIT_BINS := $(addprefix $(B)/,$(basename $(UNIT_SRCS)))

# Test helper programs: comp/test/helper_*.c, plain programs used by suites.
HELPER_SRCS := $(foreach c,$(COMPONENTS),$(wildcard $(c)/test/helper_*.c))
$(foreach t,$(HELPER_SRCS),$(eval $(call unit_rule,$(t))))
HELPER_BINS := $(addprefix $(B)/,$(basename $(HELPER_SRCS)))

$(B)/%.o: %.c config.h | config.mk
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(if $(filter %/test/%,$<),$(CMOCKA_CFLAGS)) -c -o $@ $<

config.h: config.mk

-include $(ALL_OBJS:.o=.d)

# ---- targets --------------------------------------------------------------
.PHONY: all check check-unit check-e2e demo bench fuzz install uninstall clean \
	distclean lint format file-map deps tests

all: $(ALL_LIBFILES) $(SHARED_LIBFILES) $(PROG_FILES) $(SCRIPT_FILES)

tests: all $(UNIT_BINS) $(HELPER_BINS)

DEPS_GROUPS ?= build
check check-unit: DEPS_GROUPS = build test
bench: DEPS_GROUPS = build test bench
fuzz: DEPS_GROUPS = build test
deps:
	@bash test/install-deps.sh $(DEPS_GROUPS)

# `make check` runs every unit binary and end-to-end suite and ends with one
# line "N passed, N failed". SUITES=... limits the end-to-end suites.
check: deps
	@$(MAKE) --no-print-directory tests
	@bash test/run-tests.sh --build $(B) $(if $(SUITES),--suites "$(SUITES)")

check-unit: deps
	@$(MAKE) --no-print-directory tests
	@bash test/run-tests.sh --build $(B) --no-e2e

demo: deps
	@$(MAKE) --no-print-directory all
	@bash test/demo.sh $(B)

bench: deps
	@$(MAKE) --no-print-directory all $(B)/work_queue/test/helper_sim_workers \
		$(B)/work_queue/test/helper_master_bench $(B)/work_queue/test/helper_url_master
	@bash test/bench/run.sh $(B)

fuzz: deps
	@bash test/fuzz.sh $(B) $(or $(FUZZ_SECONDS),300)

# ---- install ----------------------------------------------------------------
# What is installed is an explicit list (doc/install.md): the programs, the libraries of
# API_COMPONENTS (static and shared), one pkg-config file per library, and the public
# headers below, which include nothing else of the tree (e2e 04-install compiles each alone).
DESTDIR ?=
BINDIR := $(DESTDIR)$(PREFIX)/bin
LIBDIR := $(DESTDIR)$(PREFIX)/lib
INCDIR := $(DESTDIR)$(PREFIX)/include/htc
MANDIR := $(DESTDIR)$(PREFIX)/share/man/man1
PCDIR := $(LIBDIR)/pkgconfig
PUBLIC_HEADERS := work_queue/src/master/work_queue.h batch_drivers/src/batch_queue.h \
	resource_monitor/src/rmonitor.h resource_monitor/src/rmsummary.h \
	resource_monitor/src/category.h dttools/src/htc_error.h
MAN_PAGES := $(wildcard doc/man/*.1)
# pkg-config file per installed library, made from COMP/NAME.pc.in: @LIBS_PRIVATE@ is the
# library's own external libraries (for `pkg-config --static`); Requires lines chain them.
PC_dttools := htc-dttools
PC_resource_monitor := htc-rmonitor
PC_work_queue := htc-work-queue
PC_batch_drivers := htc-batch
INSTALL_LIBFILES := $(foreach c,$(API_COMPONENTS),$(call libfile,$(c)))
pc_install = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	-e 's|@LIBS_PRIVATE@|$(strip $(call dep_flags,$($(1)_LIB_DEPS)))|g' \
	$(1)/$(PC_$(1)).pc.in >$(PCDIR)/$(PC_$(1)).pc
so_install = ln -sf lib$(LIB_$(1)).so.$(VERSION) $(LIBDIR)/$(call soname,$(1)) && \
	ln -sf $(call soname,$(1)) $(LIBDIR)/lib$(LIB_$(1)).so

install: all
	install -d $(BINDIR) $(LIBDIR) $(MANDIR) $(PCDIR)
	$(if $(PROG_FILES),install -m 755 $(PROG_FILES) $(BINDIR))
	$(if $(SCRIPT_FILES),install -m 755 $(SCRIPT_FILES) $(BINDIR))
	install -m 644 $(INSTALL_LIBFILES) $(LIBDIR)
	$(if $(SHARED_LIBFILES),install -m 755 $(SHARED_LIBFILES) $(LIBDIR))
	$(if $(SHARED_LIBFILES),$(foreach c,$(API_COMPONENTS),$(call so_install,$(c)) && ) true)
	rm -rf $(INCDIR)
	install -d $(INCDIR)
	install -m 644 $(PUBLIC_HEADERS) $(INCDIR)
	$(if $(MAN_PAGES),install -m 644 $(MAN_PAGES) $(MANDIR))
	$(foreach c,$(API_COMPONENTS),$(call pc_install,$(c)) && ) true

uninstall:
	rm -f $(addprefix $(BINDIR)/,$(PROGS) $(STATIC_PROGS) $(SCRIPTS))
	rm -f $(addprefix $(LIBDIR)/,$(notdir $(INSTALL_LIBFILES)))
	rm -f $(foreach c,$(API_COMPONENTS),$(LIBDIR)/lib$(LIB_$(c)).so.$(VERSION) \
		$(LIBDIR)/$(call soname,$(c)) $(LIBDIR)/lib$(LIB_$(c)).so)
	rm -f $(foreach c,$(API_COMPONENTS),$(PCDIR)/$(PC_$(c)).pc)
	rm -rf $(INCDIR)
	rm -f $(addprefix $(MANDIR)/,$(notdir $(MAN_PAGES)))

clean:
	rm -rf $(B)

distclean: clean
	rm -f config.mk config.h

# ---- style ------------------------------------------------------------------
C_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find $(COMPONENTS) -name '*.[ch]')

lint:
	@bash test/lint.sh

file-map:
	@bash test/file-map.sh >doc/file-map.md

format:
	clang-format -i $(C_FILES)
