/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * winner.c - which malloc does the process bind?  (secretmem-heap(7),
 * ANOTHER ALLOCATOR)
 *
 * The dynamic linker binds every reference to malloc to the first
 * definition in the lookup order: the program, then LD_PRELOAD in order,
 * then the libraries.  The module is in charge only when that definition is
 * its own and the next one is glibc's.  Two other cases happen:
 *  - another allocator comes before it (earlier in LD_PRELOAD, or the
 *    program defines malloc): the process's malloc is the other one's, and
 *    only the functions it lacks would reach the module;
 *  - another allocator comes after it (later in LD_PRELOAD, a library the
 *    program links): malloc is the module's, but the other allocator serves
 *    its own internal calls - jemalloc's and mimalloc's operator new - and
 *    their blocks reach the module's free(), which would hand them to glibc
 *    (abort: "free(): invalid pointer").
 * In both the module stays out of the way: every call it receives goes to
 * the other allocator's own function (a pass-through), so that each block
 * is freed by the allocator that made it, and a function the other one
 * lacks goes where it would go without the module, to glibc's; it says so
 * once and publishes
 * "inactive" with the reason on its figures page.  Another copy of this
 * module ahead of it is not another allocator: that copy is in charge, this
 * one says nothing.
 *
 * The lookups use dlsym(), which may allocate: call only while re-entry
 * goes to the early arena (heap.c's init).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "hp.h"
#include "../preload/dynobj.h"

#define MODULE_NAME "libsecretmem-heap.so"

/* The other allocator's own functions, else glibc's. */
static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*memalign)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	size_t (*usable)(void *);
} other;

/* 1 if the list (entries separated by ':' or white space) names the file
 * name (as its last path component). */
static int names_file(const char *list, const char *name)
{
	size_t mlen = strlen(name);

	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ": \t\n");
		const char *base = p + l;

		while (base > p && base[-1] != '/')
			base--;
		if ((size_t)(p + l - base) == mlen && memcmp(base, name, mlen) == 0)
			return 1;
		p += l;
		while (*p == ':' || *p == ' ' || *p == '\t' || *p == '\n')
			p++;
	}
	return 0;
}

int hp_preloads(const char *name)
{
	const char *v = getenv("LD_PRELOAD");
	char buf[4096];

	if (v && names_file(v, name))
		return 1;
	long fd = syscall(SYS_openat, AT_FDCWD, "/etc/ld.so.preload", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	long n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return names_file(buf, name);
}

int hp_requested(void)
{
	return hp_preloads(MODULE_NAME);
}

/* The walk of the objects in lookup order: the first other one that
 * defines malloc or free. */
struct walk {
	uintptr_t self, libc;  /* an address inside this module, inside glibc */
	int seen_self;
	int found;             /* 0, or HP_WIN_OTHER / HP_WIN_TWIN           */
	int before;            /* it comes before this module                 */
	struct sm_dynobj o;
	struct sm_dynobj glibc;
	int have_glibc;
};

static int is_module(const char *path)
{
	const char *base = strrchr(path, '/');

	return strcmp(base ? base + 1 : path, MODULE_NAME) == 0;
}

static int walk_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	struct sm_dynobj o;

	(void)size;
	if (sm_dyn_open(info, &o) != 0)
		return 0;
	if (w->self >= o.lo && w->self < o.hi) {
		w->seen_self = 1;
		return 0;
	}
	/* the dynamic linker: glibc before 2.26 exported its start-up malloc */
	if (info->dlpi_addr == getauxval(AT_BASE))
		return 0;
	if (w->libc >= o.lo && w->libc < o.hi) {
		w->glibc = o;
		w->have_glibc = 1;
		return 0;
	}
	if (w->found || (!sm_dyn_defines(&o, "malloc") && !sm_dyn_defines(&o, "free")))
		return 0;
	if (is_module(o.name) && w->seen_self)
		return 0; /* a copy after this one: it is the one out of the way */
	w->found = is_module(o.name) ? HP_WIN_TWIN : HP_WIN_OTHER;
	w->before = !w->seen_self;
	w->o = o;
	return 0; /* on, to glibc */
}

