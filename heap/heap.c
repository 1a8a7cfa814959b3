/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heap.c - libsecretmem-heap.so: the whole malloc API of a program in secret
 * memory (`secretmem exec --mode heap`, or LD_PRELOAD; see secretmem-heap(7)).
 *
 * It replaces malloc as glibc documents it ("Replacing malloc": ELF symbol
 * interposition of malloc, free, calloc, realloc and the optional
 * aligned_alloc, malloc_usable_size, memalign, posix_memalign, pvalloc,
 * valloc), on a hidden copy of libsecretmem linked into the module.
 *
 * Where a block lives ("backends"):
 *  - secret: the allocator's chunks and large blocks (memfd_secret);
 *  - fallback: the same allocator on locked private memory, when the kernel
 *    or a sandbox refuses memfd_secret (the library decides and warns);
 *  - plain: glibc's own malloc (__libc_malloc and friends), for blocks above
 *    the huge threshold (SECRETMEM_HEAP_HUGE, default 1 MiB), and - after one
 *    warning with the figures - for every block secret memory was refused
 *    for (the memory-lock limit), unless SECRETMEM_REQUIRE=1, which makes
 *    malloc return NULL (ENOMEM) instead;
 *  - early: a static 64 KiB arena in .bss (ordinary memory) for calls made
 *    while the module itself is inside the allocator on the same thread
 *    (re-entry: the library's start-up, pthread_setspecific's calloc).
 * free() tells them apart with the allocator's lock-free pointer map
 * (sm_lookup), the arena's address range, and "anything else is glibc's".
 *
 * Start-up: the first call of any function initializes the module and the
 * library (their fork handlers are then the first registered in the
 * process, so the child's heap is its own before any other atfork child
 * handler runs).  Threads: the allocator's per-thread caches, no global
 * lock.  A thread's own TSD destructor marks it exiting: glibc frees (and
 * may allocate) after the destructors ran, and those calls go to the slabs
 * directly instead of recreating a cache that would never be freed.
 *
 * Signal handlers: a free() that interrupts the allocator on its own thread
 * waits on the thread's list until the thread's next call (defer_free); a
 * malloc() there gets an early-arena block, as any re-entry does.
 *
 * Misuse: a double free or an interior pointer of secret memory is fatal
 * (a fixed message, abort), as glibc's own checks are; any pointer the
 * module does not own goes to glibc's free, which applies its checks.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "slab.h"
#include "heapstats.h"
#include "hp.h"

#define HP_EXPORT __attribute__((visibility("default")))

/* glibc's allocator under its internal names (GLIBC_2.2.5). */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern int __libc_mallopt(int param, int value);

#define DEFAULT_HUGE ((size_t)1 << 20)
#define EARLY_SIZE ((size_t)64 << 10)

/* T_DRAIN: live, with frees deferred by a signal handler to drain first */
enum { T_NEW = 0, T_LIVE = 1, T_EXITING = 2, T_PLAIN = 3, T_DRAIN = 4 };

/*
 * volatile: glibc declares pthread_setspecific, pthread_once and others
 * "leaf" (they never call back into this file), so the compiler may move or
 * drop a plain t_busy++ / t_busy-- around them - but they do call back, into
 * calloc (pthread_setspecific for a key beyond the first 32).
 */
static __thread volatile unsigned char t_busy __attribute__((tls_model("initial-exec")));
static __thread unsigned char t_state __attribute__((tls_model("initial-exec")));
/* secret blocks freed by a signal handler while this thread was inside the
 * allocator, linked through their first word (defer_free) */
static __thread void *t_deferred __attribute__((tls_model("initial-exec")));

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int ready;        /* written once by init (release), read acquire */
/* not serving: the preload module is loaded too (glibc serves), another
 * allocator holds malloc (it serves: winner.c), or another copy of this
 * module does (silent) */
enum { SD_NO = 0, SD_PRELOAD = 1, SD_OTHER = 2, SD_TWIN = 3 };
static int stood_down;
static int require;
static size_t huge = DEFAULT_HUGE;
static int plain_sticky; /* secret memory was refused; cleared by a secret free */
static int warned;
static unsigned char class16[SM_NCLASS];
static pthread_key_t thread_key;

static struct sm_heap_stats stats_static;
static struct sm_heap_stats *stats = &stats_static;

static unsigned char early[EARLY_SIZE] __attribute__((aligned(4096)));
static size_t early_used;

static size_t (*glibc_usable)(void *);

/* ---- figures ------------------------------------------------------------- */

static void st_add(uint64_t *field, int64_t v)
{
	__atomic_fetch_add(field, (uint64_t)v, __ATOMIC_RELAXED);
}

static void st_set(uint64_t *field, uint64_t v)
{
	__atomic_store_n(field, v, __ATOMIC_RELAXED);
}

static void observe(size_t secret, size_t fallback)
{
	st_set(&stats->secret_bytes, secret);
	st_set(&stats->fallback_bytes, fallback);
}

