/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * libs.c - every libcrypto in the process gets the mode in full.
 *
 * The mode's memory functions (memfn.c) must be handed to each libcrypto
 * with its CRYPTO_set_mem_functions() before that libcrypto's first
 * allocation.  A libcrypto the program is linked with is loaded before the
 * module's constructor runs; one loaded with dlopen() - Python's ssl
 * module, PAM or PKCS#11 modules - arrives later: the module exports
 * dlopen() and, when the real dlopen() returns (libcrypto's constructors do
 * not allocate), installs the functions in every new libcrypto before
 * anything can call it.  A process may hold two libcrypto copies (1.1 and
 * 3, or two builds): each is found and set up on its own.
 *
 * A libcrypto that arrives another way (glibc's internal loading of NSS
 * modules, dlmopen()) is noticed at its first call of one of the module's
 * exports (pl_libs_check); if it has allocated by then, the module says
 * exactly what is not covered for it.
 *
 * The program's own CRYPTO_set_mem_functions() is exported here too: in
 * mode all it is refused (0, as OpenSSL answers after its first
 * allocation) with a warning, so OpenSSL's memory stays secret; in mode
 * secure the program's functions are used, wrapped so that freed blocks are
 * still cleared.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "preload.h"
#include "dlfrom.h"
#include "dynobj.h"

#define MAX_OBJS 512
#define MAX_CRYPTO 8

enum lib_state {
	LIB_INSTALLED = 1, /* the mode's memory functions are in place       */
	LIB_REFUSED,       /* it had allocated already: set returned 0       */
	LIB_PROGRAM,       /* the program installed its own (mode secure)    */
};

struct obj {
	uintptr_t lo, hi; /* the object's mapped address range */
};

struct crypto {
	uintptr_t lo, hi;
	char path[200];
	int state;
	int late; /* arrived after start-up */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct obj objs[MAX_OBJS]; /* every object examined */
static int nobjs;                 /* published with release */
static int objs_full;
static struct crypto crypto[MAX_CRYPTO];
static int ncrypto;
static int started; /* the constructor's scan is done */
static int hint;    /* index of the last object a caller was found in */

static void *(*real_dlopen)(const char *file, int flags);

void *pl_dlopen(const char *file, int flags)
{
	void *(*fn)(const char *, int) = __atomic_load_n(&real_dlopen, __ATOMIC_ACQUIRE);

	if (!fn) {
		*(void **)&fn = dlsym(RTLD_NEXT, "dlopen");
		if (!fn)
			return NULL;
		__atomic_store_n(&real_dlopen, fn, __ATOMIC_RELEASE);
	}
	return fn(file, flags);
}

void *pl_sym_near(const void *caller, const char *name)
{
	Dl_info info;
	void *p = dlsym(RTLD_DEFAULT, name), *h;

	if (p || !caller || !dladdr(caller, &info) || !info.dli_fname)
		return p;
	h = pl_dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		p = dlsym(h, name);
		dlclose(h);
	}
	return p;
}

/* ---- finding objects ------------------------------------------------------ */

struct found {
	char name[MAX_OBJS][200];
	struct obj range[MAX_OBJS];
	int n;
};

static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
	struct found *f = data;
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	(void)size;
	if (f->n >= MAX_OBJS)
		return 1;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (hi <= lo)
		return 0;
	snprintf(f->name[f->n], sizeof(f->name[0]), "%s", info->dlpi_name ? info->dlpi_name : "");
	f->range[f->n].lo = lo;
	f->range[f->n].hi = hi;
	f->n++;
	return 0;
}

static int known(uintptr_t lo)
{
	for (int i = 0; i < nobjs; i++)
		if (objs[i].lo == lo)
			return 1;
	return 0;
}

static void install(struct crypto *c, pl_set_mem_fn set)
{
	pl_malloc_fn m;
	pl_realloc_fn r;
	pl_free_fn f;
	char msg[480];

	pl_memfn(pl_mode(), &m, &r, &f);
	if (set(m, r, f) == 1) {
		c->state = LIB_INSTALLED;
		return;
	}
	c->state = LIB_REFUSED;
	if (pl_mode() == PL_MODE_ALL)
		snprintf(msg, sizeof(msg),
			 "SECRETMEM_OPENSSL=all: %s had allocated memory before the module could install its "
			 "memory functions (%s): its OPENSSL_malloc() blocks stay in ordinary memory and are not "
			 "cleared when freed; only its secure heap (private keys) is secret memory",
			 c->path, c->late ? "it was loaded after start-up" : "before the module's constructor");
	else
		snprintf(msg, sizeof(msg),
			 "SECRETMEM_OPENSSL=secure: %s had allocated memory before the module could install its "
			 "memory functions (%s): its OPENSSL_malloc() blocks are not cleared when freed; its "
			 "secure heap (private keys) is secret memory",
			 c->path, c->late ? "it was loaded after start-up" : "before the module's constructor");
	pl_warn(msg);
}

