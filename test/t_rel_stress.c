/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_rel_stress.c - 8 threads hammer the allocator while the main thread
 * forks under each fork policy.
 *
 * Each worker keeps up to 128 blocks of mixed sizes (mostly small, some of
 * every slab class, a few large page runs), fills every block with a
 * pattern of its own (an 8-byte tag, then a byte derived from it) and
 * checks the pattern before it frees, reallocs or hands the block on.
 * Blocks also travel between threads through a shared exchange array, so
 * blocks are freed by threads other than the one that allocated them.
 *
 * Meanwhile the main thread forks again and again, cycling the fork policy
 * (copy, share, drop); each child checks a canary block per the policy,
 * allocates a few blocks (not under share, where the child would be handed
 * the parent's free slots - documented), and exits.  A child that hangs
 * (a lock held across fork) is killed by alarm() and counts as a failure.
 *
 * Operations: 10^7 in all in a normal build; 10^6 under AddressSanitizer,
 * 3*10^5 under ThreadSanitizer (`make check SANITIZE=thread`), 2*10^5 under
 * valgrind; SECRETMEM_STRESS_OPS=n overrides.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 2 /* ThreadSanitizer: the slowest */
#elif defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define UNDER_SANITIZER 1
#else
#define UNDER_SANITIZER 0
#endif


#define NTHREADS 8
#define SLOTS 128
#define NEXCHANGE 64

struct blk {
	unsigned char *p;
	size_t size;
	uint64_t tag;
};

static _Atomic(struct blk *) exchange[NEXCHANGE];
static atomic_int failed, workers_done;
static atomic_long ops_done, cross_frees;
static long ops_per_thread;

#define WFAIL(...)                                            \
	do {                                                  \
		fprintf(stderr, "worker: " __VA_ARGS__);      \
		fputc('\n', stderr);                          \
		atomic_store(&failed, 1);                     \
	} while (0)

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static size_t pick_size(uint64_t r)
{
	unsigned k = (unsigned)(r & 1023);

	if (k < 700)
		return (r >> 10) % 257;              /* tiny and small */
	if (k < 1020)
		return 257 + (r >> 10) % 16128;      /* the rest of the slab classes */
	return 16385 + (r >> 10) % (49152 + 1);   /* large page runs */
}

static void fill(struct blk *b)
{
	unsigned char byte = (unsigned char)(b->tag * 0x9d ^ (b->tag >> 8));

	if (b->size >= 8) {
		memcpy(b->p, &b->tag, 8);
		memset(b->p + 8, byte, b->size - 8);
	} else {
		memset(b->p, byte, b->size);
	}
}

static int intact(const struct blk *b, size_t upto)
{
	unsigned char byte = (unsigned char)(b->tag * 0x9d ^ (b->tag >> 8));
	size_t n = upto < b->size ? upto : b->size, i = 0;

	if (b->size >= 8) {
		uint64_t t;
		if (n >= 8) {
			memcpy(&t, b->p, 8);
			if (t != b->tag)
				return 0;
			i = 8;
		} else {
			return memcmp(b->p, &b->tag, n) == 0;
		}
	}
	for (; i < n; i++)
		if (b->p[i] != byte)
			return 0;
	return 1;
}

static struct blk *new_block(size_t size, uint64_t tag)
{
	struct blk *b = malloc(sizeof(*b));

	if (!b)
		return NULL;
	b->p = secretmem_malloc(size);
	if (!b->p) {
		WFAIL("malloc(%zu) failed: %s", size, strerror(errno));
		free(b);
		return NULL;
	}
	b->size = size;
	b->tag = tag;
	for (size_t i = 0; i < size; i++)
		if (b->p[i]) {
			WFAIL("new block of %zu not zero at %zu", size, i);
			break;
		}
	fill(b);
	return b;
}

static void drop_block(struct blk *b, int foreign)
{
	if (!intact(b, b->size))
		WFAIL("block %p (%zu bytes, tag %llx) changed", (void *)b->p, b->size, (unsigned long long)b->tag);
	secretmem_free(b->p);
	if (foreign)
		atomic_fetch_add_explicit(&cross_frees, 1, memory_order_relaxed);
	free(b);
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct blk *slots[SLOTS] = { 0 };
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1), tags = (uint64_t)id << 56;

	for (long op = 0; op < ops_per_thread && !atomic_load_explicit(&failed, memory_order_relaxed); op++) {
		uint64_t r = rnd(&s);
		unsigned what = (unsigned)(r >> 58), i = (unsigned)(r >> 40) % SLOTS;
		struct blk *b = slots[i];

		if (!b) {
			slots[i] = new_block(pick_size(rnd(&s)), ++tags);
		} else if (what < 36) {
			drop_block(b, 0);
			slots[i] = NULL;
		} else if (what < 48) {
			/* realloc: the contents up to the smaller size survive */
			size_t n = pick_size(rnd(&s)), keep = n < b->size ? n : b->size;
			unsigned char *q = secretmem_realloc(b->p, n);
			if (!q && n) {
				WFAIL("realloc(%zu) failed: %s", n, strerror(errno));
				continue;
			}
			if (n == 0) {
				free(b);
				slots[i] = NULL;
				continue;
			}
			b->p = q;
			if (!intact(b, keep))
				WFAIL("realloc %zu -> %zu lost contents", b->size, n);
			b->size = n;
			b->tag = ++tags;
			fill(b);
		} else if (what < 56) {
			/* hand the block to another thread, take theirs */
			if (!intact(b, b->size))
				WFAIL("block changed before exchange");
			struct blk *other = atomic_exchange(&exchange[(r >> 20) % NEXCHANGE], b);
			slots[i] = NULL;
			if (other)
				drop_block(other, 1);
		} else {
			/* check and rewrite */
			if (!intact(b, b->size))
				WFAIL("block %p (%zu bytes) changed", (void *)b->p, b->size);
			b->tag = ++tags;
			fill(b);
		}
	}
	for (int i = 0; i < SLOTS; i++)
		if (slots[i])
			drop_block(slots[i], 0);
	atomic_fetch_add(&ops_done, ops_per_thread);
	atomic_fetch_add(&workers_done, 1);
	return NULL;
}