/* One private page of a named memfd: "/memfd:secretmem-heap-stats" in maps. */
static void stats_page(void)
{
	long fd = syscall(SYS_memfd_create, SM_HEAP_STATS_NAME, MFD_CLOEXEC);
	size_t ps = os_page_size();

	if (fd < 0)
		return;
	if (syscall(SYS_ftruncate, fd, (long)ps) == 0) {
		void *p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE, (int)fd, 0);
		if (p != MAP_FAILED)
			stats = p;
	}
	syscall(SYS_close, fd);
}

/* ---- fork ----------------------------------------------------------------- */

/* From before the library's prepare handler until after its parent or
 * child handler, this thread is inside the allocator (t_busy): every fork,
 * the interposed fork() (hfork.c) and the C library's own (daemon). */
static __thread void *t_fork_deferred __attribute__((tls_model("initial-exec")));

static void fork_busy(void)
{
	t_busy++;
	/* the frees a handler deferred until now: their links are in the
	 * blocks the child's copy is made of; one deferred from now on links
	 * the parent's block only, and the child's copy of it holds data */
	t_fork_deferred = __atomic_load_n(&t_deferred, __ATOMIC_RELAXED);
}

static void fork_parent(void)
{
	t_busy--;
}

/* The child drains only what its copy holds the links of; a block a
 * handler freed during the copy stays live in the child (a leak there). */
static void fork_child(void)
{
	t_deferred = t_fork_deferred;
	t_busy--;
}

/* ---- messages ------------------------------------------------------------ */

void hp_say(const char *msg)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "secretmem-heap: warning: %s\n", msg);

	/* raw writes: write(2) is a cancellation point, and this runs inside
	 * malloc and fork(), which must not act on a cancellation request;
	 * errno stays the program's (sm_put) */
	if (n > 0)
		sm_put(line);
}

static const char *cause_name(int failure)
{
	return failure == SECRETMEM_FAILURE_MEMLOCK ? "memory-lock limit"
	       : failure == SECRETMEM_FAILURE_SANDBOX ? "sandbox"
	       : failure == SECRETMEM_FAILURE_NOSYS   ? "not in this kernel"
	       : failure == SECRETMEM_FAILURE_FDS     ? "no file descriptor"
						      : "out of memory";
}

static void warn_refused(void)
{
	struct secretmem_stats st;
	char msg[400], lim[40];

	if (__atomic_exchange_n(&warned, 1, __ATOMIC_ACQ_REL))
		return;
	if (sm_secret_new_is_off()) {
		/* the figures take system calls the filter would stop */
		snprintf(msg, sizeof(msg),
			 "secret memory refused (cause: sandbox: the seccomp filter the program installed would stop "
			 "the calls that make it): %s",
			 require ? "malloc fails with ENOMEM (SECRETMEM_REQUIRE=1)"
				 : "new blocks go to ordinary memory (SECRETMEM_REQUIRE=1 makes malloc fail instead)");
		hp_say(msg);
		return;
	}
	t_busy++;
	secretmem_stats(&st);
	t_busy--;
	if (st.memlock_unlimited)
		snprintf(lim, sizeof(lim), "unlimited");
	else
		snprintf(lim, sizeof(lim), "%zu bytes", st.memlock_limit);
	st_set(&stats->warn_limit, st.memlock_unlimited ? UINT64_MAX : st.memlock_limit);
	st_set(&stats->warn_secret, st.secret_bytes);
	snprintf(msg, sizeof(msg),
		 "secret memory refused (cause: %s; RLIMIT_MEMLOCK %s; in use: %zu bytes of secret memory, "
		 "%zu of locked fallback): %s",
		 cause_name((int)st.last_failure), lim, st.secret_bytes, st.fallback_bytes,
		 require ? "malloc fails with ENOMEM while it is refused (SECRETMEM_REQUIRE=1)"
			 : "new blocks go to ordinary memory until secret memory is freed (SECRETMEM_REQUIRE=1 "
			   "makes malloc fail instead)");
	hp_say(msg);
}

/* At start: the first chunk went to the library's locked fallback, because
 * memfd_secret(2) is refused (a sandbox since before the start, an old
 * kernel).  The library says nothing of a fallback it met at its first
 * call; the heap, every block of it, is there: one warning. */
static void warn_fallback_heap(void)
{
	size_t bytes;
	char msg[400];

	snprintf(msg, sizeof(msg),
		 "memfd_secret(2) is not usable here (cause: %s): the heap is in libsecretmem's locked fallback, "
		 "kept out of swap and core dumps but readable by root, and memory the program locks is not made "
		 "secret (SECRETMEM_REQUIRE=1 makes malloc fail instead)",
		 cause_name(sm_failure_last(&bytes)));
	hp_say(msg);
	hp_lock_refusal_said(); /* the same cause: said once */
}

/* ---- the early arena (.bss, ordinary memory) ------------------------------ */

