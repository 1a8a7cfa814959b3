/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * bench.c - the allocator benchmark.
 *
 * secretmem_malloc against four other ways of holding small secrets, all
 * measured in one run and printed as one table:
 *
 *   secretmem    secretmem_malloc / secretmem_free
 *   glibc        malloc, then explicit_bzero + free (no protection at all;
 *                the speed reference)
 *   openssl-sh   OpenSSL's secure heap (CRYPTO_secure_malloc_init, one
 *                mlock()ed arena behind a global lock)
 *   sodium       libsodium's sodium_malloc / sodium_free (mmap, guard pages,
 *                mlock per allocation)
 *   naive-memfd  one memfd_secret(2) file per secret: memfd_secret +
 *                ftruncate + mmap on alloc, munmap + close on free
 *
 * Cases: 32-byte pairs, a batch of 1,000 live blocks, random sizes
 * 16-512 B in a live set, 1 and 2 threads, secret pages used by
 * 10,000 x 32 B, the most 32-byte secrets under an 8 MiB RLIMIT_MEMLOCK, and
 * pages faulted by a churn of 10^6 operations.  The page, memory-lock and
 * churn cases run in a fresh copy of this program (re-executed with
 * --child ...), so every allocator starts empty and nothing locked by an
 * earlier case counts against the limit.
 *
 * Usage: bench [--quick] [--csv FILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <linux/capability.h>
#include <math.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
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
#define RND_N 65536               /* length of the random tables (pow. of 2) */
#define THREAD_BATCH 100          /* blocks alive at once per thread        */
#define PAGES_N 10000             /* blocks in the secret-page case         */
#define MEMLOCK_LIMIT (8u << 20)  /* RLIMIT_MEMLOCK of the memory-lock case */
#define CHURN_OPS 1000000L        /* operations of the churn case           */
#define CHURN_LIVE 1000           /* at most this many live in the churn    */
#define OSSL_ARENA (16u << 20)    /* OpenSSL secure heap for the timed cases */
#define MAXREP 64
#define CLASS_SLOTS (512 / 4 + 1) /* usable sizes up to 512, by 4 bytes */

/* Keep the compiler from dropping a write or an allocation: p escapes. */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

extern char **environ;
static volatile uintptr_t sink;
static size_t page_size;

static struct {
	int quick;
	const char *csv;
	double target_ns;   /* length of one timed repetition */
	int reps;           /* repetitions; the best is reported */
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

/*
 * The timed loops measure wall time (CLOCK_MONOTONIC) and, beside it, the
 * CPU time of the calling thread: when other processes compete for the
 * CPUs, the wall time of a single-threaded loop includes the time it
 * waited, its CPU time does not.
 */
static double wall0, cpu0, last_cpu;

static void timer_start(void)
{
	cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	wall0 = now_ns();
}

/* Wall time since timer_start(); the CPU time goes to last_cpu. */
static double timer_stop(void)
{
	double w = now_ns() - wall0;

	last_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
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

enum { A_SECRETMEM, A_GLIBC, A_OPENSSL, A_SODIUM, A_NAIVE, NALLOC };

static void *alloc_secretmem(size_t n)
{
	return secretmem_malloc(n);
}

static void release_secretmem(void *p, size_t n)
{
	(void)n;
	secretmem_free(p);
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

/* ------------------------------------------------------------------ */
/* Timed loops, instantiated per allocator so the calls are direct     */
/* ------------------------------------------------------------------ */

typedef void *(*alloc_fn)(size_t);
typedef void (*release_fn)(void *, size_t);

#define INLINE static inline __attribute__((always_inline))

static const char *cur_name = "";
static uint32_t rnd_size[RND_N];
static uint32_t rnd_slot[RND_N];

/* Case 1: k pairs of alloc(32) + write + free. */
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

/* Case 2: k rounds of 1,000 allocs (each written), then 1,000 frees. */
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
 * Case 3: a live set of 1,000 blocks of random sizes 16-512 B (filled
 * before the clock starts); each of the k timed operations frees a random
 * member and puts a new block of a random size (fully written) in its place.
 */
INLINE double loop_random(alloc_fn a, release_fn f, long k)
{
	static unsigned char *v[LIVE];
	static size_t vn[LIVE];
	uintptr_t acc = 0;

	for (int i = 0; i < LIVE; i++) {
		vn[i] = rnd_size[(unsigned)i * 7919u % RND_N];
		v[i] = a(vn[i]);
		if (!v[i])
			oom(cur_name);
		memset(v[i], 1, vn[i]);
	}
	timer_start();
	for (long i = 0; i < k; i++) {
		unsigned j = rnd_slot[i & (RND_N - 1)];
		size_t n = rnd_size[i & (RND_N - 1)];
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
	for (int i = 0; i < LIVE; i++)
		f(v[i], vn[i]);
	sink ^= acc;
	return t;
}

/* Case 4, per thread: k rounds of 100 x (alloc(32) + write), then frees. */
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

#define DEFINE_LOOPS(id)                                                        \
	static double pairs_##id(long k) { return loop_pairs(alloc_##id, release_##id, k); }   \
	static double batch_##id(long k) { return loop_batch(alloc_##id, release_##id, k); }   \
	static double random_##id(long k) { return loop_random(alloc_##id, release_##id, k); } \
	static void work_##id(long k) { loop_work(alloc_##id, release_##id, k); }

DEFINE_LOOPS(secretmem)
DEFINE_LOOPS(glibc)
DEFINE_LOOPS(openssl)
DEFINE_LOOPS(sodium)
DEFINE_LOOPS(naive)

struct allocator {
	const char *name;
	alloc_fn alloc;
	release_fn release;
	double (*pairs)(long);
	double (*batch)(long);
	double (*random)(long);
	void (*work)(long);
	int available;
	const char *why; /* when not available */
};

#define ALLOCATOR(id)                                                           \
	{ #id, alloc_##id, release_##id, pairs_##id, batch_##id, random_##id,   \
	  work_##id, 1, NULL }

static struct allocator allocs[NALLOC] = {
	ALLOCATOR(secretmem),
	ALLOCATOR(glibc),
	ALLOCATOR(openssl),
	ALLOCATOR(sodium),
	ALLOCATOR(naive),
};

static const char *const col_name[NALLOC] = {
	"secretmem", "glibc+bzero", "openssl-sh", "sodium", "naive-memfd",
};

static int find_alloc(const char *name)
{
	for (int i = 0; i < NALLOC; i++)
		if (strcmp(allocs[i].name, name) == 0)
			return i;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Measurement                                                         */
/* ------------------------------------------------------------------ */

/* One single-threaded figure: ns per op. */
struct timing {
	double wall;  /* the best wall time                       */
	double cpu;   /* the best CPU time                        */
	double share; /* CPU / wall time of the best wall-time run */
};

/*
 * The machine may be shared: other processes only ever add time, so the
 * best of the repetitions is the estimate.
 *
 * The number of units (k) for which run(k) takes about opt.target_ns: runs
 * of growing k (which also warm the allocator up) for half that time; the
 * fastest of them per unit sets k, so one run that was preempted cannot.
 */
static long calibrate(double (*run)(long, void *), void *arg)
{
	long k = 1;
	double spent = 0, per = INFINITY;

	while (spent < opt.target_ns / 2) {
		double t = run(k, arg);
		spent += t;
		if (t / (double)k < per)
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

/* Keep the best of opt.reps runs of about opt.target_ns, in ns per op. */
static struct timing measure(double (*run)(long), double ops_per_unit)
{
	struct timing tm = { INFINITY, INFINITY, 0 };
	long k = calibrate(run_single, &run);
	for (int r = 0; r < opt.reps; r++) {
		double w = run(k), c = last_cpu, ops = (double)k * ops_per_unit;
		if (w / ops < tm.wall) {
			tm.wall = w / ops;
			tm.share = c / w;
		}
		if (c / ops < tm.cpu)
			tm.cpu = c / ops;
	}
	return tm;
}

/*
 * Case 4: T threads each run work(k), started together on a barrier; the
 * elapsed time runs from the first thread's start to the last one's end,
 * as the threads themselves saw them.  Each thread also measures its CPU
 * time and its voluntary context switches (sleeps, e.g. on a lock).
 */
struct thread_arg {
	void (*work)(long);
	long k;
	pthread_barrier_t *start;
	double t0, t1, cpu;
	long sleeps;
} __attribute__((aligned(64)));

struct thread_run {
	double wall;    /* first start to last end                 */
	double cpu_max; /* CPU time of the thread that used most    */
	double cpu_sum;
	long sleeps;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	struct rusage ru0, ru1;

	pthread_barrier_wait(a->start);
	getrusage(RUSAGE_THREAD, &ru0);
	double c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	a->t0 = now_ns();
	a->work(a->k);
	a->t1 = now_ns();
	a->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	getrusage(RUSAGE_THREAD, &ru1);
	a->sleeps = ru1.ru_nvcsw - ru0.ru_nvcsw;
	return NULL;
}

static struct thread_run run_threads(void (*work)(long), long k, int nthreads)
{
	pthread_t tid[2];
	struct thread_arg arg[2];
	pthread_barrier_t start;
	struct thread_run tr = { 0, 0, 0, 0 };

	if (pthread_barrier_init(&start, NULL, (unsigned)nthreads) != 0)
		die("pthread_barrier_init");
	for (int i = 0; i < nthreads; i++) {
		arg[i] = (struct thread_arg){ .work = work, .k = k, .start = &start };
		if (pthread_create(&tid[i], NULL, thread_main, &arg[i]) != 0)
			die("pthread_create");
	}
	double t0 = INFINITY, t1 = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(tid[i], NULL);
		t0 = arg[i].t0 < t0 ? arg[i].t0 : t0;
		t1 = arg[i].t1 > t1 ? arg[i].t1 : t1;
		tr.cpu_max = arg[i].cpu > tr.cpu_max ? arg[i].cpu : tr.cpu_max;
		tr.cpu_sum += arg[i].cpu;
		tr.sleeps += arg[i].sleeps;
	}
	pthread_barrier_destroy(&start);
	tr.wall = t1 - t0;
	return tr;
}

static double run_one_thread(long k, void *arg)
{
	void (*work)(long) = *(void (**)(long))arg;

	return run_threads(work, k, 1).wall;
}

/* Case 4 figures, in blocks (alloc + write + free) per second. */
struct throughput {
	double wall;   /* the best, by wall time                           */
	double cpu;    /* the best, by the CPU time of the busiest thread:
	                  what the threads would do on CPUs of their own   */
	double share;  /* CPU time / (threads x wall) of the best wall run */
	double sleeps; /* voluntary context switches per 10^6 blocks       */
};

static void measure_threads(void (*work)(long), struct throughput *tp)
{
	long k = calibrate(run_one_thread, &work);
	long sleeps[2] = { 0, 0 };

	for (int t = 0; t < 2; t++)
		tp[t] = (struct throughput){ 0, 0, 0, 0 };
	for (int r = 0; r < opt.reps; r++) { /* interleaved: same noise for both */
		for (int t = 0; t < 2; t++) {
			struct thread_run tr = run_threads(work, k, t + 1);
			double ops = (double)(t + 1) * (double)k * THREAD_BATCH;
			if (ops / tr.wall * 1e9 > tp[t].wall) {
				tp[t].wall = ops / tr.wall * 1e9;
				tp[t].share = tr.cpu_sum / ((t + 1) * tr.wall);
			}
			if (ops / tr.cpu_max * 1e9 > tp[t].cpu)
				tp[t].cpu = ops / tr.cpu_max * 1e9;
			sleeps[t] += tr.sleeps;
		}
	}
	for (int t = 0; t < 2; t++)
		tp[t].sleeps = (double)sleeps[t] * 1e6 /
			       ((double)opt.reps * (t + 1) * (double)k * THREAD_BATCH);
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

/* Initialise the allocator a for a child case; arena: OpenSSL heap size. */
static int child_init(int a, size_t arena)
{
	switch (a) {
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
		return 1;
	}
}

static size_t stat_field(int which)
{
	struct secretmem_stats st;

	if (secretmem_stats(&st) != 0)
		return 0;
	return which == 0 ? st.pages_faulted : which == 1 ? st.pages_mapped : st.regions;
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
	if (strcmp(argv[2], "pages") == 0)
		return child_pages(a);
	if (strcmp(argv[2], "memlock") == 0)
		return child_memlock(a);
	fprintf(stderr, "bench: unknown child case %s\n", argv[2]);
	return 2;
}

/*
 * Run this program again with --child what arg; parse up to nout numbers
 * from its output.  Returns the count parsed, or -1 (status describes why).
 */
static int run_child(const char *what, const char *arg, double *out, int nout,
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
		execl("/proc/self/exe", "bench", "--child", what, arg, (char *)NULL);
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

/* ------------------------------------------------------------------ */
/* Results and the table                                               */
/* ------------------------------------------------------------------ */

struct result {
	struct timing pair, batch, random;  /* cases 1-3: ns per op             */
	struct throughput thr[2];           /* case 4: 1 and 2 threads          */
	double pages, locked_kib;           /* case 5                           */
	double distinct, mapped, regions;   /* case 5, secretmem details        */
	double memlock, memlock_kib;        /* case 6                           */
	int memlock_note;                   /* case 6: 1 unlocked arena, 2 cap, 3 sodium */
	char pages_status[48], memlock_status[48];
};

static struct result res[NALLOC];
static double churn[2][8];
static char churn_status[2][48];
static int misses;

/* Format v with a precision that suits its magnitude; NaN prints "-". */
static const char *num(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (v >= 1000 || v == floor(v))
		snprintf(buf, len, "%.0f", v);
	else if (v >= 100)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.2f", v);
	return buf;
}

static void row_values(const char *label, const double *v, const char *suffix, const char *target)
{
	char b[48], c[64];

	printf("%-36s", label);
	for (int a = 0; a < NALLOC; a++) {
		if (!allocs[a].available)
			printf(" %12s", "n/a");
		else if (isnan(v[a]))
			printf(" %12s", "-");
		else {
			if (*suffix == 'x' && v[a] < 100) /* a ratio */
				snprintf(c, sizeof(c), "%.2fx", v[a]);
			else
				snprintf(c, sizeof(c), "%s%s", num(b, sizeof(b), v[a]), suffix);
			printf(" %12s", c);
		}
	}
	printf("  %s\n", target ? target : "");
}

static const char *verdict(int ok)
{
	return ok ? "PASS" : "MISS";
}

static const struct timing *timing_of(int a, size_t off)
{
	return (const struct timing *)(const void *)((const char *)&res[a] + off);
}

static int busy_cases; /* cases judged on CPU time */

/*
 * The rows of one single-threaded case: wall time, CPU time, and the ratio
 * to glibc.  The ratio uses wall time unless the best runs of secretmem or
 * glibc got less than 90 % of a CPU (a busy machine): then CPU time, and
 * the row says so.  limit > 0: the target ratio for secretmem.
 */
static void timing_rows(const char *label, const char *unit, size_t off, double limit)
{
	const struct timing *sm = timing_of(A_SECRETMEM, off), *gl = timing_of(A_GLIBC, off);
	int cpu = sm->share < 0.9 || gl->share < 0.9;
	double v[NALLOC];
	char l[64], t[96];

	for (int a = 0; a < NALLOC; a++)
		v[a] = timing_of(a, off)->wall;
	snprintf(l, sizeof(l), "%s: %s", label, unit);
	row_values(l, v, "", NULL);
	for (int a = 0; a < NALLOC; a++)
		v[a] = timing_of(a, off)->cpu;
	snprintf(l, sizeof(l), "    CPU time, %s", unit);
	row_values(l, v, "", NULL);
	for (int a = 0; a < NALLOC; a++)
		v[a] = cpu ? timing_of(a, off)->cpu / gl->cpu : timing_of(a, off)->wall / gl->wall;
	double r = v[A_SECRETMEM];
	if (limit > 0) {
		int ok = r <= limit;
		misses += !ok;
		snprintf(t, sizeof(t), "<= %.0fx glibc: %.2fx %s", limit, r, verdict(ok));
	} else {
		snprintf(t, sizeof(t), "(no target)");
	}
	busy_cases += cpu && limit > 0;
	row_values(cpu ? "    x glibc (CPU time: machine busy)" : "    x glibc", v, "x", t);
}

static void print_table(void)
{
	double v[NALLOC];
	char t[160], b[48];
	const struct result *sm = &res[A_SECRETMEM];
	int ok;

	printf("\n%-36s", "");
	for (int a = 0; a < NALLOC; a++)
		printf(" %12s", col_name[a]);
	printf("  target (secretmem)\n");

#define ROW(field, label, scale, suffix, target)                                \
	do {                                                                    \
		for (int a = 0; a < NALLOC; a++)                                \
			v[a] = res[a].field / (scale);                          \
		row_values(label, v, suffix, target);                           \
	} while (0)

	timing_rows("1 pair 32 B", "ns/pair", offsetof(struct result, pair), 2);
	timing_rows("2 batch 1,000 live", "ns/block", offsetof(struct result, batch), 2);
	timing_rows("3 random 16-512 B", "ns/op", offsetof(struct result, random), 0);

	/* 2-thread speedup: by wall time, unless the machine was busy (the
	 * best runs got less than 90 % of their CPUs) while the threads did
	 * not sleep (a sleep, e.g. on a lock, would go unseen in CPU time):
	 * then by CPU time. */
	int busy = (sm->thr[0].share < 0.9 || sm->thr[1].share < 0.9) && sm->thr[1].sleeps < 100;
	ROW(thr[0].wall, "4 1 thread: M blocks/s", 1e6, "", NULL);
	ROW(thr[1].wall, "  2 threads: M blocks/s", 1e6, "", NULL);
	for (int a = 0; a < NALLOC; a++)
		v[a] = res[a].thr[1].wall / res[a].thr[0].wall;
	double sp = v[A_SECRETMEM];
	if (!busy) {
		ok = sp >= 1.8;
		misses += !ok;
		snprintf(t, sizeof(t), ">= 1.8x: %.2fx %s", sp, verdict(ok));
	}
	row_values("    speedup 2/1 threads", v, "x", busy ? NULL : t);
	for (int a = 0; a < NALLOC; a++)
		v[a] = res[a].thr[1].cpu / res[a].thr[0].cpu;
	sp = v[A_SECRETMEM];
	if (busy) {
		ok = sp >= 1.8;
		misses += !ok;
		busy_cases++;
		snprintf(t, sizeof(t), ">= 1.8x: %.2fx %s (machine busy)", sp, verdict(ok));
	}
	row_values("    speedup by CPU time", v, "x", busy ? t : NULL);
	ROW(thr[1].sleeps, "    2 threads: sleeps/10^6 blocks", 1, "", NULL);

	ok = !isnan(sm->pages) && sm->pages <= 90;
	misses += !ok;
	snprintf(t, sizeof(t), "<= 90 pages: %s %s", num(b, sizeof(b), sm->pages), verdict(ok));
	ROW(pages, "5 10,000 x 32 B: secret pages", 1, "", t);
	ROW(locked_kib, "    locked memory (VmLck), KiB", 1, "", NULL);

	ok = !isnan(sm->memlock) && sm->memlock >= 240000;
	misses += !ok;
	snprintf(t, sizeof(t), ">= 240,000: %s %s", num(b, sizeof(b), sm->memlock), verdict(ok));
	ROW(memlock, "6 32 B secrets, 8 MiB memlock", 1, "", t);
#undef ROW

	for (int m = 0; m < 2; m++) {
		const double *c = churn[m];
		for (int a = 0; a < NALLOC; a++)
			v[a] = NAN;
		v[A_SECRETMEM] = c[0];
		if (isnan(c[0])) {
			snprintf(t, sizeof(t), "churn failed: %s", churn_status[m]);
			if (m == 0)
				misses++;
		} else {
			ok = c[0] <= c[1];
			if (m == 0)
				misses += !ok;
			snprintf(t, sizeof(t), "<= high-water mark %.0f pages: %s%s", c[1],
				 verdict(ok), m ? " (info)" : "");
		}
		row_values(m ? "7 churn 10^6 ops 16-512 B: faults" : "7 churn 10^6 ops 32 B: faults",
			   v, "", t);
	}
	printf("\ntargets missed: %d of 6\n", misses);
}

static void print_notes(void)
{
	const struct result *sm = &res[A_SECRETMEM];
	char b1[48], b2[48], b3[48];

	printf("\nNotes:\n");
	printf("  1 alloc(32) + write 32 B + free.  2 1,000 allocs (each written), then 1,000\n"
	       "  frees, per block.  3 free a random member of a 1,000-block live set, then\n"
	       "  allocate and write a new block of a random size 16-512 B in its place.\n"
	       "  4 each thread repeats 100 x (alloc(32) + write), then 100 frees; blocks per\n"
	       "  second over all threads.  glibc calls explicit_bzero before free; OpenSSL\n"
	       "  and sodium clear in their free; secretmem zeroes on free.  Timings: the\n"
	       "  best of %d runs of ~%.0f ms each (other processes only add time); wall\n"
	       "  time (CLOCK_MONOTONIC), and the thread's CPU time beside it.\n",
	       opt.reps, opt.target_ns / 1e6);
	printf("  4 speedup by CPU time: blocks per CPU-second of the busiest thread, 2\n"
	       "  threads over 1 - what 2 threads would reach on CPUs of their own, as long\n"
	       "  as they do not sleep (sleeps: voluntary context switches, e.g. on a lock).\n");
	if (busy_cases)
		printf("  The machine was busy (the best runs got < 90 %% of their CPUs): %d of\n"
		       "  the targets above were judged on CPU time.  Rerun on an idle machine\n"
		       "  for wall-time figures.\n", busy_cases);
	printf("  5 secretmem: pages faulted (secretmem_stats); the others: distinct pages\n"
	       "  holding the blocks.  secretmem: %s distinct pages hold the blocks, %s pages\n"
	       "  mapped, %s new regions.  VmLck counts from before the allocator's init.\n",
	       num(b1, sizeof(b1), sm->distinct), num(b2, sizeof(b2), sm->mapped),
	       num(b3, sizeof(b3), sm->regions));
	printf("  6 in a child without CAP_IPC_LOCK, RLIMIT_MEMLOCK 8 MiB; allocate 32 B\n"
	       "  (written) until the allocator fails.  OpenSSL: an 8 MiB arena.\n");
	for (int a = 0; a < NALLOC; a++) {
		if (!allocs[a].available)
			continue;
		const struct result *r = &res[a];
		if (a == A_OPENSSL && r->memlock_note == 0 && !isnan(r->memlock))
			printf("    %s: the 8 MiB arena was mlock()ed whole at initialisation.\n",
			       allocs[a].name);
		if (r->memlock_note == 1)
			printf("    %s: the arena could not be mlock()ed; its blocks are not locked.\n",
			       allocs[a].name);
		else if (r->memlock_note == 2)
			printf("    %s: stopped at the loop's cap; the limit did not bite.\n",
			       allocs[a].name);
		else if (r->memlock_note == 3)
			printf("    %s: further sodium_malloc() calls succeed with unlocked memory\n"
			       "    (its mlock failure is ignored); counted up to the first one.\n",
			       allocs[a].name);
		if (r->memlock_status[0] && strcmp(r->memlock_status, "ok") != 0)
			printf("    %s: case 6 %s.\n", allocs[a].name, r->memlock_status);
		if (r->pages_status[0] && strcmp(r->pages_status, "ok") != 0)
			printf("    %s: case 5 %s.\n", allocs[a].name, r->pages_status);
	}
	printf("  7 secretmem in a fresh process: every 10,000 operations a new target live\n"
	       "  count is drawn from 0..1,000; each operation allocates (p = 3/4 below the\n"
	       "  target) or frees a random live block.  High-water mark = the most live\n"
	       "  bytes (usable sizes) at any time, in pages, rounded up.\n");
	for (int m = 0; m < 2; m++)
		if (!isnan(churn[m][0]))
			printf("    %s: %.0f faults, high-water mark %.0f pages (%.0f by requested size,\n"
			       "    %.0f blocks), %.1f ns/op, %.0f pages mapped at the end; the sum of\n"
			       "    the per-class high-water marks (pages of one class each) is %.0f pages.\n",
			       m ? "16-512 B" : "32 B", churn[m][0], churn[m][1], churn[m][2],
			       churn[m][3], churn[m][4], churn[m][5], churn[m][7]);
	if (allocs[A_NAIVE].available && !isnan(churn[0][0]))
		printf("    naive-memfd would fault one fresh page per allocation: %.0f pages.\n",
		       churn[0][6]);
}

static void write_csv(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die(path);
	fprintf(f, "allocator,pair_ns,batch_ns,random_ns,pair_cpu_ns,batch_cpu_ns,random_cpu_ns,"
		   "thr1_mops,thr2_mops,speedup,speedup_cpu,"
		   "pages_10k,locked_kib_10k,memlock_count,churn32_faults,churn32_hwm_pages,"
		   "churnmix_faults,churnmix_hwm_pages\n");
	for (int a = 0; a < NALLOC; a++) {
		const struct result *r = &res[a];
		double c[4] = { NAN, NAN, NAN, NAN };
		if (a == A_SECRETMEM) {
			c[0] = churn[0][0];
			c[1] = churn[0][1];
			c[2] = churn[1][0];
			c[3] = churn[1][1];
		}
		fprintf(f, "%s,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.4f,%.4f,%.3f,%.3f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f\n",
			col_name[a], r->pair.wall, r->batch.wall, r->random.wall, r->pair.cpu,
			r->batch.cpu, r->random.cpu, r->thr[0].wall / 1e6, r->thr[1].wall / 1e6,
			r->thr[1].wall / r->thr[0].wall, r->thr[1].cpu / r->thr[0].cpu, r->pages, r->locked_kib, r->memlock, c[0], c[1], c[2], c[3]);
	}
	if (fclose(f) != 0)
		die(path);
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

static void print_header(int ossl_rc)
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
	       opt.quick ? " (--quick: short runs, figures are rough)" : "");
	printf("machine: %s, %ld CPUs online, %s %s %s\n", model, sysconf(_SC_NPROCESSORS_ONLN),
	       u.sysname, u.release, u.machine);
	printf("libraries: glibc %s, %s, libsodium %s\n", gnu_get_libc_version(),
	       OpenSSL_version(OPENSSL_VERSION), sodium_version_string());
	printf("secretmem backend: %s; OpenSSL secure heap: %u MiB, minsize 16, %s\n",
	       secretmem_backend_name(secretmem_default_backend()), OSSL_ARENA >> 20,
	       ossl_rc == 1 ? "locked" : ossl_rc == 2 ? "NOT locked" : "unavailable");
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "SECRETMEM_", 10) == 0)
			printf("environment: %s\n", *e);
	print_loadavg("at start");
	fflush(stdout);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench [--quick] [--csv FILE]\n"
		   "  --quick     short runs (a smoke test; figures are rough)\n"
		   "  --csv FILE  also write the figures to FILE (for bench/plot.gp)\n");
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
	}
}

static void run_children(void)
{
	double out[8];
	int n;

	for (int a = 0; a < NALLOC; a++) {
		struct result *r = &res[a];
		if (!allocs[a].available)
			continue;
		fprintf(stderr, "bench: %s: pages of 10,000 x 32 B\n", allocs[a].name);
		n = run_child("pages", allocs[a].name, out, 5, r->pages_status,
			      sizeof(r->pages_status));
		if (n == 5) {
			r->pages = a == A_SECRETMEM ? out[2] : out[0];
			r->locked_kib = out[1];
			if (a == A_SECRETMEM) {
				r->distinct = out[0];
				r->mapped = out[3];
				r->regions = out[4];
			}
		}
		if (a == A_GLIBC)
			continue;
		fprintf(stderr, "bench: %s: 32 B secrets under an 8 MiB memory-lock limit\n",
			allocs[a].name);
		n = run_child("memlock", allocs[a].name, out, 5, r->memlock_status,
			      sizeof(r->memlock_status));
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
				snprintf(r->memlock_status, sizeof(r->memlock_status),
					 "CRYPTO_secure_malloc_init failed");
		}
	}
	for (int m = 0; m < 2; m++) {
		fprintf(stderr, "bench: secretmem: churn of 10^6 operations (%s)\n",
			m ? "16-512 B" : "32 B");
		n = run_child("churn", m ? "mixed" : "32", churn[m], 8, churn_status[m],
			      sizeof(churn_status[m]));
		if (n != 8)
			churn[m][0] = NAN;
	}
}

int main(int argc, char **argv)
{
	page_size = (size_t)sysconf(_SC_PAGESIZE);
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
	opt.target_ns = opt.quick ? 2e6 : 5e6;
	opt.reps = opt.quick ? 9 : 41;

	for (int a = 0; a < NALLOC; a++) {
		struct result *r = &res[a];
		r->pair = r->batch = r->random = (struct timing){ NAN, NAN, NAN };
		r->thr[0] = r->thr[1] = (struct throughput){ NAN, NAN, NAN, NAN };
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
	raise_nofile();
	fill_random_tables();
	print_header(ossl_rc);
	for (int a = 0; a < NALLOC; a++)
		if (!allocs[a].available)
			printf("%s: not measured (%s)\n", allocs[a].name, allocs[a].why);

	for (int a = 0; a < NALLOC; a++) {
		struct allocator *al = &allocs[a];
		struct result *r = &res[a];
		if (!al->available)
			continue;
		cur_name = al->name;
		fprintf(stderr, "bench: %s: pairs, batch, random sizes, threads\n", al->name);
		r->pair = measure(al->pairs, 1);
		r->batch = measure(al->batch, BATCH);
		r->random = measure(al->random, 1);
		measure_threads(al->work, r->thr);
	}
	run_children();

	print_table();
	print_notes();
	print_loadavg("at end");
	if (opt.csv) {
		write_csv(opt.csv);
		printf("figures written to %s\n", opt.csv);
	}
	return 0;
}
