/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * adopt_bench [ROUNDS [MIB]] - the cost of heap mode's adoption of locked
 * memory (secretmem-heap(7), LOCKED MEMORY) against the kernel's floor for
 * a secret page.  Run it under the heap module:
 *
 *   LD_PRELOAD=build/libsecretmem-heap.so build/bench/adopt_bench 11 4
 *
 * Each round, interleaved, on MIB MiB of memory the program has written:
 *   floor   a fresh memfd_secret mapping of that size, each page touched once
 *           (the first touch of a secret page: the kernel's price);
 *   adopt   mlock() of private anonymous memory, which the module turns
 *           into secret memory (copy included);
 *   mlock   the kernel's own mlock of the same kind of memory (raw system
 *           call, past the module), for reference;
 *   calls   20,000 mprotect()s of one page and 5,000 mmap()+munmap() pairs
 *           through the module (each takes its lock, adopted or not),
 *           against the same by raw system call: microseconds per call.
 * Printed per round and as the median and range over rounds: CPU time
 * (this thread's) and wall time per MiB, adopt / floor and module / raw
 * per round.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PS 4096

struct t {
	double cpu, wall;
};

static struct t now(void)
{
	struct timespec c, w;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
	clock_gettime(CLOCK_MONOTONIC, &w);
	return (struct t){ c.tv_sec + c.tv_nsec / 1e9, w.tv_sec + w.tv_nsec / 1e9 };
}

static struct t since(struct t a)
{
	struct t b = now();

	return (struct t){ (b.cpu - a.cpu) * 1e3, (b.wall - a.wall) * 1e3 }; /* ms */
}

static unsigned char *written(size_t len)
{
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(p, 0x5a, len);
	return p;
}

/* The kernel's mlock, past any interposer. */
static long raw_mlock(void *p, size_t len)
{
#if defined(__x86_64__)
	long r;
	__asm__ __volatile__("syscall" : "=a"(r) : "a"((long)SYS_mlock), "D"(p), "S"(len) : "rcx", "r11", "memory");
	return r;
#else
	return mlock(p, len);
#endif
}

static long raw6(long n, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ __volatile__("syscall"
			     : "=a"(r)
			     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return r;
#else
	return syscall(n, a, b, c, d, e, f);
#endif
}

#define PROTECTS 20000
#define MAPS 5000

/* us per call of PROTECTS mprotects and MAPS mmap+munmap pairs (3 calls
 * each), through libc (raw 0) or by raw system call (raw 1) */
static struct t calls(unsigned char *page, int raw)
{
	struct t a = now();

	for (int i = 0; i < PROTECTS; i++) {
		int prot = i & 1 ? PROT_READ | PROT_WRITE : PROT_READ;
		if (raw)
			raw6(SYS_mprotect, (long)page, PS, prot, 0, 0, 0);
		else
			mprotect(page, PS, prot);
	}
	for (int i = 0; i < MAPS; i++) {
		if (raw) {
			long p = raw6(SYS_mmap, 0, PS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			raw6(SYS_munmap, p, PS, 0, 0, 0, 0);
		} else {
			void *p = mmap(NULL, PS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			munmap(p, PS);
		}
	}
	struct t d = since(a);
	return (struct t){ d.cpu * 1e3 / (PROTECTS + 2 * MAPS), d.wall * 1e3 / (PROTECTS + 2 * MAPS) };
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void summary(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("%-26s median %8.3f  range %8.3f - %8.3f\n", what, v[n / 2], v[0], v[n - 1]);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 11;
	size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 4, len = mib << 20;
	double fc[64], fw[64], ac[64], aw[64], mc[64], mw[64], rc[64], rw[64], cc[64], cw[64], kc[64], kw[64],
		qc[64], qw[64];
	unsigned char *page = written(PS);

	if (rounds < 1 || rounds > 64 || mib < 1) {
		fprintf(stderr, "usage: adopt_bench [ROUNDS (1-64) [MIB]]\n");
		return 64;
	}
	printf("adopt_bench: %d rounds, %zu MiB, ms per MiB (CPU of this thread / wall)\n", rounds, mib);
	printf("round  floor cpu/wall      adopt cpu/wall      mlock cpu/wall   adopt/floor cpu wall   "
	       "calls us: module cpu/wall  raw cpu/wall  module/raw cpu wall\n");
	for (int r = 0; r < rounds; r++) {
		/* floor: first touch of fresh secret pages */
		int fd = (int)syscall(SYS_memfd_secret, 0);
		if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
			perror("memfd_secret");
			return 1;
		}
		unsigned char *s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (s == MAP_FAILED) {
			perror("mmap secret");
			return 1;
		}
		struct t a = now();
		for (size_t i = 0; i < len; i += PS)
			((volatile unsigned char *)s)[i] = 1;
		struct t f = since(a);
		munmap(s, len);

		/* adopt: the module's mlock */
		unsigned char *p = written(len);
		a = now();
		if (mlock(p, len) != 0) {
			perror("mlock");
			return 1;
		}
		struct t ad = since(a);
		if (p[len - 1] != 0x5a) {
			fprintf(stderr, "contents lost\n");
			return 1;
		}
		munmap(p, len);

		/* the kernel's mlock */
		p = written(len);
		a = now();
		if (raw_mlock(p, len) != 0) {
			fprintf(stderr, "raw mlock failed\n");
			return 1;
		}
		struct t m = since(a);
		munmap(p, len);

		fc[r] = f.cpu / mib, fw[r] = f.wall / mib;
		ac[r] = ad.cpu / mib, aw[r] = ad.wall / mib;
		mc[r] = m.cpu / mib, mw[r] = m.wall / mib;
		rc[r] = ac[r] / fc[r], rw[r] = aw[r] / fw[r];
		/* calls: through the module and raw, in turn (order swapped
		 * each round) */
		struct t cm, ck;
		if (r & 1) {
			ck = calls(page, 1);
			cm = calls(page, 0);
		} else {
			cm = calls(page, 0);
			ck = calls(page, 1);
		}
		cc[r] = cm.cpu, cw[r] = cm.wall, kc[r] = ck.cpu, kw[r] = ck.wall;
		qc[r] = cc[r] / kc[r], qw[r] = cw[r] / kw[r];
		printf("%5d  %7.3f/%7.3f    %7.3f/%7.3f    %7.3f/%7.3f    %6.2f %6.2f   %6.3f/%6.3f  %6.3f/%6.3f  %6.2f %6.2f\n",
		       r, fc[r], fw[r], ac[r], aw[r], mc[r], mw[r], rc[r], rw[r], cc[r], cw[r], kc[r], kw[r], qc[r], qw[r]);
	}
	summary("floor, ms/MiB CPU", fc, rounds);
	summary("floor, ms/MiB wall", fw, rounds);
	summary("adopt, ms/MiB CPU", ac, rounds);
	summary("adopt, ms/MiB wall", aw, rounds);
	summary("kernel mlock, ms/MiB CPU", mc, rounds);
	summary("kernel mlock, ms/MiB wall", mw, rounds);
	summary("adopt / floor, CPU", rc, rounds);
	summary("adopt / floor, wall", rw, rounds);
	summary("calls via module, us CPU", cc, rounds);
	summary("calls raw, us CPU", kc, rounds);
	summary("calls module / raw, CPU", qc, rounds);
	summary("calls module / raw, wall", qw, rounds);
	return 0;
}