static int is_early(const void *p)
{
	return (const unsigned char *)p >= early && (const unsigned char *)p < early + EARLY_SIZE;
}

static size_t early_size(const void *p)
{
	return ((const size_t *)p)[-2];
}

static void *plain_alloc(size_t align, size_t size, int zero);

/* A block made inside the allocator that the early arena cannot hold goes
 * to ordinary memory: said once.  A program does not get there (start-up
 * takes a few bytes), unless a thread left malloc, free or fork by
 * siglongjmp: the module then takes every later call of that thread for
 * one made inside it. */
static void *early_overflow(size_t align, size_t size, int zero)
{
	static int said;

	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		hp_say("blocks made inside the allocator go to ordinary memory: the early arena is full (a thread "
		       "that left malloc, free or fork by siglongjmp from a signal handler stays inside the "
		       "allocator for the module: secretmem-heap(7), SIGNAL HANDLERS)");
	return plain_alloc(align, size, zero);
}

/* Bump allocation, 16-byte header holding the size; never reused. */
static void *early_alloc(size_t align, size_t size, int zero)
{
	size_t off, start, end, need;

	if (align < 16)
		align = 16;
	if (size > EARLY_SIZE || align > EARLY_SIZE)
		return early_overflow(align, size, zero);
	need = (size + 15) & ~(size_t)15;
	off = __atomic_load_n(&early_used, __ATOMIC_RELAXED);
	do {
		start = (off + 16 + align - 1) & ~(align - 1);
		end = start + need;
		if (end > EARLY_SIZE)
			return early_overflow(align, size, zero);
	} while (!__atomic_compare_exchange_n(&early_used, &off, end, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	((size_t *)(early + start))[-2] = need;
	st_add(&stats->early_bytes, (int64_t)need);
	st_add(&stats->early_blocks, 1);
	return early + start; /* .bss: zero, and never handed out twice */
}

static void early_free(void *p)
{
	size_t n = early_size(p);

	sm_zero(p, n);
	st_add(&stats->early_bytes, -(int64_t)n);
	st_add(&stats->early_blocks, -1);
}

/* ---- plain: glibc's malloc ------------------------------------------------- */

static size_t plain_usable(void *p)
{
	if (SM_UNLIKELY(stood_down == SD_OTHER))
		return hp_other_usable(p);
	if (!glibc_usable) {
		t_busy++;
		glibc_usable = (size_t(*)(void *))dlvsym(RTLD_NEXT, "malloc_usable_size", "GLIBC_2.2.5");
		t_busy--;
	}
	return glibc_usable ? glibc_usable(p) : 0;
}

static void plain_count(void *p, int sign)
{
	if (stood_down == SD_OTHER) /* its blocks: not counted, they cross */
		return;
	st_add(&stats->plain_bytes, sign * (int64_t)plain_usable(p));
	st_add(&stats->plain_blocks, sign);
}

static void *plain_alloc(size_t align, size_t size, int zero)
{
	void *p;

	if (SM_UNLIKELY(stood_down == SD_OTHER))
		p = hp_other_alloc(align, size, zero);
	else if (align <= 16)
		p = zero ? __libc_calloc(1, size) : __libc_malloc(size);
	else if ((p = __libc_memalign(align, size)) && zero)
		memset(p, 0, size);
	if (p)
		plain_count(p, 1);
	return p;
}

/*
 * The memory of glibc's block p: for a block glibc mapped alone (above
 * its mmap threshold), the whole mapping, the page of its header too, which
 * glibc unmaps or moves with it; else the block's own bytes.
 */
static int plain_mapped_alone(const void *p)
{
	return (((const size_t *)p)[-1] & 2) != 0; /* glibc's IS_MMAPPED */
}

static void plain_span(void *p, uintptr_t *lo, size_t *len)
{
	if (plain_mapped_alone(p)) { /* prev_size is the mapping's offset */
		size_t off = ((const size_t *)p)[-2];
		*lo = (uintptr_t)p - 2 * sizeof(size_t) - off;
		*len = (((const size_t *)p)[-1] & ~(size_t)7) + off;
	} else {
		*lo = (uintptr_t)p;
		*len = plain_usable(p);
	}
}

/* Before glibc frees (dead: the contents come back zero) or moves block p
 * of its own: the pages of it the program locked (mmcalls.c) go back to
 * ordinary memory, which glibc unmaps, moves and trims with calls the
 * module does not see. */
static void plain_release(void *p, int dead)
{
	if (SM_UNLIKELY(sm_adopt_count)) {
		uintptr_t lo;
		size_t len;
		plain_span(p, &lo, &len);
		sm_adopt_release((void *)lo, len, dead ? p : NULL, dead ? plain_usable(p) : 0);
		hp_adopt_figures();
	}
}

/* Whether all of glibc's block p, mapped alone, is locked by the program
 * (then *by is who locked it): such a block stays locked when realloc
 * moves it, as the kernel keeps a locked mapping locked through mremap. */
static int plain_locked(void *p, const char **by)
{
	uintptr_t lo;
	size_t len;

	if (!SM_UNLIKELY(sm_adopt_count) || !plain_mapped_alone(p))
		return 0;
	plain_span(p, &lo, &len);
	return sm_adopt_locked((void *)lo, len, by);
}

static void plain_free(void *p)
{
	plain_count(p, -1);
	if (SM_UNLIKELY(stood_down == SD_OTHER)) {
		hp_other_free(p);
	} else {
		plain_release(p, 1);
		__libc_free(p);
	}
}

/* ---- start-up -------------------------------------------------------------- */

/*
 * A free() that interrupted this module on its own thread - a signal
 * handler's, while the thread was inside the allocator (t_busy): the locks
 * it would take may be held by the interrupted call and the thread's cache
 * is in the middle of a change, so the block waits on the thread's list
 * until the thread's next call of the module instead of a deadlock or a
 * torn cache.  Only the lock-free pointer map was read to know it is ours.
 */
static void defer_free(void *p)
{
	void *old = __atomic_load_n(&t_deferred, __ATOMIC_RELAXED);

	do
		*(void **)p = old;
	while (!__atomic_compare_exchange_n(&t_deferred, &old, p, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	if (t_state == T_LIVE)
		t_state = T_DRAIN; /* the next call takes the slow path, which drains */
	st_add(&stats->deferred_frees, 1);
}

/* Free what defer_free kept; outside the allocator (t_busy == 0). */
static void drain_deferred(void)
{
	void *p;

	while ((p = __atomic_exchange_n(&t_deferred, NULL, __ATOMIC_ACQUIRE)) != NULL)
		while (p) {
			void *next = *(void **)p;
			t_busy++;
			if (t_state == T_EXITING)
				sm_free_nocache(p);
			else
				secretmem_free(p);
			t_busy--;
			p = next;
		}
}

static void thread_exit(void *arg)
{
	(void)arg;
	t_state = T_EXITING;
	t_busy++;
	sm_alloc_thread_done();
	t_busy--;
	drain_deferred();
}

/* The OpenSSL preload module in the process too?  Then this one stands down
 * (one allocator, one set of fork handlers).  Read from LD_PRELOAD and
 * /etc/ld.so.preload, the two ways a module gets in before main(). */
static int other_module(void)
{
	return hp_preloads("libsecretmem-preload.so");
}

static void init(void)
{
	const char *h = getenv("SECRETMEM_HEAP_HUGE");
	size_t v;
	char why[sizeof(stats->reason)];
	const char *advice = "";
	int win = hp_winner_check(why, sizeof(why), &advice);

	if (win == HP_WIN_TWIN) { /* that copy is in charge and says it all */
		stood_down = SD_TWIN;
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
		return;
	}
	/*
	 * glibc's allocator sets itself up at its first call, without a
	 * lock, and hands the main arena to the calling thread on a count
	 * that starts at one: it relies on a first call made before any
	 * thread exists.  Here its first call would be some thread's huge
	 * block; two threads there at once both take the main arena on that
	 * one count, and glibc aborts when the second of them exits
	 * ("a->attached_threads > 0").  So set it up now, under the once:
	 * mallopt with a parameter glibc does not know does that and changes
	 * nothing.
	 */
	__libc_mallopt(0, 0);
	sm_os_direct = 1; /* the library's memory calls skip mmcalls.c's */
	stats_page();
	stats->magic = SM_HEAP_STATS_MAGIC;
	stats->size = sizeof(*stats);
	if (win == HP_WIN_OTHER) {
		char msg[sizeof(why) + 200];
		stood_down = SD_OTHER;
		memcpy(stats->reason, why, sizeof(why));
		st_set(&stats->state, SM_HEAP_INACTIVE);
		snprintf(msg, sizeof(msg), "inactive: %s; every block goes to it, in ordinary memory (%s)", why, advice);
		hp_say(msg);
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
		return;
	}
	if (other_module()) {
		stood_down = SD_PRELOAD;
		st_set(&stats->state, SM_HEAP_STOOD_DOWN);
		hp_say("libsecretmem-preload.so is loaded too: the heap module stands down and every block "
		       "stays in ordinary memory (load only one of them; secretmem exec does)");
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
		return;
	}
	if (h && *h) {
		if (sm_parse_size(h, &v) == 0)
			huge = v ? v : SIZE_MAX;
		else
			hp_say("invalid SECRETMEM_HEAP_HUGE (a size such as 1M, or 0 for no limit): using 1M");
	}
	require = (int)sm_option(SECRETMEM_OPT_REQUIRE);
	/* the heap is the program's memory: a child must get its own copy
	 * (drop would take every block from it, share would share them) */
	if (sm_option(SECRETMEM_OPT_FORK) != SECRETMEM_FORK_COPY) {
		secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_COPY);
		hp_say("SECRETMEM_FORK is ignored in heap mode: a forked child gets a copy of the heap (copy)");
	}
	/* and never runs without it: fork() fails instead (hfork.c) */
	sm_fork_set_strict();
	for (unsigned c = 0; c < SM_NCLASS; c++) {
		unsigned d = c;
		while (d + 1 < SM_NCLASS && sm_class_size[d] % 16)
			d++;
		class16[c] = (unsigned char)d;
	}
	st_set(&stats->huge_threshold, huge == SIZE_MAX ? 0 : huge);
	st_set(&stats->require, (uint64_t)require);
	pthread_key_create(&thread_key, thread_exit);
	sm_region_observer = observe;
	sm_failure_hint_off(); /* warn_refused says it, once */
	/* the library now: its fork handlers are registered before anyone's */
	secretmem_free(secretmem_malloc(1));
	/* and the streams' right after them (streams.c) */
	hp_streams_install();
	/* and these last: their prepare runs first, so that a signal
	 * handler's free while fork()'s handlers hold the allocator's locks
	 * is deferred (SIGNAL HANDLERS) instead of waiting for them */
	pthread_atfork(fork_busy, fork_parent, fork_child);
	size_t s, f;
	region_backend_totals(&s, &f);
	observe(s, f);
	if (f && !s)
		warn_fallback_heap();
	st_set(&stats->state, SM_HEAP_ACTIVE);
	__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
}

/* This thread: start-up, registration of its exit; 0 when it may use the
 * secret path, -1 when the call must go elsewhere (early arena or glibc). */
static int enter_slow(void)
{
	if (t_busy)
		return -1;
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		t_busy++;
		pthread_once(&init_once, init);
		t_busy--;
	}
	if (stood_down) {
		t_state = T_PLAIN;
		return -1;
	}
	if (t_state == T_NEW) {
		t_busy++;
		pthread_setspecific(thread_key, (void *)1);
		t_busy--;
		t_state = T_LIVE;
	}
	if (SM_UNLIKELY(t_state == T_DRAIN))
		t_state = T_LIVE;
	if (SM_UNLIKELY(__atomic_load_n(&t_deferred, __ATOMIC_RELAXED) != NULL))
		drain_deferred();
	return 0;
}

/* ---- allocation ------------------------------------------------------------ */

/* A block goes to ordinary memory for a refusal of secret memory: counted,
 * the next ones go there at once (until a secret free), one warning. */
static void note_refusal(void)
{
	st_add(&stats->refusals, 1);
	__atomic_store_n(&plain_sticky, 1, __ATOMIC_RELAXED);
	warn_refused();
}

/* Secret memory refused under SECRETMEM_REQUIRE=1: NULL with ENOMEM, one
 * warning. */
static void *fail_required(void)
{
	warn_refused();
	errno = ENOMEM;
	return NULL;
}

/* Secret memory refused for this request: NULL (require), else plain. */
static void *refused(size_t align, size_t size, int zero)
{
	if (require)
		return fail_required();
	void *p = plain_alloc(align, size, zero);
	if (!p)
		return NULL; /* impossible size: no word about secret memory */
	note_refusal();
	return p;
}

static void *secret_alloc(size_t align, size_t size)
{
	void *p;

	t_busy++;
	if (align <= 16 && size <= SM_SMALL_MAX)
		p = secretmem_malloc(sm_class_size[class16[sm_size_class(size ? size : 1)]]);
	else
		p = sm_alloc_aligned(align < 16 ? 16 : align, size);
	if (SM_UNLIKELY(t_state == T_EXITING))
		sm_alloc_thread_done();
	t_busy--;
	return p;
}

/* Blocks are handed out zeroed by the allocator (secret and early). */
static void *heap_alloc_any(size_t align, size_t size, int zero)
{
	if (SM_UNLIKELY(t_state != T_LIVE || t_busy)) {
		if (enter_slow() < 0)
			return t_busy ? early_alloc(align, size, zero) : plain_alloc(align, size, zero);
	}
	if (SM_UNLIKELY(size > huge)) {
		void *p = plain_alloc(align, size, zero);
		if (p)
			st_add(&stats->huge_allocs, 1);
		return p;
	}
	if (SM_UNLIKELY(__atomic_load_n(&plain_sticky, __ATOMIC_RELAXED)))
		return refused(align, size, zero);
	void *p = secret_alloc(align, size);
	if (SM_LIKELY(p != NULL))
		return p;
	if (errno == EINVAL)
		return NULL;
	return refused(align, size, zero);
}

/* errno is left alone when a block is returned, as glibc's malloc does
 * (programs read an errno saved before a malloc: a failed secret attempt
 * before a plain block must not show). */
static void *heap_alloc(size_t align, size_t size, int zero)
{
	int saved = errno;
	void *p = heap_alloc_any(align, size, zero);

	if (SM_LIKELY(p != NULL))
		errno = saved;
	return p;
}

HP_EXPORT void *malloc(size_t size)
{
	return heap_alloc(16, size, 0);
}

HP_EXPORT void *calloc(size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return heap_alloc(16, total, 1);
}

static void free_other(void *p, int kind)
{
	if (kind == LOOKUP_NOT_LIVE)
		sm_fatal("double free");
	if (kind == LOOKUP_INTERIOR)
		sm_fatal("invalid pointer (not the start of a block)");
	if (sm_in_our_memory(p)) /* a freed block whose pages were taken back */
		sm_fatal("invalid pointer (not allocated by secretmem)");
	if (is_early(p))
		early_free(p);
	else
		plain_free(p);
}

HP_EXPORT void free(void *p)
{
	struct blockref ref;

	if (!p)
		return;
	if (SM_LIKELY(t_state == T_LIVE)) {
		/* a thread of the program: one lookup frees a secret block */
		int saved = errno;
		if (SM_UNLIKELY(t_busy))
			goto reentered;
		t_busy++;
		int ours = sm_free_if_ours(p);
		t_busy--;
		errno = saved;
		if (!ours)
			free_other(p, LOOKUP_FOREIGN);
		else if (SM_UNLIKELY(__atomic_load_n(&plain_sticky, __ATOMIC_RELAXED)))
			__atomic_store_n(&plain_sticky, 0, __ATOMIC_RELAXED);
		return;
	}
reentered:;
	int kind = sm_lookup(p, &ref);
	if (SM_UNLIKELY(kind != LOOKUP_OK)) {
		free_other(p, kind);
		return;
	}
	if (SM_UNLIKELY(t_busy)) {
		defer_free(p);
		return;
	}
	if (SM_UNLIKELY(__atomic_load_n(&plain_sticky, __ATOMIC_RELAXED)))
		__atomic_store_n(&plain_sticky, 0, __ATOMIC_RELAXED);
	int saved = errno;
	t_busy++;
	if (SM_UNLIKELY(t_state != T_LIVE)) {
		if (t_state == T_NEW || t_state == T_DRAIN) {
			t_busy--;
			enter_slow();
			t_busy++;
		}
		if (t_state == T_EXITING) {
			sm_free_nocache(p);
			t_busy--;
			errno = saved;
			return;
		}
	}
	secretmem_free(p);
	t_busy--;
	errno = saved;
}

/* The usable size of any block this module hands out or accepts. */
static size_t block_usable(void *p, int kind, const struct blockref *ref)
{
	if (kind == LOOKUP_OK)
		return ref->usable;
	if (kind != LOOKUP_FOREIGN || sm_in_our_memory(p))
		return 0;
	return is_early(p) ? early_size(p) : plain_usable(p);
}

static void *realloc_any(void *p, size_t size)
{
	struct blockref ref;

	if (!p)
		return malloc(size);
	if (size == 0) { /* glibc: frees and returns NULL */
		free(p);
		return NULL;
	}
	int kind = sm_lookup(p, &ref);
	if (kind == LOOKUP_NOT_LIVE || kind == LOOKUP_INTERIOR || (kind == LOOKUP_FOREIGN && sm_in_our_memory(p)))
		free_other(p, kind); /* fatal */
	if (kind == LOOKUP_FOREIGN && !is_early(p)) {
		size_t before = plain_usable(p);
		/* a plain block (a huge one, or one made after a refusal) goes
		 * back to secret memory when its new size is not huge; if
		 * secret memory refuses it, as for malloc: NULL under REQUIRE
		 * (the block stays), else glibc's block stays glibc's after
		 * the one warning */
		if (size <= huge && t_state == T_LIVE && !t_busy && !__atomic_load_n(&plain_sticky, __ATOMIC_RELAXED)) {
			void *n = secret_alloc(16, size);
			if (n) {
				sm_copy(n, p, before < size ? before : size);
				plain_free(p);
				return n;
			}
			if (errno == EINVAL)
				return NULL; /* an impossible size: no word about secret memory */
			if (require)
				return fail_required();
			note_refusal();
		}
		const char *by = NULL;
		int locked = stood_down != SD_OTHER && plain_locked(p, &by);
		if (stood_down != SD_OTHER)
			plain_release(p, 0);
		void *n = stood_down == SD_OTHER ? hp_other_realloc(p, size) : __libc_realloc(p, size);
		if (n && stood_down != SD_OTHER) {
			st_add(&stats->plain_bytes, (int64_t)plain_usable(n) - (int64_t)before);
			if (size > huge && before <= huge)
				st_add(&stats->huge_allocs, 1);
		}
		if (locked) {
			/* without the module it stays locked (mremap keeps
			 * the lock): made secret again, or locked */
			uintptr_t lo;
			size_t len;
			plain_span(n ? n : p, &lo, &len);
			int e = errno;
			hp_lock_again((void *)lo, len, by);
			errno = e;
		}
		return n;
	}
	if (kind == LOOKUP_OK && size <= huge && t_state == T_LIVE && !t_busy &&
	    !__atomic_load_n(&plain_sticky, __ATOMIC_RELAXED)) {
		size_t want = size <= SM_SMALL_MAX ? sm_class_size[class16[sm_size_class(size)]] : size;
		t_busy++;
		void *n = secretmem_realloc(p, want); /* in place when it fits */
		t_busy--;
		if (n)
			return n;
	}
	/* move: to wherever malloc puts a block of this size now */
	size_t old = block_usable(p, kind, &ref);
	void *n = malloc(size);
	if (!n)
		return NULL;
	sm_copy(n, p, old < size ? old : size);
	free(p);
	return n;
}

HP_EXPORT void *realloc(void *p, size_t size)
{
	int saved = errno;
	void *n = realloc_any(p, size);

	if (n)
		errno = saved; /* as in heap_alloc */
	return n;
}

HP_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

static int pow2(size_t a)
{
	return a && !(a & (a - 1));
}

HP_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (!pow2(align)) {
		errno = EINVAL;
		return NULL;
	}
	return heap_alloc(align, size, 0);
}

HP_EXPORT void *memalign(size_t align, size_t size)
{
	/* glibc: a non-power of two is rounded up; beyond the largest one, EINVAL */
	if (align > SIZE_MAX / 2 + 1) {
		errno = EINVAL;
		return NULL;
	}
	while (!pow2(align) && align)
		align = (align | (align - 1)) + 1;
	return heap_alloc(align ? align : 16, size, 0);
}

HP_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	int saved = errno;

	if (!pow2(align) || align % sizeof(void *))
		return EINVAL;
	void *p = heap_alloc(align, size, 0);
	if (!p) {
		int err = errno == EINVAL ? EINVAL : ENOMEM;
		errno = saved;
		return err;
	}
	*out = p;
	errno = saved;
	return 0;
}