/* ---- fork -------------------------------------------------------------- */

static unsigned char *canary;
#define CANARY_LEN 4096

static int child_after_fork(int policy)
{
	alarm(20); /* a lock held across fork would hang us here */
	if (policy == SECRETMEM_FORK_DROP) {
		struct secretmem_stats st;
		if (secretmem_owns(canary) != 0)
			return 10;
		if (secretmem_stats(&st) || st.live_allocations != 0)
			return 11;
	} else {
		if (secretmem_owns(canary) != 1 || !tl_check(canary, CANARY_LEN, 0xca))
			return 12;
	}
	if (policy == SECRETMEM_FORK_COPY)
		memset(canary, 0xee, CANARY_LEN); /* private copy: the parent must not see it */
	if (policy != SECRETMEM_FORK_SHARE) {
		static const size_t sizes[] = { 1, 100, 3000, 16384, 40000 };
		unsigned char *p[5];
		for (int i = 0; i < 5; i++) {
			p[i] = secretmem_malloc(sizes[i]);
			if (!p[i])
				return 13;
			tl_fill(p[i], sizes[i], (uint64_t)i);
		}
		for (int i = 0; i < 5; i++) {
			if (!tl_check(p[i], sizes[i], (uint64_t)i))
				return 14;
			secretmem_free(p[i]);
		}
	}
	return 0;
}

static int fork_once(int policy)
{
	if (secretmem_set_option(SECRETMEM_OPT_FORK, policy))
		TL_FAIL("set fork policy %d", policy);
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0)
		tl_child_exit(child_after_fork(policy));
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "fork child (policy %d) ended with %s\n", policy, tl_status_str(st));
		return -1;
	}
	if (!tl_check(canary, CANARY_LEN, 0xca)) {
		fprintf(stderr, "canary changed in the parent after a child with policy %d\n", policy);
		return -1;
	}
	return 0;
}

int main(void)
{
	tl_need_root("uses more secret memory than the memory-lock limit of a normal user (8 MiB)");
	static const char *const pname[] = { "copy", "share", "drop" };
	long total = 10000000;
	const char *e = getenv("SECRETMEM_STRESS_OPS");
	const char *why = "normal build";
	pthread_t th[NTHREADS];
	long forks[3] = { 0, 0, 0 };
	struct timespec t0, t1;

	if (tl_under_valgrind()) {
		total = 200000;
		why = "under valgrind";
	} else if (UNDER_SANITIZER == 2) {
		total = 300000;
		why = "under ThreadSanitizer";
	} else if (UNDER_SANITIZER) {
		total = 1000000;
		why = "under AddressSanitizer";
	}
	if (e && atol(e) > 0) {
		total = atol(e);
		why = "SECRETMEM_STRESS_OPS";
	}
	ops_per_thread = total / NTHREADS;
	printf("%d threads, %ld operations (%s)\n", NTHREADS, ops_per_thread * NTHREADS, why);

	canary = secretmem_malloc(CANARY_LEN);
	if (!canary)
		TL_FAIL("malloc: %s", strerror(errno));
	tl_fill(canary, CANARY_LEN, 0xca);
	alarm(tl_under_valgrind() ? 800 : 170); /* a deadlock kills the test */

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i))
			TL_FAIL("pthread_create");
	/* fork from the threaded parent until the workers are done, at least
	 * three times per policy while they run */
	int fork_failures = 0;
	for (int k = 0; atomic_load(&workers_done) < NTHREADS || k < 9; k++) {
		int policy = k % 3;
		if (fork_once(policy))
			fork_failures++;
		forks[policy]++;
		if (k >= 9)
			usleep(20000);
		if (fork_failures > 5)
			break;
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	alarm(0);

	for (int i = 0; i < NEXCHANGE; i++) {
		struct blk *b = atomic_exchange(&exchange[i], NULL);
		if (b)
			drop_block(b, 0);
	}
	secretmem_free(canary);
	struct secretmem_stats st;
	if (secretmem_stats(&st))
		TL_FAIL("stats");
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%ld operations in %.1f s, %ld blocks freed by another thread; forks: %ld copy, %ld share, %ld drop\n",
	       atomic_load(&ops_done), secs, atomic_load(&cross_frees), forks[0], forks[1], forks[2]);
	TL_CHECK(!atomic_load(&failed), "a worker saw corruption or a failure (see above)");
	TL_CHECK(fork_failures == 0, "%d fork children failed", fork_failures);
	TL_CHECK(st.live_allocations == 0 && st.bytes_in_use == 0, "%zu blocks / %zu bytes still live",
		 st.live_allocations, st.bytes_in_use);
	for (int p = 0; p < 3; p++)
		TL_CHECK(forks[p] >= 3, "only %ld forks with policy %s", forks[p], pname[p]);
	return 0;
}
