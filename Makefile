# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# secretmem - plain GNU make.
#   make                      library, CLI, preload module into build/
#   make check                build and run every test (test/run.sh)
#   make check SANITIZE=address,undefined   the same under the sanitizers
#   make check VALGRIND=1     the same under valgrind memcheck
#   make bench                build and run the allocator benchmark
#   make fuzz                 build the libFuzzer target (clang)
#   make wheel                the Python binding as a wheel in build/wheel/
#                             (PYTHON=any CPython 3.8+, WHEEL_OUT=dir)
#   make install PREFIX=/usr/local DESTDIR=   (also LIBDIR, INCLUDEDIR, BINDIR,
#                             MANDIR, PKGLIBDIR); make uninstall with the same
#   make WERROR=0             warnings do not stop the build (distribution flags)
#   CPPFLAGS, CFLAGS, LDFLAGS are honoured; -D_FORTIFY_SOURCE=2 is added only
#   when they do not set _FORTIFY_SOURCE themselves.

# The version lives in one place: include/secretmem.h.
VERSION := $(shell sed -n 's/^\#define SECRETMEM_VERSION_STRING "\(.*\)"$$/\1/p' include/secretmem.h)
SOMAJOR := 1
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
PKGLIBDIR ?= $(LIBDIR)/secretmem

CC ?= cc
OPT ?= -O2 -g
WERROR ?= 1
WARN := -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -Wmissing-prototypes -Wstrict-prototypes \
	-Wcast-qual -Wundef -Wshadow -Wpointer-arith -Wformat=2
# A distribution's own -D_FORTIFY_SOURCE=3 (or -U_FORTIFY_SOURCE) wins; ours
# is undefined first because some compilers predefine it.
FORTIFY := $(if $(findstring _FORTIFY_SOURCE,$(CPPFLAGS) $(CFLAGS)),,-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2)
HARDEN := -fstack-protector-strong -fstack-clash-protection $(FORTIFY)
CFLAGS ?=
ALL_CFLAGS := -std=c11 $(OPT) $(WARN) $(HARDEN) -Iinclude -pthread $(CPPFLAGS) $(CFLAGS)
LDHARDEN := -Wl,-z,relro -Wl,-z,now
ALL_LDFLAGS := -pthread $(LDHARDEN) $(LDFLAGS)

# Sanitizer and valgrind builds go to their own directory so they never mix
# with the normal objects.
ifneq ($(SANITIZE),)
BUILD ?= build/san-$(subst $(comma),-,$(SANITIZE))
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
else
BUILD ?= build
endif
comma := ,