HP_EXPORT void *valloc(size_t size)
{
	return heap_alloc(os_page_size(), size, 0);
}

HP_EXPORT void *pvalloc(size_t size)
{
	size_t ps = os_page_size();

	if (size > SIZE_MAX - ps) {
		errno = ENOMEM;
		return NULL;
	}
	/* pvalloc(0) is one page, as any other size is rounded up to pages */
	size = size ? (size + ps - 1) & ~(ps - 1) : ps;
	return heap_alloc(ps, size, 0);
}

HP_EXPORT size_t malloc_usable_size(void *p)
{
	struct blockref ref;

	if (!p)
		return 0;
	int kind = sm_lookup(p, &ref);
	return block_usable(p, kind, &ref);
}

HP_EXPORT int malloc_trim(size_t pad)
{
	(void)pad;
	if (enter_slow() < 0)
		return 0;
	t_busy++;
	long n = secretmem_trim();
	t_busy--;
	return n > 0;
}

/* Accepted and ignored: none of glibc's tunables applies here. */
HP_EXPORT int mallopt(int param, int value)
{
	(void)param;
	(void)value;
	return 1;
}

HP_EXPORT struct mallinfo2 mallinfo2(void)
{
	struct mallinfo2 mi;
	struct secretmem_stats st;

	memset(&mi, 0, sizeof(mi));
	memset(&st, 0, sizeof(st));
	if (enter_slow() == 0) {
		t_busy++;
		secretmem_stats(&st);
		t_busy--;
	}
	size_t plain = __atomic_load_n(&stats->plain_bytes, __ATOMIC_RELAXED) +
		       __atomic_load_n(&stats->early_bytes, __ATOMIC_RELAXED);
	mi.arena = st.bytes_mapped + plain;             /* memory held */
	mi.uordblks = st.bytes_in_use + plain;          /* in use */
	mi.fordblks = st.bytes_mapped - st.bytes_in_use; /* free in our chunks */
	mi.ordblks = st.live_allocations;
	mi.hblks = __atomic_load_n(&stats->plain_blocks, __ATOMIC_RELAXED);
	mi.hblkhd = __atomic_load_n(&stats->plain_bytes, __ATOMIC_RELAXED);
	return mi;
}