/* The object's own function name, or NULL. */
static void *fn_of(const struct sm_dynobj *o, const char *name)
{
	const ElfW(Sym) *s = sm_dyn_defines(o, name);

	if (!s)
		return NULL;
	if ((s->st_info & 0xf) != STT_GNU_IFUNC)
		return (void *)(o->base + s->st_value);
	/* the resolver is not the function: ask the loader, and keep the
	 * answer only if it lies in that object */
	void *d = dlsym(RTLD_DEFAULT, name);
	if (!d || (uintptr_t)d < o->lo || (uintptr_t)d >= o->hi)
		d = dlsym(RTLD_NEXT, name);
	return d && (uintptr_t)d >= o->lo && (uintptr_t)d < o->hi ? d : NULL;
}

/* The winner's function name, else glibc's. */
static void *own_fn(const struct walk *w, const char *name)
{
	void *f = fn_of(&w->o, name);

	return f || !w->have_glibc ? f : fn_of(&w->glibc, name);
}

int hp_winner_check(char *reason, size_t len, const char **advice)
{
	struct walk w;

	memset(&w, 0, sizeof(w));
	w.self = (uintptr_t)hp_winner_check;
	/* glibc itself: mimalloc defines __libc_malloc too, not this */
	w.libc = (uintptr_t)gnu_get_libc_version;
	dl_iterate_phdr(walk_one, &w);
	if (w.found != HP_WIN_OTHER)
		return w.found ? HP_WIN_TWIN : HP_WIN_US;
	if (!w.o.name[0]) {
		char exe[256];
		ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		exe[k > 0 ? k : 0] = '\0';
		snprintf(reason, len, "another allocator holds malloc: the program itself (%s)", k > 0 ? exe : "?");
		*advice = "the program's own malloc cannot be replaced: run it without heap mode, or build it with "
			  "glibc's malloc";
	} else {
		const char *base = strrchr(w.o.name, '/');
		const char *env = getenv("LD_PRELOAD");

		snprintf(reason, len, "another allocator holds malloc: %s (loaded %s the module)", w.o.name,
			 w.before ? "before" : "after");
		base = base ? base + 1 : w.o.name;
		if (env && names_file(env, base))
			*advice = "take it out of LD_PRELOAD to protect the heap";
		else if (hp_preloads(base))
			*advice = "take it out of /etc/ld.so.preload to protect the heap";
		else
			*advice = "the program links it, so heap mode cannot protect this program's heap";
	}
	*(void **)&other.malloc = own_fn(&w, "malloc");
	*(void **)&other.free = own_fn(&w, "free");
	*(void **)&other.calloc = own_fn(&w, "calloc");
	*(void **)&other.realloc = own_fn(&w, "realloc");
	*(void **)&other.memalign = own_fn(&w, "memalign");
	*(void **)&other.posix_memalign = own_fn(&w, "posix_memalign");
	*(void **)&other.aligned_alloc = own_fn(&w, "aligned_alloc");
	*(void **)&other.usable = own_fn(&w, "malloc_usable_size");
	return HP_WIN_OTHER;
}

void *hp_other_alloc(size_t align, size_t size, int zero)
{
	void *p = NULL;

	if (align <= 16 && zero && other.calloc)
		return other.calloc(1, size);
	if (align <= 16 && other.malloc)
		p = other.malloc(size);
	else if (align > 16 && other.memalign)
		p = other.memalign(align, size);
	else if (align > 16 && other.posix_memalign) {
		int rc = other.posix_memalign(&p, align, size);
		if (rc) {
			errno = rc;
			p = NULL;
		}
	} else if (align > 16 && other.aligned_alloc && size <= SIZE_MAX - align)
		p = other.aligned_alloc(align, (size + align - 1) & ~(align - 1));
	else
		errno = ENOMEM; /* it has no function for this request */
	if (p && zero)
		memset(p, 0, size);
	return p;
}

void hp_other_free(void *p)
{
	if (other.free)
		other.free(p);
}

void *hp_other_realloc(void *p, size_t size)
{
	if (other.realloc)
		return other.realloc(p, size);
	errno = ENOMEM;
	return NULL;
}

size_t hp_other_usable(void *p)
{
	return other.usable ? other.usable(p) : 0;
}