/* Examine the objects loaded since the last scan; call with lock held. */
static void scan_locked(void)
{
	struct found *f = malloc(sizeof(*f));
	int late = __atomic_load_n(&started, __ATOMIC_RELAXED);

	if (!f)
		return;
	f->n = 0;
	dl_iterate_phdr(collect, f);
	for (int i = 0; i < f->n; i++) {
		void *h, *sym;
		uintptr_t s;

		if (known(f->range[i].lo))
			continue;
		if ((uintptr_t)scan_locked >= f->range[i].lo && (uintptr_t)scan_locked < f->range[i].hi) {
			h = NULL; /* this module: its exports are not libcrypto */
			goto seen;
		}
		if (nobjs >= MAX_OBJS) {
			objs_full = 1;
			break;
		}
		/* The vDSO and objects that cannot be opened by name are not libcrypto. */
		h = pl_dlopen(f->name[i][0] ? f->name[i] : NULL, RTLD_LAZY | RTLD_NOLOAD);
		sym = h ? dlsym(h, "CRYPTO_set_mem_functions") : NULL;
		s = (uintptr_t)sym;
		if (sym && s >= f->range[i].lo && s < f->range[i].hi && ncrypto < MAX_CRYPTO) {
			struct crypto *c = &crypto[ncrypto];
			pl_set_mem_fn set;

			memset(c, 0, sizeof(*c));
			c->lo = f->range[i].lo;
			c->hi = f->range[i].hi;
			c->late = late;
			snprintf(c->path, sizeof(c->path), "%s", f->name[i][0] ? f->name[i] : "the program");
			*(void **)&set = sym;
			if (pl_mode() != PL_MODE_OFF)
				install(c, set);
			__atomic_store_n(&ncrypto, ncrypto + 1, __ATOMIC_RELEASE);
			pl_openssl_seen();
		}
		if (h)
			dlclose(h);
seen:
		objs[nobjs] = f->range[i];
		__atomic_store_n(&nobjs, nobjs + 1, __ATOMIC_RELEASE);
	}
	free(f);
	if (pl_mode() != PL_MODE_OFF)
		pl_reach_scan_locked();
}

void pl_libs_scan(void)
{
	pthread_mutex_lock(&lock);
	scan_locked();
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
}

void pl_libs_check(const void *caller)
{
	uintptr_t a = (uintptr_t)caller;
	int n = __atomic_load_n(&nobjs, __ATOMIC_ACQUIRE);
	int h = __atomic_load_n(&hint, __ATOMIC_RELAXED);

	if (h < n && a >= objs[h].lo && a < objs[h].hi)
		return;
	for (int i = 0; i < n; i++)
		if (a >= objs[i].lo && a < objs[i].hi) {
			__atomic_store_n(&hint, i, __ATOMIC_RELAXED);
			return;
		}
	if (__atomic_load_n(&objs_full, __ATOMIC_RELAXED))
		return;
	/*
	 * Only if no scan is running: the caller may be a constructor running
	 * inside dlopen() (holding the loader's lock) while another thread's
	 * scan holds ours and waits for the loader's.
	 */
	if (pthread_mutex_trylock(&lock) != 0)
		return;
	scan_locked();
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
}

int pl_memfn_safe(void)
{
	int n = __atomic_load_n(&ncrypto, __ATOMIC_ACQUIRE);

	if (n == 0)
		return 0;
	for (int i = 0; i < n; i++)
		if (crypto[i].state != LIB_INSTALLED && crypto[i].state != LIB_PROGRAM)
			return 0;
	return 1;
}

int pl_libs_any(void)
{
	return __atomic_load_n(&ncrypto, __ATOMIC_ACQUIRE) > 0;
}

void pl_libs_replaced(const void *caller)
{
	uintptr_t a = (uintptr_t)caller;
	int n = __atomic_load_n(&ncrypto, __ATOMIC_ACQUIRE);

	(void)a;
	/* The caller is the program, not libcrypto: every copy is affected
	 * the same way by the one set of wrapped functions. */
	for (int i = 0; i < n; i++)
		if (crypto[i].state == LIB_INSTALLED)
			crypto[i].state = LIB_PROGRAM;
}

void pl_libs_report(void)
{
	char line[400];
	int n = __atomic_load_n(&ncrypto, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++) {
		const struct crypto *c = &crypto[i];
		const char *what;

		if (pl_mode() == PL_MODE_OFF)
			what = "mode off: nothing installed";
		else if (c->state == LIB_INSTALLED)
			what = pl_mode() == PL_MODE_ALL ? "memory functions installed: every OPENSSL_malloc() in secret memory"
							: "memory functions installed: OPENSSL_malloc() blocks cleared when freed";
		else if (c->state == LIB_PROGRAM)
			what = "the program's own memory functions, wrapped to clear freed blocks";
		else
			what = "memory functions refused (it had allocated already): secure heap only";
		snprintf(line, sizeof(line), "secretmem-preload: report: libcrypto %s (%s): %s\n", c->path,
			 c->late ? "loaded after start-up" : "loaded at start-up", what);
		if (write(STDERR_FILENO, line, strlen(line)) < 0)
			return;
	}
}