static int clamp(size_t v)
{
	return v > INT32_MAX ? INT32_MAX : (int)v;
}

HP_EXPORT struct mallinfo mallinfo(void)
{
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo mi;

	memset(&mi, 0, sizeof(mi));
	mi.arena = clamp(m2.arena);
	mi.ordblks = clamp(m2.ordblks);
	mi.hblks = clamp(m2.hblks);
	mi.hblkhd = clamp(m2.hblkhd);
	mi.uordblks = clamp(m2.uordblks);
	mi.fordblks = clamp(m2.fordblks);
	return mi;
}

/* One line of the report per range the program locked (mmcalls.c). */
static void report_adopted(const void *addr, size_t len, const char *by, void *arg)
{
	char line[200];
	int n = snprintf(line, sizeof(line), "secretmem-heap: report: pid %d, adopted %p-%p (%zu bytes), locked by %s\n",
			 (int)getpid(), addr, (const void *)((const char *)addr + len), len, by);

	(void)arg;
	if (n > 0 && !sm_warnings_are_off() &&
	    write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		return;
}

/* SECRETMEM_REPORT=1 (secretmem exec --report): the figures at exit(). */
__attribute__((destructor)) static void heap_report(void)
{
	char line[700];

	int n;

	if (!sm_env_switch("SECRETMEM_REPORT") || !__atomic_load_n(&ready, __ATOMIC_ACQUIRE) || stood_down == SD_TWIN)
		return;
	if (!stood_down)
		hp_adopt_figures(); /* fork's clean-up of stale records is not counted as it happens */
	if (stood_down == SD_OTHER)
		n = snprintf(line, sizeof(line), "secretmem-heap: report: pid %d, inactive (%s): every block in "
			     "ordinary memory\n", (int)getpid(), stats->reason);
	else
		n = snprintf(line, sizeof(line),
			 "secretmem-heap: report: pid %d, %s: secret %llu bytes, locked fallback %llu bytes, plain %llu "
			 "bytes in %llu blocks, early %llu bytes, adopted %llu bytes in %llu ranges\n",
			 (int)getpid(), stood_down ? "stood down" : "active",
			 (unsigned long long)stats->secret_bytes, (unsigned long long)stats->fallback_bytes,
			 (unsigned long long)stats->plain_bytes, (unsigned long long)stats->plain_blocks,
			 (unsigned long long)stats->early_bytes, (unsigned long long)stats->adopted_bytes,
			 (unsigned long long)stats->adopted_ranges);
	if (n > 0 && !sm_warnings_are_off() &&
	    write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		return;
	if (!stood_down)
		sm_adopt_each(report_adopted, NULL);
}

#if __has_attribute(copy) /* gcc 9 and later; not clang 14 */
extern __typeof(malloc) hp_malloc_here __attribute__((alias("malloc"), copy(malloc), visibility("hidden")));
#else
extern __typeof(malloc) hp_malloc_here __attribute__((alias("malloc"), visibility("hidden")));
#endif

void hp_start(void)
{
	if (!t_busy && !__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
		enter_slow();
}

void hp_adopt_figures(void)
{
	size_t ranges, bytes;

	sm_adopt_totals(&ranges, &bytes);
	st_set(&stats->adopted_ranges, ranges);
	st_set(&stats->adopted_bytes, bytes);
}

void *hp_arena_alloc(size_t size, int *plain)
{
	*plain = 0;
	if (SM_UNLIKELY(t_state != T_LIVE || t_busy) && enter_slow() < 0) {
		*plain = 1; /* the module does not serve this call: as without it */
		return NULL;
	}
	if (!__atomic_load_n(&plain_sticky, __ATOMIC_RELAXED)) {
		/* aligned above a page: a region of its own (a large block)
		 * of the arena's size, charged to the memory-lock limit for
		 * that size alone (a run would have its chunk mapped around
		 * it); 16 KiB, pymalloc's pool size, so that every pool of the
		 * arena is usable */
		void *p = secret_alloc(16384, size);
		if (p)
			return p;
	}
	if (require)
		return fail_required();
	note_refusal();
	*plain = 1;
	return NULL;
}

int hp_arena_free(void *p)
{
	struct blockref ref;

	if (!p || sm_lookup(p, &ref) != LOOKUP_OK)
		return 0;
	free(p);
	return 1;
}

void hp_python_mode(int mode)
{
	st_set(&stats->python, __atomic_load_n(&stats->python, __ATOMIC_RELAXED) | (uint64_t)mode);
}

void hp_stack_mode(int mode)
{
	st_set(&stats->stacks, (uint64_t)mode);
}

void hp_stack_sandboxed(void)
{
	uint64_t on = 1;
	__atomic_compare_exchange_n(&stats->stacks, &on, 2, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

void hp_stack_cleared(void)
{
	st_add(&stats->stack_clearings, 1);
}

int hp_serving(void)
{
	return __atomic_load_n(&ready, __ATOMIC_ACQUIRE) && !stood_down;
}

/*
 * Nothing allocated before main()?  Start up anyway, so that the fork
 * handlers are in place before the program registers its own.  When this
 * copy's malloc is not the process's, only a module that was asked for
 * (LD_PRELOAD) starts, to say so (winner.c); one loaded by dlopen() never
 * runs, and its library copy never starts.
 */
__attribute__((constructor)) static void heap_constructor(void)
{
	void *(*active)(size_t) = malloc;
	int saved = errno; /* main() starts with errno 0 (C11 7.5), as without the module */

	if (!t_busy && (active == hp_malloc_here || hp_requested()))
		enter_slow();
	if (hp_serving()) {
		hp_python_arenas(1); /* before main(): Python starts there (not in a
				      * library's constructor, which ran first) */
		hp_stack_on();       /* the seccomp state at start (sandbox.c) */
	}
	errno = saved;
}
