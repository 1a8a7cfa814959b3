/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * bench.c - the allocator benchmark.
 *
 * secretmem_malloc against six other ways of holding secrets, all measured
 * in one run and printed as one table:
 *
 *   secretmem    secretmem_malloc / secretmem_free
 *   glibc+bzero  malloc, then explicit_bzero + free (no protection at all;
 *                the speed reference every ratio is taken against)
 *   mimalloc     mi_malloc / explicit_bzero + mi_free, and
 *   jemalloc     mallocx / explicit_bzero + dallocx: the best general
 *                allocators, from Debian's libmimalloc.so.2 and
 *                libjemalloc.so.2, dlopen()ed with RTLD_LOCAL|RTLD_DEEPBIND
 *                so that the process's malloc stays glibc's (checked)
 *   openssl-sh   OpenSSL's secure heap (CRYPTO_secure_malloc_init, one
 *                mlock()ed arena behind a global lock)
 *   sodium       libsodium's sodium_malloc / sodium_free (mmap, guard pages,
 *                mlock per allocation)
 *   naive-memfd  one memfd_secret(2) file per secret: memfd_secret +
 *                ftruncate + mmap on alloc, munmap + close on free
 *
 * Method: every timed figure is taken in R interleaved rounds; in each
 * round every allocator runs the same work once (the order rotates from
 * round to round), and the figure reported is the median and the range
 * (min-max) over the rounds of the per-round ratio to glibc+bzero, on CPU
 * time (the thread's, or the process's for the 2-thread case) and on wall
 * time.  Never the best of N: on a shared machine the best run is luck.
 *
 * Workloads (numbers as in the table):
 *   1  32-byte pair: alloc(32) + write + free
 *   2  1,000 allocs (each written), then 1,000 frees
 *   3  random sizes 16-512 B in a 1,000-block live set
 *   4  1 and 2 threads, 100 x (alloc(32) + write) then 100 frees
 *   5  random sizes 1 B-64 KiB in a 64-block live set (churn), with the
 *      page faults (minflt) and new secretmem mappings per operation
 *   6  realloc chain 16 B -> 64 KiB by doubling (each step written): in a
 *      fresh process, after one warm-up chain, after the churn of 5, after
 *      the allocator's trim, and in a child after fork
 *   7  growing the live set by 32-byte secrets (fresh process), beside the
 *      page-fault floor measured in the same process: the cost of first
 *      touching a fresh secret page divided by the 32-byte slots per page;
 *      three processes per round (its per-process ratio spreads widely)
 *   8  pair time at every 16-byte position in one page (max/min), in three
 *      processes
 *   9  secret pages used by 10,000 x 32 B; 10 the most 32-byte secrets
 *      under an 8 MiB RLIMIT_MEMLOCK; 11 pages faulted by a churn of 10^6
 *      operations
 * 6-11 run in fresh copies of this program (re-executed with --child ...).
 *
 * Usage: bench [--quick] [--csv FILE]
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <linux/capability.h>
#include <malloc.h>
#include <math.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "secretmem.h"

#define SMALL 32                  /* the size of "a secret" in most cases  */
#define BATCH 1000                /* live blocks in the batch case          */
#define LIVE 1000                 /* live set of the random-size case       */
#define BIG_LIVE 64               /* live set of the 1 B-64 KiB churn       */
#define BIG_MAX 65536
#define RND_N 65536               /* length of the random tables (pow. of 2) */
#define THREAD_BATCH 100          /* blocks alive at once per thread        */
#define PAGES_N 10000             /* blocks in the secret-page case         */
#define MEMLOCK_LIMIT (8u << 20)  /* RLIMIT_MEMLOCK of the memory-lock case */
#define CHURN_OPS 1000000L        /* operations of the churn case           */
#define CHURN_LIVE 1000           /* at most this many live in the churn    */
#define CHAIN_CHURN_OPS 500       /* churn before the "after churn" chain   */
#define GROW_N 20000              /* secrets added in the growth case       */
#define GROW_N_SLOW 2000          /* ... for sodium and naive-memfd         */
#define GROW_PER_ROUND 3          /* growth processes per round and allocator */
#define FLOOR_PAGES 256           /* fresh secret pages touched for the floor */
#define SWEEP_PROCS 3
#define OSSL_ARENA (16u << 20)    /* OpenSSL secure heap for the timed cases */
#define MAXROUNDS 64
#define CLASS_SLOTS (512 / 4 + 1) /* usable sizes up to 512, by 4 bytes */

/* Keep the compiler from dropping a write or an allocation: p escapes. */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

extern char **environ;
static volatile uintptr_t sink;
static size_t page_size;

static struct {
	int quick;
	const char *csv;
	double target_ns; /* length of one timed run */
	int rounds;       /* interleaved rounds of the in-process cases */
	int child_rounds; /* rounds of the cases run in fresh processes */
	long sweep_pairs; /* pairs per position in the slot-offset sweep */
} opt;

static double clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static long thread_minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt;
}

static size_t regions_created(void)
{
	struct secretmem_stats st;

	return secretmem_stats(&st) == 0 ? st.regions_created : 0;
}

/*
 * A timed run: wall time (CLOCK_MONOTONIC), the CPU time of the calling
 * thread, its minor page faults, and with count_maps the secretmem regions
 * created - all between timer_start() and timer_stop() only.
 */
static double wall0, cpu0, last_cpu, last_faults, last_maps;
static long flt0;
static size_t maps0;
static int count_maps;

static void timer_start(void)
{
	flt0 = thread_minflt();
	if (count_maps)
		maps0 = regions_created();
	cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	wall0 = now_ns();
}

/* Wall time since timer_start(); the CPU time goes to last_cpu. */
static double timer_stop(void)
{
	double w = now_ns() - wall0;

	last_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	last_faults = (double)(thread_minflt() - flt0);
	last_maps = count_maps ? (double)(regions_created() - maps0) : NAN;
	return w;
}