LIB_SRC := $(wildcard src/*.c)
LIB_OBJ := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC))
TOOL_SRC := $(wildcard tools/*.c)
TOOL_OBJ := $(patsubst tools/%.c,$(BUILD)/obj/tools/%.o,$(TOOL_SRC))
PRELOAD_SRC := $(wildcard preload/*.c)
PRELOAD_OBJ := $(patsubst preload/%.c,$(BUILD)/obj/preload/%.o,$(PRELOAD_SRC))
HEAP_SRC := $(wildcard heap/*.c)
HEAP_OBJ := $(patsubst heap/%.c,$(BUILD)/obj/heap/%.o,$(HEAP_SRC))
TEST_SRC := $(wildcard test/t_*.c)
TEST_BIN := $(patsubst test/%.c,$(BUILD)/test/%,$(TEST_SRC))
TEST_LIB_SRC := $(filter-out $(TEST_SRC),$(wildcard test/*.c))
EXAMPLE_SRC := $(wildcard examples/*.c)
EXAMPLE_BIN := $(patsubst examples/%.c,$(BUILD)/examples/%,$(EXAMPLE_SRC))

SHLIB := $(BUILD)/libsecretmem.so.$(VERSION)
SONAME := libsecretmem.so.$(SOMAJOR)
STLIB := $(BUILD)/libsecretmem.a
INTLIB := $(BUILD)/libsecretmem-internal.a
CONFIG := $(BUILD)/config.mk
CLI := $(BUILD)/secretmem
PRELOAD := $(BUILD)/libsecretmem-preload.so
HEAPMOD := $(BUILD)/libsecretmem-heap.so

.PHONY: all check bench bench-steps fuzz install uninstall clean examples FORCE
all: $(SHLIB) $(BUILD)/libsecretmem.so $(STLIB) $(BUILD)/secretmem.pc $(CLI) \
	$(if $(PRELOAD_SRC),$(PRELOAD)) $(if $(HEAP_SRC),$(HEAPMOD)) $(EXAMPLE_BIN)

$(BUILD)/obj/%.o: src/%.c include/secretmem.h $(wildcard src/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

# nosimd.c reads and copies secret bytes: general-purpose registers only, so
# that no secret stays behind in vector registers (see the file).
NOSIMD_FLAGS := $(if $(filter x86_64% aarch64% i%86%,$(shell $(CC) -dumpmachine)),-mgeneral-regs-only)
$(BUILD)/obj/nosimd.o: ALL_CFLAGS += $(NOSIMD_FLAGS)

$(SHLIB): $(LIB_OBJ) src/libsecretmem.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/libsecretmem.map \
		-Wl,-z,defs $(ALL_LDFLAGS) -o $@ $(LIB_OBJ)

$(BUILD)/libsecretmem.so: $(SHLIB)
	ln -sf libsecretmem.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

# The static library is one relocatable object in which every internal
# (hidden) symbol is made local: it defines only the public secretmem_*
# names, so it never clashes with an application's own os_lock or
# region_create.  The tests, which reach the internals, link the plain
# archive of the objects instead.
OBJCOPY ?= objcopy
$(BUILD)/obj/libsecretmem-static.o: $(LIB_OBJ)
	$(CC) -r -nostdlib -o $@.tmp $^
	$(OBJCOPY) --localize-hidden $@.tmp $@
	rm -f $@.tmp

$(STLIB): $(BUILD)/obj/libsecretmem-static.o
	rm -f $@
	ar rcs $@ $^

$(INTLIB): $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

# The configuration that ends up inside built files (the .pc file, the CLI's
# module directory).  Rewritten only when a value changes, so that a later
# `make install PREFIX=/opt/x` rebuilds exactly what embeds the old prefix.
$(CONFIG): FORCE
	@mkdir -p $(@D)
	@printf '%s\n' 'PREFIX=$(PREFIX)' 'LIBDIR=$(LIBDIR)' 'INCLUDEDIR=$(INCLUDEDIR)' \
		'BINDIR=$(BINDIR)' 'MANDIR=$(MANDIR)' 'PKGLIBDIR=$(PKGLIBDIR)' > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; echo "configuration: $@ (PREFIX=$(PREFIX))"; fi

$(BUILD)/secretmem.pc: src/secretmem.pc.in Makefile $(CONFIG)
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

# The CLI uses only the public API; it is linked with the static library so
# that it runs from the build tree and after install alike.
$(BUILD)/obj/tools/%.o: tools/%.c include/secretmem.h $(wildcard tools/*.h) heap/heapstats.h preload/plstats.h $(CONFIG)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DSECRETMEM_PKGLIBDIR='"$(PKGLIBDIR)"' -c $< -o $@

$(CLI): $(TOOL_OBJ) $(STLIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $(TOOL_OBJ) $(STLIB)

# The preload module carries its own copy of the library (no dependency on
# libsecretmem.so at run time) and resolves OpenSSL at run time (no -lcrypto).
# -Isrc: memfn.c frees with the copy's sm_free_if_ours (internal.h).
$(BUILD)/obj/preload/%.o: preload/%.c include/secretmem.h $(wildcard preload/*.h) src/internal.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Isrc -fPIC -fvisibility=hidden -c $< -o $@

# exports.map: only the OpenSSL/stdio interposers, not the library's own
# secretmem_* (a program linking libsecretmem.so keeps its own allocator).
$(PRELOAD): $(PRELOAD_OBJ) $(LIB_OBJ) preload/exports.map
	$(CC) -shared -Wl,-z,defs -Wl,--version-script=preload/exports.map $(ALL_LDFLAGS) \
		-o $@ $(PRELOAD_OBJ) $(LIB_OBJ) -ldl

# The heap module (secretmem-heap(7)): the malloc API on its own hidden copy
# of the library, which it reaches inside (slab.h), hence -Isrc.
$(BUILD)/obj/heap/%.o: heap/%.c include/secretmem.h $(wildcard heap/*.h) $(wildcard src/*.h) $(wildcard preload/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Isrc -fPIC -fvisibility=hidden -c $< -o $@

# dynobj.o and dlfrom.o (a loaded object's symbols; dlopen with the
# caller's search path) are the preload module's, shared.
HEAP_SHARED_OBJ := $(BUILD)/obj/preload/dynobj.o $(BUILD)/obj/preload/dlfrom.o
$(HEAPMOD): $(HEAP_OBJ) $(HEAP_SHARED_OBJ) $(LIB_OBJ) preload/exports-heap.map
	$(CC) -shared -Wl,-z,defs -Wl,--version-script=preload/exports-heap.map $(ALL_LDFLAGS) \
		-o $@ $(HEAP_OBJ) $(HEAP_SHARED_OBJ) $(LIB_OBJ) -ldl

$(BUILD)/examples/%: examples/%.c $(STLIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(STLIB)

# Tests link the internal archive: they reach the fault-injection hooks and
# the internal header, which neither library exports.  They misuse the API
# on purpose (double free, use after free, impossible sizes, the usable size
# past the request), which the header's attributes would flag: they are built
# without them (test/t_adopt_attrs checks the attributes).
# The helpers in test/*.c (tlib, scan, ...) are compiled once into an archive.
TEST_CFLAGS = $(ALL_CFLAGS) -DSECRETMEM_NO_ATTRIBUTES -D_GNU_SOURCE -Isrc -Itest
TEST_LIB_OBJ := $(patsubst test/%.c,$(BUILD)/obj/test/%.o,$(TEST_LIB_SRC))
TESTLIB := $(BUILD)/libtesthelp.a
$(BUILD)/obj/test/%.o: test/%.c $(wildcard test/*.h) include/secretmem.h $(wildcard src/*.h) heap/heapstats.h
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

$(TESTLIB): $(TEST_LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/test/%: test/%.c $(TESTLIB) $(wildcard test/*.h) heap/heapstats.h $(INTLIB) $(STLIB)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(TESTLIB) $(INTLIB)

# With a clang that has libFuzzer, check also builds the fuzz target, and
# test/t_rel_fuzz_run runs it for 60 s (SECRETMEM_FUZZ_SECONDS=n); FUZZ=0
# leaves it out.  The probe compiles a stub (with the fuzz rule's coverage
# ignore list, which older clangs lack), so only when check is a goal.
FUZZ_CC ?= clang
FUZZ ?= 1
ifneq ($(filter check,$(MAKECMDGOALS)),)
HAVE_FUZZ := $(if $(filter 1,$(FUZZ)),$(shell printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return (int)(d == 0 && n); }\n' | \
	$(FUZZ_CC) -x c -fsanitize=fuzzer -fsanitize-coverage-ignorelist=fuzz/coverage-ignore.txt -o /dev/null - >/dev/null 2>&1 && echo 1))
endif
# Helpers the preload tests run under the module: OpenSSL programs of our own.
# The proofs of locked library memory (test/t_heap_lock_*) have one per
# library (test/helpers/lock_*, sharing lockkeys.h), linked with it; Botan's
# is C++.
HELPER_SRC := $(wildcard test/helpers/*.c)
HELPER_CXX_SRC := $(wildcard test/helpers/*.cc)
HELPER_BIN := $(patsubst test/helpers/%.c,$(BUILD)/test/helpers/%,$(HELPER_SRC)) \
	$(patsubst test/helpers/%.cc,$(BUILD)/test/helpers/%,$(HELPER_CXX_SRC))
HELPER_LIBS = -lcrypto -ldl
$(BUILD)/test/helpers/lock_sodium: HELPER_LIBS = -lsodium
$(BUILD)/test/helpers/lock_gcrypt: HELPER_LIBS = -lgcrypt
$(BUILD)/test/helpers/%: test/helpers/%.c $(wildcard test/helpers/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -D_GNU_SOURCE $(ALL_LDFLAGS) -o $@ $< $(HELPER_LIBS)
CXX ?= g++
BOTAN_CFLAGS = $(shell pkg-config --cflags botan-2 2>/dev/null || echo -I/usr/include/botan-2)
HELPER_CXXFLAGS = -std=c++17 $(OPT) -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) $(HARDEN) -pthread \
	$(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all) $(CPPFLAGS) $(CXXFLAGS)
$(BUILD)/test/helpers/%: test/helpers/%.cc $(wildcard test/helpers/*.h)
	@mkdir -p $(@D)
	$(CXX) $(HELPER_CXXFLAGS) $(BOTAN_CFLAGS) -D_GNU_SOURCE $(ALL_LDFLAGS) -o $@ $< -lbotan-2

check: all $(TEST_BIN) $(HELPER_BIN) $(if $(HAVE_FUZZ),fuzz)
	SECRETMEM_BUILD=$(BUILD) VALGRIND=$(VALGRIND) sh test/run.sh $(TEST_BIN)

# ---- benchmark (issue: allocator) ----------------------------------------
# bench/main.c lists what each file holds; pair_steps.c, heap_fork.c,
# tls_alloc.c and bench/fork/ are programs of their own
BENCH_SRC := $(addprefix bench/,main.c harness.c allocators.c inproc.c chain.c growth.c sweep.c \
	report.c)
BENCH_HDR := bench/bench.h bench/loops.h
BENCH_LIBS ?= -lsodium -lcrypto -lm
$(BUILD)/bench/bench: $(BENCH_SRC) $(BENCH_HDR) $(STLIB) include/secretmem.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -Iinclude -pthread -D_GNU_SOURCE \
		-o $@ $(BENCH_SRC) $(STLIB) $(BENCH_LIBS) -pthread

bench: $(BUILD)/bench/bench
	$(BUILD)/bench/bench $(BENCH_ARGS)

# instructions per operation of the pair, the batch and random 16-512 B,
# by single-stepping (bench/pair_steps.c)
$(BUILD)/bench/pair_steps: bench/pair_steps.c $(STLIB)
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -Iinclude -pthread -D_GNU_SOURCE \
		-o $@ $< $(STLIB) -pthread -ldl

bench-steps: $(BUILD)/bench/pair_steps
	for w in pair batch random; do for a in secretmem glibc mimalloc; do \
		$(BUILD)/bench/pair_steps $$a $$w || exit 1; done; done

# ---- fuzzing (issue: reliability) ----------------------------------------
FUZZ_SRC := $(wildcard fuzz/*.c)
# the sources define _GNU_SOURCE themselves
$(BUILD)/fuzz/fuzz_alloc: $(FUZZ_SRC) $(LIB_SRC) include/secretmem.h $(wildcard src/*.h) fuzz/coverage-ignore.txt
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c11 -O1 -g -Iinclude -Isrc -pthread \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-fsanitize-coverage-ignorelist=fuzz/coverage-ignore.txt \
		-o $@ $(FUZZ_SRC) $(LIB_SRC)

fuzz: $(BUILD)/fuzz/fuzz_alloc

# ---- Debian packages (issue 15) ---------------------------------------------
# dpkg-buildpackage runs `make clean` and writes the .debs to the parent
# directory, so the packages are built from a copy of the tree (without build
# directories or .git) in $(DEB_OUT)/secretmem; the .debs, .changes and
# .buildinfo land in $(DEB_OUT).  DEB_BUILD_OPTIONS=nocheck skips the smoke
# tests of debian/rules.  The package build does not inherit this make's
# variables (SANITIZE, BUILD, ...): debian/rules sets its own.  make exports
# command-line variables into the environment as well, hence the env -u's.
DEB_OUT ?= $(BUILD)/deb
.PHONY: deb
deb:
	rm -rf $(DEB_OUT) && mkdir -p $(DEB_OUT)/secretmem
	tar -c --exclude=./build --exclude=./$(BUILD) --exclude=./.git --exclude=__pycache__ . | \
		tar -x -C $(DEB_OUT)/secretmem
	cd $(DEB_OUT)/secretmem && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE -u BUILD dpkg-buildpackage -us -uc -b
	@ls -1 $(DEB_OUT)/*.deb

# ---- Python wheel (issue 33) -------------------------------------------------
# A pure-Python wheel of python/secretmem, written by the binding's own build
# backend (standard library only: zipfile), which `pip install ./python` and
# the Debian package use too.  Any CPython 3.8+ makes the same file.
PYTHON ?= python3
WHEEL_OUT ?= $(BUILD)/wheel
.PHONY: wheel
wheel:
	@mkdir -p $(WHEEL_OUT)
	$(PYTHON) python/build_backend/secretmem_backend.py wheel $(WHEEL_OUT)

# ---- install ---------------------------------------------------------------
MAN_PAGES := $(wildcard man/man*/*.[0-9])
install: all
	install -D -m 0755 $(SHLIB) $(DESTDIR)$(LIBDIR)/libsecretmem.so.$(VERSION)
	ln -sf libsecretmem.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libsecretmem.so
	install -D -m 0644 $(STLIB) $(DESTDIR)$(LIBDIR)/libsecretmem.a
	install -D -m 0644 include/secretmem.h $(DESTDIR)$(INCLUDEDIR)/secretmem.h
	install -D -m 0644 $(BUILD)/secretmem.pc $(DESTDIR)$(LIBDIR)/pkgconfig/secretmem.pc
	install -D -m 0755 $(CLI) $(DESTDIR)$(BINDIR)/secretmem
	$(if $(PRELOAD_SRC),install -D -m 0755 $(PRELOAD) $(DESTDIR)$(PKGLIBDIR)/libsecretmem-preload.so)
	$(if $(HEAP_SRC),install -D -m 0755 $(HEAPMOD) $(DESTDIR)$(PKGLIBDIR)/libsecretmem-heap.so)
	for f in $(MAN_PAGES); do \
		s=$${f##*.}; install -D -m 0644 $$f $(DESTDIR)$(MANDIR)/man$$s/$${f##*/} || exit 1; \
	done

# Removes what install put there (same variables); directories only if empty.
uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libsecretmem.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/libsecretmem.so $(DESTDIR)$(LIBDIR)/libsecretmem.a \
		$(DESTDIR)$(INCLUDEDIR)/secretmem.h $(DESTDIR)$(LIBDIR)/pkgconfig/secretmem.pc \
		$(DESTDIR)$(BINDIR)/secretmem $(DESTDIR)$(PKGLIBDIR)/libsecretmem-preload.so \
		$(DESTDIR)$(PKGLIBDIR)/libsecretmem-heap.so
	for f in $(MAN_PAGES); do s=$${f##*.}; rm -f $(DESTDIR)$(MANDIR)/man$$s/$${f##*/}; done
	rmdir $(DESTDIR)$(PKGLIBDIR) 2>/dev/null || true

clean:
	rm -rf build

# ---- heap module (issue 11): fork() per MiB of live heap, bench/heap_fork.sh --
$(BUILD)/bench/heap_fork: bench/heap_fork.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -o $@ $<

# ---- heap mode's stack clearing: thread start and end, bench/stack_bench.py ----
$(BUILD)/bench/thread_churn: bench/thread_churn.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -pthread -o $@ $<

# ---- heap mode's adoption of locked memory against the secret-page floor ----
$(BUILD)/bench/adopt_bench: bench/adopt_bench.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -o $@ $<

# ---- fork benchmark (issue 10): how long fork() blocks under copy ----------
$(BUILD)/bench/fork_bench: bench/fork/fork_bench.c $(STLIB)
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -Iinclude -pthread -D_GNU_SOURCE \
		-o $@ $< $(STLIB) -pthread
