/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * growth.c - growth and limits: workload 7, the live set grown by 32-byte
 * secrets beside the page-fault floor, in rounds of fresh processes; and
 * 9-11, one run each: the secret pages used by 10,000 x 32 B, the most
 * 32-byte secrets under an 8 MiB RLIMIT_MEMLOCK (without CAP_IPC_LOCK),
 * and secretmem's pages faulted by a churn of 10^6 operations.  The child
 * sides (--child grow|pages|memlock NAME, --child churn 32|mixed) and the
 * parent sides.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "bench.h"

struct once res[NALLOC];
double churn[2][8];
char churn_status[2][48];

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

/*
 * 7: the page-fault floor - FLOOR_PAGES fresh pages of one memfd_secret
 * mapping, one byte written in each - then GROW_N new 32-byte secrets
 * (each written), in this fresh process.  Prints, per secret: CPU and wall
 * time of the growth, and of the floor (the time per page divided by the
 * 32-byte slots in a page).
 */
int child_grow(int a)
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

/* 7, one round: GROW_PER_ROUND fresh processes per allocator. */
void grow_round(int r)
{
	double out[4];
	char st[48];

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

/*
 * 9 (child): 10,000 x 32 B, each written.  Prints: distinct pages
 * holding the blocks, VmLck growth in KiB (from before the allocator's
 * initialisation), and for secretmem the growth of pages_faulted,
 * pages_mapped and regions.
 */
int child_pages(int a)
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
 * 10 (child): without CAP_IPC_LOCK and with RLIMIT_MEMLOCK 8 MiB,
 * allocate 32-byte secrets (each written) until the allocator says no.
 * sodium_malloc ignores a failing mlock() and goes on with unlocked memory,
 * so for it the count stops at the first block that did not raise VmLck.
 * Prints: count, VmLck KiB, init result (OpenSSL: 1 locked, 2 not
 * locked), stop reason (0 NULL, 1 cap reached, 2 no longer locked), errno.
 */
int child_memlock(int a)
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
 * 11 (child, secretmem): 10^6 random operations with at most 1,000
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
int child_churn(int mixed)
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

/* 9-11 (one run each). */
void run_once_children(void)
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