static void die(const char *what)
{
	fprintf(stderr, "bench: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void oom(const char *who)
{
	fprintf(stderr, "bench: %s: allocation failed: %s\n", who, strerror(errno));
	exit(2);
}

/* ------------------------------------------------------------------ */
/* The allocators                                                      */
/* ------------------------------------------------------------------ */

enum { A_SECRETMEM, A_GLIBC, A_MIMALLOC, A_JEMALLOC, A_OPENSSL, A_SODIUM, A_NAIVE, NALLOC };

static void *alloc_secretmem(size_t n)
{
	return secretmem_malloc(n);
}

static void release_secretmem(void *p, size_t n)
{
	(void)n;
	secretmem_free(p);
}

static void *realloc_secretmem(void *p, size_t old, size_t n)
{
	(void)old;
	return secretmem_realloc(p, n);
}

static void *alloc_glibc(size_t n)
{
	return malloc(n);
}

static void release_glibc(void *p, size_t n)
{
	explicit_bzero(p, n);
	free(p);
}

static void *realloc_glibc(void *p, size_t old, size_t n)
{
	(void)old;
	return realloc(p, n);
}

/* mimalloc and jemalloc, resolved in their own libraries by load_general() */
static void *(*mi_malloc_p)(size_t);
static void (*mi_free_p)(void *);
static void *(*mi_realloc_p)(void *, size_t);
static void (*mi_collect_p)(bool);
static void *(*je_mallocx_p)(size_t, int);
static void (*je_dallocx_p)(void *, int);
static void *(*je_rallocx_p)(void *, size_t, int);
static int (*je_mallctl_p)(const char *, void *, size_t *, void *, size_t);

static void *alloc_mimalloc(size_t n)
{
	return mi_malloc_p(n);
}

static void release_mimalloc(void *p, size_t n)
{
	explicit_bzero(p, n);
	mi_free_p(p);
}

static void *realloc_mimalloc(void *p, size_t old, size_t n)
{
	(void)old;
	return mi_realloc_p(p, n);
}

static void *alloc_jemalloc(size_t n)
{
	return je_mallocx_p(n, 0);
}

static void release_jemalloc(void *p, size_t n)
{
	explicit_bzero(p, n);
	je_dallocx_p(p, 0);
}

static void *realloc_jemalloc(void *p, size_t old, size_t n)
{
	(void)old;
	return je_rallocx_p(p, n, 0);
}

static void *alloc_openssl(size_t n)
{
	return OPENSSL_secure_malloc(n);
}

/* CRYPTO_secure_free clears the block (OPENSSL_cleanse) before freeing. */
static void release_openssl(void *p, size_t n)
{
	(void)n;
	OPENSSL_secure_free(p);
}

static void *alloc_sodium(size_t n)
{
	return sodium_malloc(n);
}

static void release_sodium(void *p, size_t n)
{
	(void)n;
	sodium_free(p);
}

/*
 * The naive allocator: one memfd_secret file per secret, kept open for the
 * life of the block (as the Rust memsec crate does).  The first 16 bytes of
 * the page hold the fd and the mapping length; the block follows.
 */
struct naive_head {
	int fd;
	size_t len;
};
#define NAIVE_HEAD 16

static void *alloc_naive(size_t n)
{
	size_t len = (n + NAIVE_HEAD + page_size - 1) & ~(page_size - 1);
	int fd = secretmem_memfd(O_CLOEXEC);

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	if (ftruncate(fd, (off_t)len) != 0)
		goto fail;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	struct naive_head *h = m;
	h->fd = fd;
	h->len = len;
	return (char *)m + NAIVE_HEAD;
fail:;
	int e = errno;
	close(fd);
	errno = e;
	return NULL;
}

static void release_naive(void *p, size_t n)
{
	struct naive_head *h = (struct naive_head *)((char *)p - NAIVE_HEAD);
	int fd = h->fd;
	size_t len = h->len;

	explicit_bzero(p, n);
	munmap(h, len);
	close(fd);
}

/* The secure allocators without a realloc: allocate, copy, free. */
#define COPY_REALLOC(id)                                                \
	static void *realloc_##id(void *p, size_t old, size_t n)        \
	{                                                               \
		void *q = alloc_##id(n);                                \
		if (q) {                                                \
			memcpy(q, p, old < n ? old : n);                \
			release_##id(p, old);                           \
		}                                                       \
		return q;                                               \
	}
COPY_REALLOC(openssl)
COPY_REALLOC(sodium)
COPY_REALLOC(naive)

/* Each allocator's trim, for the "after trim" chain. */
static void trim_secretmem(void)
{
	secretmem_trim();
}

static void trim_glibc(void)
{
	malloc_trim(0);
}

static void trim_mimalloc(void)
{
	if (mi_collect_p)
		mi_collect_p(true);
}

static void trim_jemalloc(void)
{
	if (je_mallctl_p) /* MALLCTL_ARENAS_ALL = 4096 */
		je_mallctl_p("arena.4096.purge", NULL, NULL, NULL, 0);
}

static void trim_none(void)
{
}
#define trim_openssl trim_none
#define trim_sodium trim_none
#define trim_naive trim_none

/* ------------------------------------------------------------------ */
/* Timed loops, instantiated per allocator so the calls are direct     */
/* ------------------------------------------------------------------ */

typedef void *(*alloc_fn)(size_t);
typedef void (*release_fn)(void *, size_t);

#define INLINE static inline __attribute__((always_inline))

static const char *cur_name = "";
static uint32_t rnd_size[RND_N];
static uint32_t rnd_slot[RND_N];
static uint32_t big_size[RND_N];

/* 1: k pairs of alloc(32) + write + free. */
INLINE double loop_pairs(alloc_fn a, release_fn f, long k)
{
	uintptr_t acc = 0;
	timer_start();
	for (long i = 0; i < k; i++) {
		unsigned char *p = a(SMALL);
		if (!p)
			oom(cur_name);
		memset(p, (int)i | 1, SMALL);
		ESCAPE(p);
		acc ^= (uintptr_t)p;
		f(p, SMALL);
	}
	double t = timer_stop();
	sink ^= acc;
	return t;
}

/* 2: k rounds of 1,000 allocs (each written), then 1,000 frees. */
INLINE double loop_batch(alloc_fn a, release_fn f, long k)
{
	static unsigned char *v[BATCH];
	uintptr_t acc = 0;
	timer_start();
	for (long r = 0; r < k; r++) {
		for (int i = 0; i < BATCH; i++) {
			unsigned char *p = a(SMALL);
			if (!p)
				oom(cur_name);
			memset(p, i | 1, SMALL);
			ESCAPE(p);
			v[i] = p;
		}
		for (int i = 0; i < BATCH; i++) {
			acc ^= (uintptr_t)v[i];
			f(v[i], SMALL);
		}
	}
	double t = timer_stop();
	sink ^= acc;
	return t;
}

/*
 * 3 and 5: a live set of `live` blocks of random sizes from table sz
 * (filled before the clock starts); each of the k timed operations frees a
 * random member and puts a new block of a random size (fully written) in
 * its place.
 */
INLINE double loop_random(alloc_fn a, release_fn f, long k, const uint32_t *sz, int live)
{
	static unsigned char *v[LIVE];
	static size_t vn[LIVE];
	uintptr_t acc = 0;

	for (int i = 0; i < live; i++) {
		vn[i] = sz[(unsigned)i * 7919u % RND_N];
		v[i] = a(vn[i]);
		if (!v[i])
			oom(cur_name);
		memset(v[i], 1, vn[i]);
	}
	timer_start();
	for (long i = 0; i < k; i++) {
		unsigned j = rnd_slot[i & (RND_N - 1)] % (unsigned)live;
		size_t n = sz[i & (RND_N - 1)];
		f(v[j], vn[j]);
		unsigned char *p = a(n);
		if (!p)
			oom(cur_name);
		memset(p, (int)i | 1, n);
		ESCAPE(p);
		acc ^= (uintptr_t)p;
		v[j] = p;
		vn[j] = n;
	}
	double t = timer_stop();
	for (int i = 0; i < live; i++)
		f(v[i], vn[i]);
	sink ^= acc;
	return t;
}

/* 4, per thread: k rounds of 100 x (alloc(32) + write), then frees. */
INLINE void loop_work(alloc_fn a, release_fn f, long k)
{
	unsigned char *v[THREAD_BATCH];
	uintptr_t acc = 0;

	for (long r = 0; r < k; r++) {
		for (int i = 0; i < THREAD_BATCH; i++) {
			unsigned char *p = a(SMALL);
			if (!p)
				oom(cur_name);
			memset(p, i | 1, SMALL);
			ESCAPE(p);
			v[i] = p;
		}
		for (int i = 0; i < THREAD_BATCH; i++) {
			acc ^= (uintptr_t)v[i];
			f(v[i], SMALL);
		}
	}
	sink ^= acc;
}

#define DEFINE_LOOPS(id)                                                                       \
	static double pairs_##id(long k) { return loop_pairs(alloc_##id, release_##id, k); }   \
	static double batch_##id(long k) { return loop_batch(alloc_##id, release_##id, k); }   \
	static double random_##id(long k)                                                      \
	{                                                                                      \
		return loop_random(alloc_##id, release_##id, k, rnd_size, LIVE);               \
	}                                                                                      \
	static double big_##id(long k)                                                         \
	{                                                                                      \
		return loop_random(alloc_##id, release_##id, k, big_size, BIG_LIVE);           \
	}                                                                                      \
	static void work_##id(long k) { loop_work(alloc_##id, release_##id, k); }

DEFINE_LOOPS(secretmem)
DEFINE_LOOPS(glibc)
DEFINE_LOOPS(mimalloc)
DEFINE_LOOPS(jemalloc)
DEFINE_LOOPS(openssl)
DEFINE_LOOPS(sodium)
DEFINE_LOOPS(naive)

struct allocator {
	const char *name;
	alloc_fn alloc;
	release_fn release;
	void *(*realloc)(void *, size_t, size_t);
	void (*trim)(void);
	double (*pairs)(long);
	double (*batch)(long);
	double (*random)(long);
	double (*big)(long);
	void (*work)(long);
	int available;
	const char *why; /* when not available */
};

#define ALLOCATOR(id)                                                                          \
	{ #id, alloc_##id, release_##id, realloc_##id, trim_##id, pairs_##id, batch_##id,      \
	  random_##id, big_##id, work_##id, 1, NULL }

static struct allocator allocs[NALLOC] = {
	ALLOCATOR(secretmem), ALLOCATOR(glibc),  ALLOCATOR(mimalloc), ALLOCATOR(jemalloc),
	ALLOCATOR(openssl),   ALLOCATOR(sodium), ALLOCATOR(naive),
};

static const char *const col_name[NALLOC] = {
	"secretmem", "glibc+bzero", "mimalloc", "jemalloc", "openssl-sh", "sodium", "naive-memfd",
};

static int find_alloc(const char *name)
{
	for (int i = 0; i < NALLOC; i++)
		if (strcmp(allocs[i].name, name) == 0)
			return i;
	return -1;
}

static char general_why[2][256];

/*
 * mimalloc and jemalloc from Debian's shared libraries, each in its own
 * symbol scope: RTLD_LOCAL keeps their malloc out of the process's global
 * scope (the process's malloc stays glibc's), RTLD_DEEPBIND makes their own
 * calls bind inside them.  A missing library makes that column "n/a" with
 * the reason.
 */
static void load_general(void)
{
	void *h = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);

	if (h) {
		*(void **)&mi_malloc_p = dlsym(h, "mi_malloc");
		*(void **)&mi_free_p = dlsym(h, "mi_free");
		*(void **)&mi_realloc_p = dlsym(h, "mi_realloc");
		*(void **)&mi_collect_p = dlsym(h, "mi_collect");
	}
	if (!h || !mi_malloc_p || !mi_free_p || !mi_realloc_p) {
		snprintf(general_why[0], sizeof(general_why[0]), "libmimalloc.so.2: %s (Debian package libmimalloc2.0)",
			 h ? "mi_malloc/mi_free/mi_realloc missing" : dlerror());
		allocs[A_MIMALLOC].available = 0;
		allocs[A_MIMALLOC].why = general_why[0];
	}
	h = dlopen("libjemalloc.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (h) {
		*(void **)&je_mallocx_p = dlsym(h, "mallocx");
		*(void **)&je_dallocx_p = dlsym(h, "dallocx");
		*(void **)&je_rallocx_p = dlsym(h, "rallocx");
		*(void **)&je_mallctl_p = dlsym(h, "mallctl");
	}
	if (!h || !je_mallocx_p || !je_dallocx_p || !je_rallocx_p) {
		snprintf(general_why[1], sizeof(general_why[1]), "libjemalloc.so.2: %s (Debian package libjemalloc2)",
			 h ? "mallocx/dallocx/rallocx missing" : dlerror());
		allocs[A_JEMALLOC].available = 0;
		allocs[A_JEMALLOC].why = general_why[1];
	}
}

/* The library that defines the process's malloc (should be libc). */
static const char *process_malloc(void)
{
	Dl_info di;
	void *m = dlsym(RTLD_DEFAULT, "malloc");

	if (m && dladdr(m, &di) && di.dli_fname) {
		const char *s = strrchr(di.dli_fname, '/');
		return s ? s + 1 : di.dli_fname;
	}
	return "?";
}

/* ------------------------------------------------------------------ */
/* Samples and rounds                                                  */
/* ------------------------------------------------------------------ */

enum {
	W_PAIR, W_BATCH, W_RANDOM, W_THR1, W_THR2, W_BIG,
	W_CH_FRESH, W_CH_WARM, W_CH_CHURN, W_CH_TRIM, W_CH_FORK, W_GROW,
	W_PS_FRESH, W_PS_WARM, W_PS_CHURN, W_PS_TRIM, W_PS_FORK,
	/* the same, measured again right after (the state's steady cost) */
	W_CH2_FRESH, W_CH2_WARM, W_CH2_CHURN, W_CH2_TRIM, W_CH2_FORK,
	W_PS2_FRESH, W_PS2_WARM, W_PS2_CHURN, W_PS2_TRIM, W_PS2_FORK,
	/* chains: CHAIN_STEADY more after that, timed together */
	W_CH3_FRESH, W_CH3_WARM, W_CH3_CHURN, W_CH3_TRIM, W_CH3_FORK, NWORK
};

/* One run of one workload by one allocator: per operation, except aux. */
struct sample {
	double cpu, wall;   /* ns per operation                               */
	double faults;      /* minor page faults per operation                */
	double maps;        /* new secretmem mappings per operation (secretmem) */
	double aux_cpu, aux_wall; /* threads: busiest thread's CPU, total wall;
	                             growth: the page-fault floor per secret   */
};

struct series {
	int n;
	struct sample s[MAXROUNDS];
};

static struct series ser[NWORK][NALLOC];
static double sweep[NALLOC][SWEEP_PROCS]; /* max/min pair time over positions */
static double sweep_npos[NALLOC], sweep_same[NALLOC];
static const char *chain_state[] = { "fresh", "warm", "churn", "trim", "fork" };

static void add_sample(int w, int a, struct sample s)
{
	struct series *q = &ser[w][a];

	if (q->n < MAXROUNDS)
		q->s[q->n++] = s;
}

/*
 * The number of units (k) for which run(k) takes about opt.target_ns: runs
 * of growing k (which also warm the allocator up) for at least half that
 * time, and until one run took a sixteenth of it (so that the clock's own
 * cost does not set k); the allocator's first call is left out.
 */
static long calibrate(double (*run)(long, void *), void *arg)
{
	long k = 1;
	double spent = 0, per = INFINITY, t = 0;

	run(1, arg); /* the first call may set the allocator up: not timed */
	while (spent < opt.target_ns / 2 || t < opt.target_ns / 16) {
		t = run(k, arg);
		spent += t;
		if (t >= opt.target_ns / 64 && t / (double)k < per)
			per = t / (double)k;
		if (t < opt.target_ns / 16 && k < (1L << 40))
			k *= 4;
	}
	double want = opt.target_ns / per;
	return want < 1 ? 1 : (long)want;
}

static double run_single(long k, void *arg)
{
	double (*run)(long) = *(double (**)(long))arg;

	return run(k);
}

/* One timed single-thread run of k units of ops_per_unit operations. */
static struct sample sample_single(int a, double (*run)(long), long k, double ops_per_unit)
{
	count_maps = a == A_SECRETMEM;
	double w = run(k), c = last_cpu, ops = (double)k * ops_per_unit;
	struct sample s = { c / ops, w / ops, last_faults / ops, last_maps / ops, NAN, NAN };

	count_maps = 0;
	return s;
}

/*
 * 4: T threads each run work(k), started together on a barrier.  Wall time
 * from the first thread's start to the last one's end; CPU time: the sum
 * over the threads of each one's CPU time from its start to its end (the
 * process's CPU time for the work, without creating and ending the
 * threads), and the busiest thread's.
 */
struct thread_arg {
	void (*work)(long);
	long k;
	pthread_barrier_t *start;
	double t0, t1, cpu;
} __attribute__((aligned(64)));

static void *thread_main(void *p)
{
	struct thread_arg *a = p;

	pthread_barrier_wait(a->start);
	double c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	a->t0 = now_ns();
	a->work(a->k);
	a->t1 = now_ns();
	a->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	return NULL;
}

static struct sample run_threads(void (*work)(long), long k, int nthreads)
{
	pthread_t tid[2];
	struct thread_arg arg[2];
	pthread_barrier_t start;
	double busy = 0, t0 = INFINITY, t1 = 0, pcpu = 0;

	if (pthread_barrier_init(&start, NULL, (unsigned)nthreads) != 0)
		die("pthread_barrier_init");
	for (int i = 0; i < nthreads; i++) {
		arg[i] = (struct thread_arg){ .work = work, .k = k, .start = &start };
		if (pthread_create(&tid[i], NULL, thread_main, &arg[i]) != 0)
			die("pthread_create");
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(tid[i], NULL);
		t0 = arg[i].t0 < t0 ? arg[i].t0 : t0;
		t1 = arg[i].t1 > t1 ? arg[i].t1 : t1;
		busy = arg[i].cpu > busy ? arg[i].cpu : busy;
		pcpu += arg[i].cpu;
	}
	pthread_barrier_destroy(&start);
	double ops = (double)nthreads * (double)k * THREAD_BATCH;
	return (struct sample){ pcpu / ops, (t1 - t0) / ops, NAN, NAN, busy, t1 - t0 };
}

static double run_one_thread(long k, void *arg)
{
	void (*work)(long) = *(void (**)(long))arg;

	return run_threads(work, k, 1).aux_wall;
}

/* The in-process workloads, in interleaved rounds. */
static void measure_in_process(void)
{
	static const int works[] = { W_PAIR, W_BATCH, W_RANDOM, W_BIG, W_THR1 };
	long k[NALLOC];

	for (size_t wi = 0; wi < sizeof(works) / sizeof(works[0]); wi++) {
		int w = works[wi];
		for (int a = 0; a < NALLOC; a++) {
			struct allocator *al = &allocs[a];
			if (!al->available)
				continue;
			cur_name = al->name;
			double (*run)(long) = w == W_PAIR ? al->pairs : w == W_BATCH ? al->batch
					    : w == W_RANDOM ? al->random : al->big;
			k[a] = w == W_THR1 ? calibrate(run_one_thread, &al->work) : calibrate(run_single, &run);
		}
		fprintf(stderr, "bench: workload %d, %d rounds\n", w, opt.rounds);
		for (int r = 0; r < opt.rounds; r++) {
			for (int i = 0; i < NALLOC; i++) {
				int a = (i + r) % NALLOC;
				struct allocator *al = &allocs[a];
				if (!al->available)
					continue;
				cur_name = al->name;
				switch (w) {
				case W_PAIR: add_sample(w, a, sample_single(a, al->pairs, k[a], 1)); break;
				case W_BATCH: add_sample(w, a, sample_single(a, al->batch, k[a], BATCH)); break;
				case W_RANDOM: add_sample(w, a, sample_single(a, al->random, k[a], 1)); break;
				case W_BIG: add_sample(w, a, sample_single(a, al->big, k[a], 1)); break;
				default:
					add_sample(W_THR1, a, run_threads(al->work, k[a], 1));
					add_sample(W_THR2, a, run_threads(al->work, k[a], 2));
				}
			}
		}
	}
}

/* ------------------------------------------------------------------ */
/* Helpers for the child cases                                         */
/* ------------------------------------------------------------------ */

/* VmLck of this process in KiB, or -1. */
static long vm_locked_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmLck:", 6) == 0)
			sscanf(line + 6, "%ld", &v);
	fclose(f);
	return v;
}

/*
 * Remove CAP_IPC_LOCK from the bounding, effective, permitted and
 * inheritable sets (root ignores RLIMIT_MEMLOCK with it).  A process that
 * may not change its bounding set does not hold the capability anyway.
 */
static int drop_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	unsigned idx = CAP_IPC_LOCK / 32, bit = 1u << (CAP_IPC_LOCK % 32);

	if (prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0) != 0 && errno != EINVAL &&
	    errno != EPERM)
		return -errno;
	if (syscall(SYS_capget, &hdr, data) != 0)
		return -errno;
	if (!((data[idx].effective | data[idx].permitted | data[idx].inheritable) & bit))
		return 0;
	data[idx].effective &= ~bit;
	data[idx].permitted &= ~bit;
	data[idx].inheritable &= ~bit;
	if (syscall(SYS_capset, &hdr, data) != 0)
		return -errno;
	return 0;
}

/* One fd per naive secret: allow as many as the hard limit permits. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return (x > y) - (x < y);
}

static size_t stat_field(int which)
{
	struct secretmem_stats st;

	if (secretmem_stats(&st) != 0)
		return 0;
	return which == 0 ? st.pages_faulted : which == 1 ? st.pages_mapped : st.regions;
}

static void print_loadavg(const char *when)
{
	char buf[128] = "?";
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			snprintf(buf, sizeof(buf), "?\n");
		fclose(f);
	}
	printf("load average %s: %s", when, buf);
}

static void fill_random_tables(void)
{
	uint64_t x = 0x2545f4914f6cdd1dull;

	for (int i = 0; i < RND_N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		rnd_size[i] = 16 + (uint32_t)(x % 497);
		rnd_slot[i] = (uint32_t)((x >> 20) % LIVE);
		big_size[i] = 1 + (uint32_t)((x >> 32) % BIG_MAX);
	}
}

/*
 * Run this program again with --child what arg [arg2]; parse up to nout numbers
 * from its output.  Returns the count parsed, or -1 (status describes why).
 */
static int run_child(const char *what, const char *arg, const char *arg2, double *out, int nout,
		     char *status, size_t status_len)
{
	int fd[2];

	snprintf(status, status_len, "failed");
	fflush(NULL);
	if (pipe(fd) != 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl("/proc/self/exe", "bench", "--child", what, arg, arg2, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	char buf[512];
	size_t len = 0;
	ssize_t r;
	while ((r = read(fd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	close(fd[0]);
	buf[len] = 0;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	if (WIFSIGNALED(st)) {
		snprintf(status, status_len, "killed by SIG%s", sigabbrev_np(WTERMSIG(st)) ?
			 sigabbrev_np(WTERMSIG(st)) : "?");
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(status, status_len, "exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -1;
	}
	int n = 0;
	char *s = buf, *end;
	while (n < nout) {
		double d = strtod(s, &end);
		if (end == s)
			break;
		out[n++] = d;
		s = end;
	}
	snprintf(status, status_len, "ok");
	return n;
}

/* Initialise the allocator a for a child case; arena: OpenSSL heap size. */
static int child_init(int a, size_t arena)
{
	struct secretmem_stats st;

	switch (a) {
	case A_SECRETMEM:
		secretmem_stats(&st); /* the library's set-up, outside the clock */
		return 1;
	case A_OPENSSL:
		return CRYPTO_secure_malloc_init(arena, 16);
	case A_SODIUM:
		if (sodium_init() < 0) {
			fprintf(stderr, "bench: sodium_init failed\n");
			exit(2);
		}
		return 1;
	case A_NAIVE:
		raise_nofile();
		return 1;
	default:
		if (!allocs[a].available) {
			fprintf(stderr, "bench: %s: %s\n", allocs[a].name, allocs[a].why);
			exit(2);
		}
		return 1;
	}
}

/* 6: one chain 16 B -> 64 KiB by doubling, each new part written. */
static void chain_body(const struct allocator *al)
{
	size_t n = 16;
	unsigned char *p = al->alloc(n);
	if (!p)
		oom(al->name);
	memset(p, 1, n);
	while (n < BIG_MAX) {
		unsigned char *q = al->realloc(p, n, 2 * n);
		if (!q)
			oom(al->name);
		memset(q + n, (int)n | 1, n);
		ESCAPE(q);
		p = q;
		n *= 2;
	}
	al->release(p, n);
}

/* k chains in one timed run; per chain. */
static void chains_timed(int a, double *out, int k)
{
	count_maps = a == A_SECRETMEM;
	timer_start();
	for (int i = 0; i < k; i++)
		chain_body(&allocs[a]);
	out[1] = timer_stop() / k;
	out[0] = last_cpu / k;
	out[2] = last_faults / k;
	out[3] = last_maps / k;
	count_maps = 0;
}

static void chain_once(int a, double *out)
{
	chains_timed(a, out, 1);
}

#define CHAIN_STEADY 10 /* chains timed together for the steady state */
#define CHAIN_STEADY_STR "10"

static void chain_steady(int a, double *out)
{
	chains_timed(a, out, CHAIN_STEADY);
}

/* The churn of 5 for n operations, then every block freed. */
static void churn_big(int a, long n)
{
	cur_name = allocs[a].name;
	loop_random(allocs[a].alloc, allocs[a].release, n, big_size, BIG_LIVE);
}

#define STATE_PAIRS 20000 /* pairs timed in each state of 6 */

/* 6: STATE_PAIRS pairs of alloc(32) + write + free, per pair. */
static void pairs_once(int a, double *out)
{
	count_maps = a == A_SECRETMEM;
	double w = allocs[a].pairs(STATE_PAIRS);
	out[0] = last_cpu / STATE_PAIRS;
	out[1] = w / STATE_PAIRS;
	out[2] = last_faults / STATE_PAIRS;
	out[3] = last_maps / STATE_PAIRS;
	count_maps = 0;
}

/*
 * 6 in one state: the chain (what = chain_once) or the pairs (pairs_once),
 * after the state is set up in this fresh process; then once more (the
 * first run pays what the state left to do: first touch of pages, new
 * mappings), and with then (chains) CHAIN_STEADY more in one timed run (the
 * state's steady cost).  Prints 4 figures per run: 8, or 12 with then.
 */
static int child_state(int a, const char *state, void (*measure)(int, double *),
		       void (*then)(int, double *))
{
	double out[12];
	int nout = then ? 12 : 8;

	child_init(a, OSSL_ARENA);
	if (strcmp(state, "fresh") != 0)
		chain_once(a, out); /* the warm-up chain */
	if (strcmp(state, "churn") == 0 || strcmp(state, "trim") == 0)
		churn_big(a, CHAIN_CHURN_OPS);
	if (strcmp(state, "trim") == 0)
		allocs[a].trim();
	if (strcmp(state, "fork") == 0) {
		int fd[2];
		if (pipe(fd) != 0)
			die("pipe");
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			measure(a, out);
			measure(a, out + 4);
			if (then)
				then(a, out + 8);
			_exit(write(fd[1], out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : 1);
		}
		close(fd[1]);
		int st;
		ssize_t got = read(fd[0], out, sizeof(out));
		if (waitpid(pid, &st, 0) != pid || got != (ssize_t)sizeof(out) || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			fprintf(stderr, "bench: %s: the forked child failed\n", allocs[a].name);
			return 2;
		}
	} else {
		measure(a, out);
		measure(a, out + 4);
		if (then)
			then(a, out + 8);
	}
	for (int i = 0; i < nout; i++)
		printf(i % 4 < 2 ? "%s%.4f" : "%s%.6f", i ? " " : "", out[i]);
	printf("\n");
	return 0;
}

/*
 * 7: the page-fault floor - FLOOR_PAGES fresh pages of one memfd_secret
 * mapping, one byte written in each - then GROW_N new 32-byte secrets
 * (each written), in this fresh process.  Prints, per secret: CPU and wall
 * time of the growth, and of the floor (the time per page divided by the
 * 32-byte slots in a page).
 */
static int child_grow(int a)
{
	static unsigned char *v[GROW_N];
	size_t len = FLOOR_PAGES * page_size;
	int n = (a == A_SODIUM || a == A_NAIVE) ? GROW_N_SLOW : GROW_N;

	child_init(a, OSSL_ARENA);
	/* the harness's own array: its first touch (40 ordinary page faults)
	 * is not the allocator's cost, so it happens outside the clock */
	memset(v, 0, sizeof v);
	ESCAPE(v);
	int fd = secretmem_memfd(O_CLOEXEC);
	if (fd < 0) {
		errno = -fd;
		die("memfd_secret");
	}
	if (ftruncate(fd, (off_t)len) != 0)
		die("ftruncate");
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		die("mmap");
	timer_start();
	for (size_t i = 0; i < FLOOR_PAGES; i++)
		m[i * page_size] = 1;
	double fw = timer_stop(), fc = last_cpu;
	munmap(m, len);
	close(fd);
	double slots = (double)(page_size / SMALL) * FLOOR_PAGES;

	cur_name = allocs[a].name;
	timer_start();
	for (int i = 0; i < n; i++) {
		unsigned char *p = allocs[a].alloc(SMALL);
		if (!p)
			oom(allocs[a].name);
		memset(p, i | 1, SMALL);
		ESCAPE(p);
		v[i] = p;
	}
	double gw = timer_stop(), gc = last_cpu;
	ESCAPE(v);
	printf("%.2f %.2f %.3f %.3f\n", gc / n, gw / n, fc / slots, fw / slots);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * 8: the pair (alloc(16) + write + free) at every 16-byte position in a
 * page: 16-byte blocks are allocated until one sits at every position (or
 * 50,000 were taken); then, per position, that block is freed and `pairs`
 * pairs are timed (an allocator that reuses the last freed block hands the
 * same one back each time), nine times over the positions; per position
 * the median CPU time.  Prints max/min over the positions, the number of
 * positions, and the share of pairs that got the freed block back.
 * Diagnostics (stderr): BENCH_SWEEP_DEBUG=1 prints each position's median
 * and block address; BENCH_SWEEP_PASSES=N measures N times over the same
 * blocks in the same process and prints each pass's max/min, its slowest
 * offset and the CPU it ran on (the last pass is the result); with
 * BENCH_SWEEP_MIGRATE=1 pass k is pinned to CPU k modulo the CPU count.
 */
#define POSITIONS 256
#define SWEEP_REPS 9

/* One pass: per position, the median of SWEEP_REPS timings into med[]. */
static void sweep_pass(const struct allocator *al, unsigned char **held, long pairs, double *med, long *same,
		       long *total)
{
	static double t[POSITIONS][SWEEP_REPS];

	for (int rep = 0; rep < SWEEP_REPS; rep++) {
		for (int pos = 0; pos < POSITIONS; pos++) {
			if (!held[pos])
				continue;
			unsigned char *b = held[pos];
			al->release(b, 16);
			timer_start();
			for (long i = 0; i < pairs; i++) {
				unsigned char *p = al->alloc(16);
				if (!p)
					oom(al->name);
				memset(p, (int)i | 1, 16);
				ESCAPE(p);
				*same += p == b;
				al->release(p, 16);
			}
			timer_stop();
			*total += pairs;
			t[pos][rep] = last_cpu / (double)pairs;
			held[pos] = al->alloc(16);
			if (!held[pos])
				oom(al->name);
		}
	}
	for (int pos = 0; pos < POSITIONS; pos++) {
		if (!held[pos])
			continue;
		qsort(t[pos], SWEEP_REPS, sizeof(double), cmp_double);
		med[pos] = t[pos][SWEEP_REPS / 2];
	}
}

static int child_sweep(int a, long pairs)
{
	const struct allocator *al = &allocs[a];
	static unsigned char *held[POSITIONS], *extra[50000];
	static double med[POSITIONS];
	int npos = 0, nextra = 0;
	long same = 0, total = 0;
	const char *ps = getenv("BENCH_SWEEP_PASSES");
	int passes = ps && atoi(ps) > 1 ? atoi(ps) : 1;
	int debug = getenv("BENCH_SWEEP_DEBUG") != NULL, migrate = getenv("BENCH_SWEEP_MIGRATE") != NULL;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	child_init(a, OSSL_ARENA);
	cur_name = al->name;
	for (int i = 0; i < 50000 && npos < (int)(page_size / 16); i++) {
		unsigned char *p = al->alloc(16);
		if (!p)
			oom(al->name);
		memset(p, 1, 16);
		size_t pos = ((uintptr_t)p % page_size) / 16;
		if (pos < POSITIONS && !held[pos]) {
			held[pos] = p;
			npos++;
		} else {
			extra[nextra++] = p;
		}
	}
	double lo = INFINITY, hi = 0;
	for (int k = 0; k < passes; k++) {
		if (migrate && ncpu > 0) {
			cpu_set_t cs;
			CPU_ZERO(&cs);
			CPU_SET((int)(k % ncpu), &cs);
			sched_setaffinity(0, sizeof(cs), &cs);
		}
		sweep_pass(al, held, pairs, med, &same, &total);
		int hipos = 0;
		lo = INFINITY;
		hi = 0;
		for (int pos = 0; pos < POSITIONS; pos++) {
			if (!held[pos])
				continue;
			if (debug && k == passes - 1)
				fprintf(stderr, "%d %.2f %p\n", pos, med[pos], (void *)held[pos]);
			lo = med[pos] < lo ? med[pos] : lo;
			if (med[pos] > hi) {
				hi = med[pos];
				hipos = pos;
			}
		}
		if (passes > 1)
			fprintf(stderr, "pass %d cpu %d: %.3f, slowest at offset 0x%03x\n", k, sched_getcpu(), hi / lo,
				hipos * 16);
	}
	ESCAPE(extra);
	printf("%.4f %d %.4f\n", hi / lo, npos, (double)same / (double)total);
	return 0;
}


/*
 * Case 5 (child): 10,000 x 32 B, each written.  Prints: distinct pages
 * holding the blocks, VmLck growth in KiB (from before the allocator's
 * initialisation), and for secretmem the growth of pages_faulted,
 * pages_mapped and regions.
 */
static int child_pages(int a)
{
	static unsigned char *v[PAGES_N];
	static uintptr_t pg[2 * PAGES_N];
	long lck0 = vm_locked_kib();
	size_t f0 = 0, m0 = 0, r0 = 0;

	child_init(a, OSSL_ARENA);
	if (a == A_SECRETMEM) {
		f0 = stat_field(0);
		m0 = stat_field(1);
		r0 = stat_field(2);
	}
	for (int i = 0; i < PAGES_N; i++) {
		v[i] = allocs[a].alloc(SMALL);
		if (!v[i])
			oom(allocs[a].name);
		memset(v[i], i | 1, SMALL);
		pg[2 * i] = (uintptr_t)v[i] / page_size;
		pg[2 * i + 1] = ((uintptr_t)v[i] + SMALL - 1) / page_size;
	}
	long lck1 = vm_locked_kib();
	qsort(pg, 2 * PAGES_N, sizeof(pg[0]), cmp_uptr);
	size_t distinct = 0;
	for (size_t i = 0; i < 2 * PAGES_N; i++)
		if (i == 0 || pg[i] != pg[i - 1])
			distinct++;
	long df = -1, dm = -1, dr = -1;
	if (a == A_SECRETMEM) {
		df = (long)(stat_field(0) - f0);
		dm = (long)(stat_field(1) - m0);
		dr = (long)(stat_field(2) - r0);
	}
	printf("%zu %ld %ld %ld %ld\n", distinct, lck1 - lck0, df, dm, dr);
	return 0;
}

/*
 * Case 6 (child): without CAP_IPC_LOCK and with RLIMIT_MEMLOCK 8 MiB,
 * allocate 32-byte secrets (each written) until the allocator says no.
 * sodium_malloc ignores a failing mlock() and goes on with unlocked memory,
 * so for it the count stops at the first block that did not raise VmLck.
 * Prints: count, VmLck KiB, init result (OpenSSL: 1 locked, 2 not
 * locked), stop reason (0 NULL, 1 cap reached, 2 no longer locked), errno.
 */
static int child_memlock(int a)
{
	const long cap = (a == A_SODIUM || a == A_NAIVE) ? 200000 : 4000000;
	struct rlimit rl = { MEMLOCK_LIMIT, MEMLOCK_LIMIT };
	long n = 0, prev = 0;
	int reason = 1, err = 0;

	int rc = drop_cap_ipc_lock();
	if (rc) {
		fprintf(stderr, "bench: cannot drop CAP_IPC_LOCK: %s\n", strerror(-rc));
		return 2;
	}
	if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
		fprintf(stderr, "bench: cannot set RLIMIT_MEMLOCK to 8 MiB (hard limit lower?): %s\n",
			strerror(errno));
		return 2;
	}
	int init = child_init(a, MEMLOCK_LIMIT);
	if (a == A_OPENSSL && init == 0) {
		printf("0 %ld 0 0 0\n", vm_locked_kib());
		return 0;
	}
	if (a == A_SODIUM)
		prev = vm_locked_kib();
	for (; n < cap; n++) {
		unsigned char *p = allocs[a].alloc(SMALL);
		if (!p) {
			reason = 0;
			err = errno;
			break;
		}
		memset(p, (int)n | 1, SMALL);
		ESCAPE(p);
		if (a == A_SODIUM) {
			long l = vm_locked_kib();
			if (l == prev) {
				reason = 2;
				break;
			}
			prev = l;
		}
	}
	printf("%ld %ld %d %d %d\n", n, vm_locked_kib(), init, reason, err);
	return 0;
}

/*
 * Case 7 (child, secretmem): 10^6 random operations with at most 1,000
 * live blocks.  Every 10,000 operations a new target live count is drawn
 * from 0..1000; an operation allocates with probability 3/4 below the
 * target (else frees a random live block) and frees with probability 3/4
 * above it.  mixed = 0: 32-byte blocks; 1: random sizes 16-512 B.
 * Prints: pages faulted during the churn, live high-water mark in pages
 * (sum of usable sizes, rounded up), the same for requested sizes, the
 * high-water mark in blocks, ns per operation, pages mapped at the end,
 * allocations made, and a lower bound for any allocator that keeps each
 * size class on pages of its own: the sum over classes of the class's own
 * high-water mark in pages.
 */
static int child_churn(int mixed)
{
	static unsigned char *v[CHURN_LIVE];
	static size_t vn[CHURN_LIVE];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t live = 0, hwm = 0, bytes = 0, hwm_bytes = 0, req = 0, hwm_req = 0;
	size_t target = 0, nalloc = 0;
	static size_t cls_live[CLASS_SLOTS], cls_hwm[CLASS_SLOTS]; /* by usable/4 */

#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
	size_t f0 = stat_field(0);
	double t0 = now_ns();
	for (long i = 0; i < CHURN_OPS; i++) {
		if (i % 10000 == 0)
			target = (size_t)(NEXT() % (CHURN_LIVE + 1));
		uint64_t r = NEXT();
		int up = live < target ? (r & 3) != 0 : (r & 3) == 0;
		if (live == 0)
			up = 1;
		else if (live == CHURN_LIVE)
			up = 0;
		if (up) {
			size_t n = mixed ? 16 + (size_t)((r >> 8) % 497) : SMALL;
			unsigned char *p = secretmem_malloc(n);
			if (!p)
				oom("secretmem");
			memset(p, (int)i | 1, n);
			ESCAPE(p);
			v[live] = p;
			vn[live] = n;
			nalloc++;
			size_t u = secretmem_usable_size(p);
			if (u / 4 < CLASS_SLOTS && ++cls_live[u / 4] > cls_hwm[u / 4])
				cls_hwm[u / 4] = cls_live[u / 4];
			bytes += u;
			req += n;
			live++;
			if (live > hwm)
				hwm = live;
			if (bytes > hwm_bytes)
				hwm_bytes = bytes;
			if (req > hwm_req)
				hwm_req = req;
		} else {
			size_t j = (size_t)((r >> 8) % live);
			size_t u = secretmem_usable_size(v[j]);
			if (u / 4 < CLASS_SLOTS)
				cls_live[u / 4]--;
			bytes -= u;
			req -= vn[j];
			secretmem_free(v[j]);
			live--;
			v[j] = v[live];
			vn[j] = vn[live];
		}
	}
	double t = now_ns() - t0;
#undef NEXT
	size_t faults = stat_field(0) - f0, bound = 0;
	for (size_t c = 0; c < CLASS_SLOTS; c++)
		bound += (cls_hwm[c] * c * 4 + page_size - 1) / page_size;
	printf("%zu %zu %zu %zu %.1f %zu %zu %zu\n", faults, (hwm_bytes + page_size - 1) / page_size,
	       (hwm_req + page_size - 1) / page_size, hwm, t / CHURN_OPS, stat_field(1), nalloc,
	       bound);
	return 0;
}

static int child_main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "bench: --child needs a case and an argument\n");
		return 2;
	}
	if (strcmp(argv[2], "churn") == 0)
		return child_churn(strcmp(argv[3], "mixed") == 0);
	int a = find_alloc(argv[3]);
	if (a < 0) {
		fprintf(stderr, "bench: unknown allocator %s\n", argv[3]);
		return 2;
	}
	fill_random_tables();
	if (strcmp(argv[2], "pages") == 0)
		return child_pages(a);
	if (strcmp(argv[2], "memlock") == 0)
		return child_memlock(a);
	if (strcmp(argv[2], "chain") == 0 && argc >= 5)
		return child_state(a, argv[4], chain_once, chain_steady);
	if (strcmp(argv[2], "pairstate") == 0 && argc >= 5)
		return child_state(a, argv[4], pairs_once, NULL);
	if (strcmp(argv[2], "grow") == 0)
		return child_grow(a);
	if (strcmp(argv[2], "sweep") == 0 && argc >= 5)
		return child_sweep(a, atol(argv[4]));
	fprintf(stderr, "bench: unknown child case %s\n", argv[2]);
	return 2;
}

/* ------------------------------------------------------------------ */
/* The cases run in fresh processes                                    */
/* ------------------------------------------------------------------ */

struct once {                       /* 9-11: one run each              */
	double pages, locked_kib;          /* 9                            */
	double distinct, mapped, regions;  /* 9, secretmem details          */
	double memlock, memlock_kib;       /* 10                           */
	int memlock_note;                  /* 10: 1 unlocked arena, 2 cap, 3 sodium */
	char pages_status[48], memlock_status[48];
};

static struct once res[NALLOC];
static double churn[2][8];
static char churn_status[2][48];
static char child_fail[256]; /* the first failure of a per-round child */

static void note_child_fail(const char *what, int a, const char *status)
{
	if (!child_fail[0])
		snprintf(child_fail, sizeof(child_fail), "%s %s: %s", what, allocs[a].name, status);
}

/* 6, 7 and 8, in rounds of fresh processes, the allocators taking turns. */
static void measure_children(void)
{
	double out[12];
	char st[48], arg[32];

	for (int r = 0; r < opt.child_rounds; r++) {
		fprintf(stderr, "bench: realloc chains and live-set growth, round %d of %d\n", r + 1,
			opt.child_rounds);
		for (int c = 0; c < 5; c++) {
			for (int i = 0; i < NALLOC; i++) {
				int a = (i + r) % NALLOC;
				if (!allocs[a].available)
					continue;
				struct sample s = { NAN, NAN, NAN, NAN, NAN, NAN }, s2 = s, s3 = s;
				if (run_child("chain", allocs[a].name, chain_state[c], out, 12, st, sizeof(st)) == 12) {
					s = (struct sample){ out[0], out[1], out[2], out[3], NAN, NAN };
					s2 = (struct sample){ out[4], out[5], out[6], out[7], NAN, NAN };
					s3 = (struct sample){ out[8], out[9], out[10], out[11], NAN, NAN };
				} else {
					note_child_fail("chain", a, st);
				}
				add_sample(W_CH_FRESH + c, a, s);
				add_sample(W_CH2_FRESH + c, a, s2);
				add_sample(W_CH3_FRESH + c, a, s3);
			}
			/* the pair in the same states: the four fastest allocators */
			for (int i = 0; i < NALLOC; i++) {
				int a = (i + r) % NALLOC;
				if (!allocs[a].available || a > A_JEMALLOC)
					continue;
				struct sample s = { NAN, NAN, NAN, NAN, NAN, NAN }, s2 = s;
				if (run_child("pairstate", allocs[a].name, chain_state[c], out, 8, st, sizeof(st)) == 8) {
					s = (struct sample){ out[0], out[1], out[2], out[3], NAN, NAN };
					s2 = (struct sample){ out[4], out[5], out[6], out[7], NAN, NAN };
				} else {
					note_child_fail("pairstate", a, st);
				}
				add_sample(W_PS_FRESH + c, a, s);
				add_sample(W_PS2_FRESH + c, a, s2);
			}
		}
		/* 7 in GROW_PER_ROUND processes per round: its per-process
		 * ratio to the floor spreads far wider than the other figures
		 * (each first touch of a secret page waits for a TLB-flush IPI
		 * to the other CPU), 0.7-2.1 in 120 processes here, so the
		 * median of 9 moved between 1.10 and 1.23 from run to run; the
		 * order rotates by one from each set of processes to the next */
		for (int g = 0; g < GROW_PER_ROUND; g++) {
			for (int i = 0; i < NALLOC; i++) {
				int a = (i + r * GROW_PER_ROUND + g) % NALLOC;
				if (!allocs[a].available)
					continue;
				struct sample s = { NAN, NAN, NAN, NAN, NAN, NAN };
				if (run_child("grow", allocs[a].name, NULL, out, 4, st, sizeof(st)) == 4)
					s = (struct sample){ out[0], out[1], NAN, NAN, out[2], out[3] };
				else
					note_child_fail("grow", a, st);
				add_sample(W_GROW, a, s);
			}
		}
	}
	snprintf(arg, sizeof(arg), "%ld", opt.sweep_pairs);
	for (int p = 0; p < SWEEP_PROCS; p++) {
		fprintf(stderr, "bench: slot-offset sweep, process %d of %d\n", p + 1, SWEEP_PROCS);
		for (int a = 0; a < NALLOC; a++) {
			sweep[a][p] = NAN;
			if (!allocs[a].available || a > A_JEMALLOC)
				continue;
			if (run_child("sweep", allocs[a].name, arg, out, 3, st, sizeof(st)) == 3) {
				sweep[a][p] = out[0];
				sweep_npos[a] = out[1];
				sweep_same[a] = out[2];
			} else {
				note_child_fail("sweep", a, st);
			}
		}
	}
}

/* 9-11 (one run each). */
static void run_once_children(void)
{
	double out[8];
	int n;

	for (int a = 0; a < NALLOC; a++) {
		struct once *r = &res[a];
		if (!allocs[a].available)
			continue;
		fprintf(stderr, "bench: %s: pages of 10,000 x 32 B\n", allocs[a].name);
		n = run_child("pages", allocs[a].name, NULL, out, 5, r->pages_status, sizeof(r->pages_status));
		if (n == 5) {
			r->pages = a == A_SECRETMEM ? out[2] : out[0];
			r->locked_kib = out[1];
			if (a == A_SECRETMEM) {
				r->distinct = out[0];
				r->mapped = out[3];
				r->regions = out[4];
			}
		}
		if (a == A_GLIBC || a == A_MIMALLOC || a == A_JEMALLOC)
			continue; /* they lock nothing */
		fprintf(stderr, "bench: %s: 32 B secrets under an 8 MiB memory-lock limit\n", allocs[a].name);
		n = run_child("memlock", allocs[a].name, NULL, out, 5, r->memlock_status, sizeof(r->memlock_status));
		if (n == 5) {
			r->memlock = out[0];
			r->memlock_kib = out[1];
			if (a == A_OPENSSL && out[2] == 2)
				r->memlock_note = 1;
			else if (out[3] == 1)
				r->memlock_note = 2;
			else if (out[3] == 2)
				r->memlock_note = 3;
			if (a == A_OPENSSL && out[2] == 0)
				snprintf(r->memlock_status, sizeof(r->memlock_status), "CRYPTO_secure_malloc_init failed");
		}
	}
	for (int m = 0; m < 2; m++) {
		fprintf(stderr, "bench: secretmem: churn of 10^6 operations (%s)\n", m ? "16-512 B" : "32 B");
		n = run_child("churn", m ? "mixed" : "32", NULL, churn[m], 8, churn_status[m], sizeof(churn_status[m]));
		if (n != 8)
			churn[m][0] = NAN;
	}
}

/* ------------------------------------------------------------------ */
/* Figures and the table                                               */
/* ------------------------------------------------------------------ */

enum { F_CPU, F_WALL, F_FAULTS, F_MAPS, F_AUXCPU, F_AUXWALL };

static double field(const struct sample *s, int f)
{
	switch (f) {
	case F_CPU: return s->cpu;
	case F_WALL: return s->wall;
	case F_FAULTS: return s->faults;
	case F_MAPS: return s->maps;
	case F_AUXCPU: return s->aux_cpu;
	default: return s->aux_wall;
	}
}

struct spread {
	double med, lo, hi;
	int n;
};

static struct spread spread_of(double *v, int n)
{
	struct spread s = { NAN, NAN, NAN, 0 };
	int m = 0;

	for (int i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[m++] = v[i];
	if (m == 0)
		return s;
	qsort(v, (size_t)m, sizeof(double), cmp_double);
	s.med = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
	s.lo = v[0];
	s.hi = v[m - 1];
	s.n = m;
	return s;
}

/* The median of field f of (w, a). */
static struct spread value_of(int w, int a, int f)
{
	double v[MAXROUNDS];
	const struct series *q = &ser[w][a];

	for (int r = 0; r < q->n; r++)
		v[r] = field(&q->s[r], f);
	return spread_of(v, q->n);
}

/* Per round: field f of (w, a) over field g of (w2, b), same round. */
static struct spread ratio_of(int w, int a, int f, int w2, int b, int g)
{
	double v[MAXROUNDS];
	const struct series *p = &ser[w][a], *q = &ser[w2][b];
	int n = p->n < q->n ? p->n : q->n;

	for (int r = 0; r < n; r++)
		v[r] = field(&p->s[r], f) / field(&q->s[r], g);
	return spread_of(v, n);
}

/* A figure with a precision that suits its magnitude; NaN prints "-". */
static const char *fig(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (v >= 100)
		snprintf(buf, len, "%.0f", v);
	else if (v >= 10)
		snprintf(buf, len, "%.1f", v);
	else if (v >= 0.1)
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, "%.3f", v);
	return buf;
}

static const char *spread_str(char *buf, size_t len, struct spread s)
{
	char a[24], b[24], c[24];

	if (isnan(s.med))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%s [%s-%s]", fig(a, sizeof(a), s.med), fig(b, sizeof(b), s.lo),
			 fig(c, sizeof(c), s.hi));
	return buf;
}

static int misses, targets;

static const char *verdict(char *buf, size_t len, const char *what, double v, double limit, int at_most)
{
	char b[24];
	int ok = !isnan(v) && (at_most ? v <= limit : v >= limit);

	targets++;
	misses += !ok;
	snprintf(buf, len, "%s %s%s: %s", what, at_most ? "<= " : ">= ", fig(b, sizeof(b), limit),
		 ok ? "PASS" : "MISS");
	return buf;
}

#define ROWFMT "  %-12s %11s  %-21s %-21s %s\n"

static void heading(const char *title, const char *unit)
{
	printf("%s\n", title);
	(void)unit;
}

/*
 * The rows of one timed workload: per allocator the median CPU time per
 * operation, and the per-round ratios to glibc+bzero on CPU and wall time.
 * limit > 0: the target for secretmem's CPU-time ratio.  extra: also print
 * faults (and secretmem's new mappings) per operation.
 */
static void timed_rows(int w, const char *title, double limit, int extra, double scale)
{
	char v[32], r1[48], r2[48], t[160], e[96], b1[24], b2[24];

	heading(title, NULL);
	for (int a = 0; a < NALLOC; a++) {
		if (!allocs[a].available) {
			printf(ROWFMT, col_name[a], "n/a", "", "", "");
			continue;
		}
		if (ser[w][a].n == 0)
			continue; /* not run for this allocator */
		struct spread c = ratio_of(w, a, F_CPU, w, A_GLIBC, F_CPU);
		struct spread wl = ratio_of(w, a, F_WALL, w, A_GLIBC, F_WALL);
		fig(v, sizeof(v), value_of(w, a, F_CPU).med / scale);
		spread_str(r1, sizeof(r1), c);
		spread_str(r2, sizeof(r2), wl);
		t[0] = 0;
		if (extra) {
			double f = value_of(w, a, F_FAULTS).med, m = value_of(w, a, F_MAPS).med;
			snprintf(e, sizeof(e), "faults %s", fig(b1, sizeof(b1), f));
			if (!isnan(m))
				snprintf(e + strlen(e), sizeof(e) - strlen(e), ", new maps %s", fig(b2, sizeof(b2), m));
			snprintf(t, sizeof(t), "%s", e);
		}
		if (a == A_SECRETMEM && limit > 0) {
			char vd[64];
			snprintf(t + strlen(t), sizeof(t) - strlen(t), "%s%s", t[0] ? "; " : "",
				 verdict(vd, sizeof(vd), "target", c.med, limit, 1));
		}
		printf(ROWFMT, col_name[a], v, r1, r2, t);
	}
}

static void print_table(void)
{
	char v[32], r1[48], r2[48], t[160], b[24];

	printf("\n" ROWFMT, "workload", "CPU/op", "x glibc, CPU time", "x glibc, wall time", "per op / target");
	printf("  %-12s %11s  %-21s %-21s\n", "", "(median)", "median [min-max]", "median [min-max]");
	timed_rows(W_PAIR, "1 pair: alloc(32) + write + free, ns", 1.5, 0, 1);
	timed_rows(W_BATCH, "2 batch: 1,000 x alloc(32) + write, then 1,000 frees, ns per block", 1.5, 0, 1);
	timed_rows(W_RANDOM, "3 random 16-512 B, 1,000 live, free + alloc + write, ns", 1.5, 0, 1);
	timed_rows(W_THR1, "4 1 thread: 100 x (alloc(32) + write), 100 frees, ns per block", 0, 0, 1);
	timed_rows(W_THR2, "  2 threads: the same in each, ns per block (CPU time of both threads)", 0, 0, 1);
	printf("  speedup 2/1 threads, per round: wall time | busiest thread's CPU time\n");
	for (int a = 0; a < NALLOC; a++) {
		if (!allocs[a].available)
			continue;
		/* same k: speedup = 2 x t(1) / t(2) */
		struct spread sw = ratio_of(W_THR1, a, F_AUXWALL, W_THR2, a, F_AUXWALL);
		struct spread sc = ratio_of(W_THR1, a, F_AUXCPU, W_THR2, a, F_AUXCPU);
		sw.med *= 2, sw.lo *= 2, sw.hi *= 2;
		sc.med *= 2, sc.lo *= 2, sc.hi *= 2;
		t[0] = 0;
		if (a == A_SECRETMEM)
			verdict(t, sizeof(t), "CPU-time speedup", sc.med, 1.8, 0);
		printf(ROWFMT, col_name[a], "", spread_str(r1, sizeof(r1), sw), spread_str(r2, sizeof(r2), sc), t);
	}
	timed_rows(W_BIG, "5 random 1 B-64 KiB, 64 live, free + alloc + write, us", 2, 1, 1000);
	/* per state: the first run (pays the state's first touches and new
	 * mappings: reported, no target) and the next one (the target) */
	static const char *const ch_title[] = {
		"6 realloc chain 16 B -> 64 KiB by doubling, us per chain: in a fresh process",
		"  after one warm-up chain",
		"  after the churn of 5 (500 operations, all freed)",
		"  after the churn and the allocator's trim",
		"  in a child after fork (after a warm-up chain)",
	};
	for (int c = 0; c < 5; c++) {
		char title[160];
		snprintf(title, sizeof(title), "%s; first chain", ch_title[c]);
		timed_rows(W_CH_FRESH + c, title, 0, 1, 1000);
		timed_rows(W_CH2_FRESH + c, "    the next chain", 0, 1, 1000);
		timed_rows(W_CH3_FRESH + c, "    then " CHAIN_STEADY_STR " chains timed together (steady state), per chain", 2, 1, 1000);
	}
	static const char *const ps_title[] = {
		"6b pair 32 B in the same states, ns: in a fresh process",
		"  after one warm-up chain",
		"  after the churn of 5",
		"  after the churn and the allocator's trim",
		"  in a child after fork",
	};
	for (int c = 0; c < 5; c++) {
		char title[160];
		snprintf(title, sizeof(title), "%s; first %d pairs", ps_title[c], STATE_PAIRS);
		timed_rows(W_PS_FRESH + c, title, 0, 0, 1);
		timed_rows(W_PS2_FRESH + c, "    the next pairs", 1.5, 0, 1);
	}

	timed_rows(W_GROW, "7 growing the live set: 20,000 new 32-byte secrets in a fresh process, ns each", 0, 0, 1);
	struct spread fl = value_of(W_GROW, A_SECRETMEM, F_AUXCPU);
	struct spread fr = ratio_of(W_GROW, A_SECRETMEM, F_CPU, W_GROW, A_SECRETMEM, F_AUXCPU);
	struct spread frw = ratio_of(W_GROW, A_SECRETMEM, F_WALL, W_GROW, A_SECRETMEM, F_AUXWALL);
	printf("  page-fault floor (first touch of a fresh secret page / %zu slots): %s ns CPU\n", page_size / SMALL,
	       fig(b, sizeof(b), fl.med));
	verdict(t, sizeof(t), "target", fr.med, 1.2, 1);
	printf(ROWFMT, "secretmem", "x floor", spread_str(r1, sizeof(r1), fr), spread_str(r2, sizeof(r2), frw), t);

	printf("8 pair time over every 16-byte position in a page, max/min, in %d processes\n", SWEEP_PROCS);
	for (int a = 0; a <= A_JEMALLOC; a++) {
		if (!allocs[a].available)
			continue;
		char s[64] = "";
		double worst = 0;
		for (int p = 0; p < SWEEP_PROCS; p++) {
			snprintf(s + strlen(s), sizeof(s) - strlen(s), "%s%s", p ? " " : "", fig(b, sizeof(b), sweep[a][p]));
			worst = isnan(sweep[a][p]) || sweep[a][p] > worst ? sweep[a][p] : worst;
		}
		snprintf(v, sizeof(v), "%.0f pos.", sweep_npos[a]);
		t[0] = 0;
		if (a == A_SECRETMEM)
			verdict(t, sizeof(t), "each", worst, 1.25, 1);
		snprintf(r2, sizeof(r2), "same block %.0f%%", 100 * sweep_same[a]);
		printf(ROWFMT, col_name[a], v, s, r2, t);
	}

	const struct once *sm = &res[A_SECRETMEM];
	printf("9 secret pages used by 10,000 x 32 B | locked memory (VmLck), KiB\n");
	for (int a = 0; a < NALLOC; a++) {
		if (!allocs[a].available)
			continue;
		t[0] = 0;
		if (a == A_SECRETMEM)
			verdict(t, sizeof(t), "pages", sm->pages, 90, 1);
		printf(ROWFMT, col_name[a], fig(v, sizeof(v), res[a].pages), fig(r1, sizeof(r1), res[a].locked_kib), "", t);
	}
	printf("10 32-byte secrets under an 8 MiB memory-lock limit\n");
	for (int a = 0; a < NALLOC; a++) {
		if (!allocs[a].available || a == A_GLIBC || a == A_MIMALLOC || a == A_JEMALLOC)
			continue;
		t[0] = 0;
		if (a == A_SECRETMEM)
			verdict(t, sizeof(t), "count", sm->memlock, 240000, 0);
		printf(ROWFMT, col_name[a], fig(v, sizeof(v), res[a].memlock), "", "", t);
	}
	printf("11 secretmem, churn of 10^6 operations: pages faulted | live high-water mark, pages\n");
	for (int m = 0; m < 2; m++) {
		t[0] = 0;
		if (isnan(churn[m][0])) {
			snprintf(t, sizeof(t), "churn failed: %s", churn_status[m]);
		} else if (m == 0) {
			verdict(t, sizeof(t), "faults", churn[m][0], churn[m][1], 1);
		}
		printf(ROWFMT, m ? "16-512 B" : "32 B", fig(v, sizeof(v), churn[m][0]), fig(r1, sizeof(r1), churn[m][1]),
		       "", m ? "(no target)" : t);
	}
	printf("\nsecretmem targets missed: %d of %d\n", misses, targets);
	if (child_fail[0])
		printf("a child case failed (its figure is left out): %s\n", child_fail);
}

static void print_notes(void)
{
	const struct once *sm = &res[A_SECRETMEM];
	char b1[24], b2[24], b3[24];

	printf("\nNotes:\n");
	printf("  Ratios: per round, the allocator's time over glibc+bzero's in the same round;\n"
	       "  median [min-max] over %d rounds (1-5, each run ~%.0f ms) or %d rounds of fresh\n"
	       "  processes (6; 7: %d processes).  CPU time: the thread's (4: the sum over the\n"
	       "  threads).\n"
	       "  glibc, mimalloc and jemalloc call explicit_bzero before free; OpenSSL and\n"
	       "  sodium clear in their free; secretmem zeroes on free.  mimalloc and jemalloc\n"
	       "  are called through pointers (dlsym), the others directly.\n",
	       opt.rounds, opt.target_ns / 1e6, opt.child_rounds, opt.child_rounds * GROW_PER_ROUND);
	printf("  5 faults: minor page faults per operation (getrusage); new maps: secretmem\n"
	       "  mappings created per operation (regions_created).  6 each step writes the\n"
	       "  new half; faults and maps per chain; the allocators without realloc\n"
	       "  (openssl-sh, sodium, naive-memfd) allocate, copy and free.  Trim: secretmem_trim,\n"
	       "  malloc_trim(0), mi_collect(true), jemalloc arena purge; none for the rest.\n"
	       "  6b %d pairs in a fresh child per round and state, set up as for the chain\n"
	       "  (secretmem, glibc, mimalloc and jemalloc only).  6 and 6b run twice in the\n"
	       "  same process after the state is set up: the first run pays what the state\n"
	       "  left to do (first touch of pages, new mappings: reported, no target); for\n"
	       "  6b the next one is the state's steady cost (the target).  6 then times %d\n"
	       "  more chains together, per chain: the steady cost (the target).  A single\n"
	       "  chain (~3 us) carries the timer's own cost (~2 us of CPU clock and rusage\n"
	       "  system calls here) and, for secretmem right after new secret pages were\n"
	       "  faulted, what those faults cost the next accesses (each removes a page from\n"
	       "  the kernel's direct map and flushes TLBs on every CPU; faulting 8 unrelated\n"
	       "  secret pages before a warm chain made it 1.2-1.7x slower); no target.\n",
	       STATE_PAIRS, CHAIN_STEADY);
	printf("  7 the floor is measured in the same process before the growth: %d fresh\n"
	       "  pages of one memfd_secret mapping, one byte written in each; x floor is the\n"
	       "  per-round ratio of secretmem's ns per secret to it.  sodium and naive-memfd\n"
	       "  add %d secrets (they take a page or more each).  The harness's array of\n"
	       "  pointers is written before either clock starts.\n", FLOOR_PAGES, GROW_N_SLOW);
	printf("  8 per position %ld pairs of alloc(16) + write + free after freeing the block\n"
	       "  at that position, 9 times; the median per position; same block: share of\n"
	       "  pairs that got the freed block back (the position measured).\n", opt.sweep_pairs);
	printf("  9 secretmem: pages faulted (secretmem_stats); the others: distinct pages\n"
	       "  holding the blocks.  secretmem: %s distinct pages hold the blocks, %s pages\n"
	       "  mapped, %s new regions.\n",
	       fig(b1, sizeof(b1), sm->distinct), fig(b2, sizeof(b2), sm->mapped), fig(b3, sizeof(b3), sm->regions));
	printf("  10 in a child without CAP_IPC_LOCK, RLIMIT_MEMLOCK 8 MiB; allocate 32 B\n"
	       "  (written) until the allocator fails.  OpenSSL: an 8 MiB arena.\n");
	for (int a = 0; a < NALLOC; a++) {
		if (!allocs[a].available)
			continue;
		const struct once *r = &res[a];
		if (r->memlock_note == 1)
			printf("    %s: the arena could not be mlock()ed; its blocks are not locked.\n", allocs[a].name);
		else if (r->memlock_note == 2)
			printf("    %s: stopped at the loop's cap; the limit did not bite.\n", allocs[a].name);
		else if (r->memlock_note == 3)
			printf("    %s: further sodium_malloc() calls succeed with unlocked memory\n"
			       "    (its mlock failure is ignored); counted up to the first one.\n", allocs[a].name);
		if (r->memlock_status[0] && strcmp(r->memlock_status, "ok") != 0)
			printf("    %s: case 10 %s.\n", allocs[a].name, r->memlock_status);
		if (r->pages_status[0] && strcmp(r->pages_status, "ok") != 0)
			printf("    %s: case 9 %s.\n", allocs[a].name, r->pages_status);
	}
	printf("  11 in a fresh process: every 10,000 operations a new target live count is\n"
	       "  drawn from 0..1,000; each operation allocates (p = 3/4 below the target) or\n"
	       "  frees a random live block.  High-water mark: the most live bytes, in pages.\n");
}

static const char *const work_name[NWORK] = {
	"pair", "batch", "random16-512", "thread1", "threads2", "random1-64k",
	"chain-fresh", "chain-warm", "chain-churn", "chain-trim", "chain-fork", "grow",
	"pair-fresh", "pair-warm", "pair-churn", "pair-trim", "pair-fork",
	"chain-fresh-next", "chain-warm-next", "chain-churn-next", "chain-trim-next", "chain-fork-next",
	"pair-fresh-next", "pair-warm-next", "pair-churn-next", "pair-trim-next", "pair-fork-next",
	"chain-fresh-steady", "chain-warm-steady", "chain-churn-steady", "chain-trim-steady", "chain-fork-steady",
};

static void write_csv(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die(path);
	fprintf(f, "index,workload,allocator,cpu_ns,wall_ns,ratio_cpu,ratio_cpu_min,ratio_cpu_max,"
		   "ratio_wall,ratio_wall_min,ratio_wall_max,rounds\n");
	for (int w = 0; w < NWORK; w++) {
		for (int a = 0; a < NALLOC; a++) {
			if (!allocs[a].available || ser[w][a].n == 0)
				continue;
			struct spread c = ratio_of(w, a, F_CPU, w, A_GLIBC, F_CPU);
			struct spread wl = ratio_of(w, a, F_WALL, w, A_GLIBC, F_WALL);
			fprintf(f, "%d,%s,%s,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%d\n", w, work_name[w], col_name[a],
				value_of(w, a, F_CPU).med, value_of(w, a, F_WALL).med, c.med, c.lo, c.hi, wl.med,
				wl.lo, wl.hi, c.n);
		}
	}
	if (fclose(f) != 0)
		die(path);
}

static void print_header(int ossl_rc, int argc, char **argv)
{
	char model[128] = "unknown", line[256];
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *c = strchr(line, ':');
			if (strncmp(line, "model name", 10) == 0 && c) {
				snprintf(model, sizeof(model), "%s", c + 2);
				model[strcspn(model, "\n")] = 0;
				break;
			}
		}
		fclose(f);
	}
	uname(&u);
	gmtime_r(&now, &tm);
	strftime(line, sizeof(line), "%Y-%m-%d %H:%M UTC", &tm);
	printf("secretmem %s allocator benchmark, %s%s\n", SECRETMEM_VERSION_STRING, line,
	       opt.quick ? " (--quick: a smoke run, figures are rough)" : "");
	printf("command:");
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\nmachine: %s, nproc %ld, %s %s %s, glibc %s\n", model, sysconf(_SC_NPROCESSORS_ONLN), u.sysname,
	       u.release, u.machine, gnu_get_libc_version());
	printf("libraries: %s, libsodium %s; process malloc from %s\n", OpenSSL_version(OPENSSL_VERSION),
	       sodium_version_string(), process_malloc());
	printf("secretmem backend: %s; OpenSSL secure heap: %u MiB, minsize 16, %s\n",
	       secretmem_backend_name(secretmem_default_backend()), OSSL_ARENA >> 20,
	       ossl_rc == 1 ? "locked" : ossl_rc == 2 ? "NOT locked" : "unavailable");
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "SECRETMEM_", 10) == 0 || strncmp(*e, "GLIBC_TUNABLES=", 15) == 0 ||
		    strncmp(*e, "BENCH_ONLY=", 11) == 0)
			printf("environment: %s\n", *e);
	print_loadavg("at start");
	fflush(stdout);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench [--quick] [--csv FILE]\n"
		   "  --quick     a smoke run (few short rounds; figures are rough)\n"
		   "  --csv FILE  also write the figures to FILE (for bench/plot.gp)\n"
		   "  BENCH_ONLY=a,b  measure only these allocators (and glibc, the reference)\n"
		   "  BENCH_SWEEP_DEBUG=1  case 8 prints each position's median pair time to stderr\n"
		   "  BENCH_SWEEP_PASSES=N case 8 measures N times in one process (BENCH_SWEEP_MIGRATE=1:\n"
		   "                       pass k on CPU k mod the CPU count), each pass's figure to stderr\n");
}

