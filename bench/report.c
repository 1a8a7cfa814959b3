/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * report.c - what the benchmark prints: the header (machine, libraries,
 * environment), the table (per workload and allocator the median and the
 * range of the per-round ratios to glibc+bzero, and secretmem's targets),
 * the notes on method, and the CSV for bench/plot.gp.
 */
#include <gnu/libc-version.h>
#include <math.h>
#include <openssl/crypto.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"

extern char **environ;

void print_loadavg(const char *when)
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

/*
 * Secretmem against mimalloc+bzero on the small-block workloads, per round
 * (both ran in the same round): the CPU-time and wall-time ratios, with the
 * target <= 1.00 (issue 32, target 5, which asks <= 1.00 x glibc+bzero on
 * the same workloads too: the rows above).
 */
static void mimalloc_rows(void)
{
	static const struct {
		int w;
		const char *name;
	} row[] = {
		{ W_PAIR, "1 pair" }, { W_BATCH, "2 batch" }, { W_RANDOM, "3 random" }, { W_THR2, "4 2 threads" },
	};
	char r1[48], r2[48], t[64];

	printf("  secretmem x mimalloc+bzero, same round: CPU time | wall time\n");
	for (size_t i = 0; i < sizeof(row) / sizeof(row[0]); i++) {
		int w = row[i].w;
		if (!allocs[A_MIMALLOC].available || ser[w][A_MIMALLOC].n == 0 || ser[w][A_SECRETMEM].n == 0) {
			printf(ROWFMT, row[i].name, "", "n/a (mimalloc not measured)", "", "");
			continue;
		}
		struct spread c = ratio_of(w, A_SECRETMEM, F_CPU, w, A_MIMALLOC, F_CPU);
		struct spread wl = ratio_of(w, A_SECRETMEM, F_WALL, w, A_MIMALLOC, F_WALL);
		verdict(t, sizeof(t), "target", c.med, 1.0, 1);
		printf(ROWFMT, row[i].name, "", spread_str(r1, sizeof(r1), c), spread_str(r2, sizeof(r2), wl), t);
	}
}

void print_table(void)
{
	char v[32], r1[48], r2[48], t[160], b[24];

	printf("\n" ROWFMT, "workload", "CPU/op", "x glibc, CPU time", "x glibc, wall time", "per op / target");
	printf("  %-12s %11s  %-21s %-21s\n", "", "(median)", "median [min-max]", "median [min-max]");
	timed_rows(W_PAIR, "1 pair: alloc(32) + write + free, ns", 1.0, 0, 1);
	timed_rows(W_BATCH, "2 batch: 1,000 x alloc(32) + write, then 1,000 frees, ns per block", 1.0, 0, 1);
	timed_rows(W_RANDOM, "3 random 16-512 B, 1,000 live, free + alloc + write, ns", 1.0, 0, 1);
	timed_rows(W_THR1, "4 1 thread: 100 x (alloc(32) + write), 100 frees, ns per block", 0, 0, 1);
	timed_rows(W_THR2, "  2 threads: the same in each, ns per block (CPU time of both threads)", 1.0, 0, 1);
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
	mimalloc_rows();
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

	printf("8 pair time over every 16-byte position in a page, max/min, in %d processes: median [range], "
	       "processes over %.2f\n", SWEEP_PROCS, SWEEP_BAD);
	int over[NALLOC] = { 0 };
	for (int a = 0; a <= A_JEMALLOC; a++)
		for (int p = 0; p < SWEEP_PROCS; p++)
			over[a] += !(sweep[a][p] <= SWEEP_BAD); /* a failed process counts */
	for (int a = 0; a <= A_JEMALLOC; a++) {
		if (!allocs[a].available)
			continue;
		double v8[SWEEP_PROCS];
		memcpy(v8, sweep[a], sizeof(v8));
		struct spread sw = spread_of(v8, SWEEP_PROCS);
		snprintf(v, sizeof(v), "%.0f pos.", sweep_npos[a]);
		spread_str(r1, sizeof(r1), sw);
		snprintf(r2, sizeof(r2), "%d of %d; same %.0f%%", over[a], SWEEP_PROCS, 100 * sweep_same[a]);
		t[0] = 0;
		if (a == A_SECRETMEM && allocs[A_GLIBC].available)
			verdict(t, sizeof(t), "over", over[a], over[A_GLIBC], 1);
		printf(ROWFMT, col_name[a], v, r1, r2, t);
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

void print_notes(void)
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
	       "  at that position, 9 times; the median per position; max/min over the\n"
	       "  positions in each of %d fresh processes per allocator, the allocators in\n"
	       "  turn; target: no more secretmem processes over %.2f than glibc+bzero ones;\n"
	       "  same: share of pairs that got the freed block back (the position measured).\n",
	       opt.sweep_pairs, SWEEP_PROCS, SWEEP_BAD);
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

void write_csv(const char *path)
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

void print_header(int ossl_rc, int argc, char **argv)
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