/* ---- dlopen --------------------------------------------------------------- */

PL_EXPORT void *dlopen(const char *file, int flags);

/* The module's exports: what a library opened with RTLD_DEEPBIND gets. */
static const char *const exports[] = {
	"CRYPTO_secure_malloc", "CRYPTO_secure_zalloc", "CRYPTO_secure_free", "CRYPTO_secure_clear_free",
	"CRYPTO_secure_allocated", "CRYPTO_secure_actual_size", "CRYPTO_secure_used",
	"CRYPTO_secure_malloc_initialized", "CRYPTO_secure_malloc_init", "CRYPTO_secure_malloc_done",
	"BN_MONT_CTX_set_locked", "CRYPTO_set_mem_functions", "OSSL_PARAM_get_BN", "dlopen", "fclose", "_exit", "_Exit",
};
#define NEXPORTS (sizeof(exports) / sizeof(exports[0]))

/*
 * A library opened with RTLD_DEEPBIND binds OpenSSL's calls to its own
 * definitions (a libcrypto, to its own secure heap): bind them to the
 * module's, as without the flag (dynobj.c; secretmem-preload(7),
 * RTLD_DEEPBIND).
 */
static void *deep_open(const void *caller, const char *file, int flags)
{
	struct sm_dyn_set before;
	void *own[NEXPORTS];
	char msg[600];
	int objects = 0;

	if (!sm_dyn_can_rebind() || sm_dyn_snapshot(&before) != 0) {
		snprintf(msg, sizeof(msg), "%s: RTLD_DEEPBIND cleared, so that its OpenSSL calls reach the module",
			 file ? file : "(null)");
		pl_warn(msg);
		return sm_dlopen_from(caller, file, flags & ~RTLD_DEEPBIND, pl_dlopen);
	}
	void *h = sm_dlopen_from(caller, file, flags, pl_dlopen);
	if (h) {
		sm_dyn_own((const void *)pl_libs_scan, exports, own, NEXPORTS);
		int slots = sm_dyn_rebind_new(&before, (const void *)pl_libs_scan, exports, own, NEXPORTS, &objects);
		if (slots < 0)
			snprintf(msg, sizeof(msg), "%s was opened with RTLD_DEEPBIND and its OpenSSL calls could not be bound "
				 "to the module (%s): its secure heap is its own, in ordinary memory",
				 file ? file : "(null)", strerror(errno));
		else
			snprintf(msg, sizeof(msg), "%s was opened with RTLD_DEEPBIND: its calls of the module's functions "
				 "are bound to the module (%d slot%s in %d object%s)", file ? file : "(null)", slots,
				 slots == 1 ? "" : "s", objects, objects == 1 ? "" : "s");
		if (slots != 0)
			pl_warn(msg);
	}
	sm_dyn_set_free(&before);
	return h;
}

/* The caller's search path is kept (dlfrom.c). */
__attribute__((noinline)) void *dlopen(const char *file, int flags)
{
	const void *caller = __builtin_return_address(0);
	void *h = (flags & RTLD_DEEPBIND) && !(flags & RTLD_NOLOAD) && pl_mode() != PL_MODE_OFF ?
			  deep_open(caller, file, flags) : sm_dlopen_from(caller, file, flags, pl_dlopen);

	if (h && !(flags & RTLD_NOLOAD) && __atomic_load_n(&started, __ATOMIC_ACQUIRE))
		pl_libs_scan();
	return h;
}

/* ---- the program's CRYPTO_set_mem_functions ------------------------------ */

PL_EXPORT int CRYPTO_set_mem_functions(pl_malloc_fn m, pl_realloc_fn r, pl_free_fn f);

__attribute__((noinline)) int CRYPTO_set_mem_functions(pl_malloc_fn m, pl_realloc_fn r, pl_free_fn f)
{
	const void *caller = __builtin_return_address(0);
	pl_set_mem_fn real = (pl_set_mem_fn)pl_real(PL_REAL_SET_MEM_FUNCTIONS, caller);
	pl_malloc_fn cm;
	pl_realloc_fn cr;
	pl_free_fn cf;

	if (!real)
		return 0;
	if (pl_mode() == PL_MODE_OFF)
		return real(m, r, f);
	pl_libs_check(caller);
	/* OpenSSL's answer once it has allocated (with the module's functions
	 * in place OpenSSL itself would no longer refuse). */
	if (pl_memfn_used())
		return 0;
	if (!pl_memfn_safe())
		return real(m, r, f);
	if (pl_mode() == PL_MODE_ALL) {
		pl_warn("SECRETMEM_OPENSSL=all: the program called CRYPTO_set_mem_functions(); refused (0) so "
			"that OpenSSL's memory stays in secret memory (mode secure accepts the program's "
			"functions)");
		return 0;
	}
	if (!pl_memfn_chain(m, r, f, &cm, &cr, &cf) || real(cm, cr, cf) != 1)
		return 0;
	pl_libs_replaced(caller);
	return 1;
}