/*
 * Debian's libjemalloc.so.2 uses initial-exec TLS, which dlopen() can only
 * place in the static TLS surplus: run again with a larger one (a glibc
 * tunable; the header prints it).
 */
#define TLS_TUNABLE "glibc.rtld.optional_static_tls=65536"

static void reexec_for_tls(char **argv)
{
	const char *t = getenv("GLIBC_TUNABLES");
	char buf[1024];

	if (getenv("BENCH_REEXEC") || (t && strstr(t, "optional_static_tls")))
		return;
	snprintf(buf, sizeof(buf), "%s%s" TLS_TUNABLE, t ? t : "", t ? ":" : "");
	setenv("GLIBC_TUNABLES", buf, 1);
	setenv("BENCH_REEXEC", "1", 1);
	execv("/proc/self/exe", argv);
	/* if that fails, go on: jemalloc says why it is missing */
}

int main(int argc, char **argv)
{
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	reexec_for_tls(argv);
	load_general();
	if (argc >= 2 && strcmp(argv[1], "--child") == 0)
		return child_main(argc, argv);

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			opt.quick = 1;
		else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
			opt.csv = argv[++i];
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	opt.target_ns = opt.quick ? 1e6 : 4e6;
	opt.rounds = opt.quick ? 3 : 21;
	opt.child_rounds = opt.quick ? 1 : 9;
	opt.sweep_pairs = opt.quick ? 200 : 1000;

	for (int a = 0; a < NALLOC; a++) {
		struct once *r = &res[a];
		r->pages = r->locked_kib = r->distinct = r->mapped = r->regions = NAN;
		r->memlock = r->memlock_kib = NAN;
	}
	if (sodium_init() < 0) {
		allocs[A_SODIUM].available = 0;
		allocs[A_SODIUM].why = "sodium_init failed";
	}
	int ossl_rc = CRYPTO_secure_malloc_init(OSSL_ARENA, 16);
	if (ossl_rc == 0) {
		allocs[A_OPENSSL].available = 0;
		allocs[A_OPENSSL].why = "CRYPTO_secure_malloc_init failed";
	}
	int rc = secretmem_supported();
	if (rc != 0) {
		allocs[A_NAIVE].available = 0;
		allocs[A_NAIVE].why = strerror(-rc);
	}
	const char *only = getenv("BENCH_ONLY");
	if (only)
		for (int a = 0; a < NALLOC; a++)
			if (a != A_GLIBC && !strstr(only, allocs[a].name))
				allocs[a].available = 0, allocs[a].why = "BENCH_ONLY";
	raise_nofile();
	fill_random_tables();
	print_header(ossl_rc, argc, argv);
	for (int a = 0; a < NALLOC; a++)
		if (!allocs[a].available)
			printf("%s: not measured (%s)\n", allocs[a].name, allocs[a].why);

	measure_in_process();
	measure_children();
	run_once_children();

	print_table();
	print_notes();
	print_loadavg("at end");
	if (opt.csv) {
		write_csv(opt.csv);
		printf("figures written to %s\n", opt.csv);
	}
	return 0;
}
