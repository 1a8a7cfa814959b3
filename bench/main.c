/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * main.c - the allocator benchmark: its options, its start and its
 * children's dispatch.
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
 *   8  pair time at every 16-byte position in one page (max/min), in 21
 *      processes per allocator: how many are over 1.25
 *   9  secret pages used by 10,000 x 32 B; 10 the most 32-byte secrets
 *      under an 8 MiB RLIMIT_MEMLOCK; 11 pages faulted by a churn of 10^6
 *      operations
 * 6-11 run in fresh copies of this program (re-executed with --child ...).
 *
 * Usage: bench [--quick] [--csv FILE]
 *
 * Files (bench.h declares what they share):
 *   main.c        options, start-up, the --child dispatch
 *   harness.c     timer, samples, child processes, the rounds of 6-8
 *   allocators.c  the seven allocators; loops.h: the timed loops of 1-5
 *   inproc.c      1-5 in this process: calibration, threads, rounds
 *   chain.c       6 realloc chain and 6b pair, in five states
 *   growth.c      7 growth; 9 pages, 10 memory-lock limit, 11 churn
 *   sweep.c       8 slot-offset sweep
 *   report.c      header, table, notes, CSV
 */
#include <math.h>
#include <openssl/crypto.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench.h"

struct options opt;
size_t page_size;

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
		return child_chain(a, argv[4]);
	if (strcmp(argv[2], "pairstate") == 0 && argc >= 5)
		return child_pairstate(a, argv[4]);
	if (strcmp(argv[2], "grow") == 0)
		return child_grow(a);
	if (strcmp(argv[2], "sweep") == 0 && argc >= 5)
		return child_sweep(a, atol(argv[4]));
	fprintf(stderr, "bench: unknown child case %s\n", argv[2]);
	return 2;
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
