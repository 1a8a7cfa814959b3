/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_rel_bad_input.c - every row of the "Bad input" table (fuzz/BAD-INPUT.md,
 * README): a misuse of the allocator and its defined outcome.
 *
 * Each case runs in a child process of its own (the parent never touches
 * the allocator) and must end as the table says: a clean exit after the
 * case checked what it could from inside, or death by a given signal with
 * the exact fatal line on stderr.  `t_rel_bad_input NAME` runs one case.
 *
 * Under valgrind, rows whose misuse is a stray access that the process
 * survives (an overflow into a live neighbour) may also end with memcheck's
 * error exit status 99: memcheck reporting the access is the better outcome.
 * Under a sanitizer, a SIGSEGV row ends in the sanitizer's SEGV report (its
 * handler exits), and a write into a free slot, which the allocator poisons
 * for ASan, is reported by ASan at the write: both are accepted there.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) || __has_feature(thread_sanitizer) || \
	__has_feature(address_sanitizer)
#define UNDER_SANITIZER 1
#else
#define UNDER_SANITIZER 0
#endif

#define MSG_DOUBLE "secretmem: fatal: double free\n"
#define MSG_FOREIGN "secretmem: fatal: invalid pointer (not allocated by secretmem)\n"
#define MSG_INTERIOR "secretmem: fatal: invalid pointer (not the start of a block)\n"
#define MSG_WAF "secretmem: fatal: freed block was modified (write after free)\n"

/* Checks inside a case child: print and exit 1. */
#define CK(cond, ...)                                                              \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "case check failed (%s:%d): %s: ", __FILE__, \
				__LINE__, #cond);                                  \
			fprintf(stderr, __VA_ARGS__);                              \
			fputc('\n', stderr);                                       \
			return 1;                                                  \
		}                                                                  \
	} while (0)

static volatile unsigned char sink;

/* Killed by SIGSEGV - or, under a sanitizer, its SEGV report. */
static int segv_status(int st, const char *out)
{
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV)
		return 1;
	return UNDER_SANITIZER && WIFEXITED(st) && WEXITSTATUS(st) != 0 && strstr(out, "Sanitizer: SEGV");
}

static size_t live_count(void)
{
	struct secretmem_stats st;

	if (secretmem_stats(&st))
		return SIZE_MAX;
	return st.live_allocations;
}

/* ---- double free ------------------------------------------------------ */

static int c_double_free_small(void)
{
	void *p = secretmem_malloc(32);
	CK(p, "malloc");
	secretmem_free(p);
	secretmem_free(p);
	return 0;
}

static int c_double_free_large(void)
{
	void *p = secretmem_malloc(100000);
	CK(p, "malloc");
	secretmem_free(p);
	secretmem_free(p);
	return 0;
}

static int c_double_free_realloc0(void)
{
	void *p = secretmem_malloc(100);
	CK(p, "malloc");
	CK(secretmem_realloc(p, 0) == NULL, "realloc(p, 0) != NULL");
	secretmem_free(p); /* realloc(p, 0) freed it */
	return 0;
}

/* a slot two after a fresh block, never handed out: the same message
 * (secretmem_free(3)) */
static int c_double_free_never_given(void)
{
	unsigned char *p = secretmem_malloc(32);
	CK(p, "malloc");
	CK(secretmem_usable_size(p) == 32, "usable size %zu", secretmem_usable_size(p));
	secretmem_free(p + 64);
	return 0;
}

/* ---- foreign pointers ------------------------------------------------- */

static int c_foreign_libc(void)
{
	void *p = calloc(1, 32);
	CK(p, "malloc");
	secretmem_free(p);
	return 0;
}

static int c_foreign_stack(void)
{
	char local[64];
	secretmem_free(local);
	return 0;
}

static int c_foreign_region(void)
{
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	CK(r, "region_create: %s", strerror(errno));
	secretmem_free(secretmem_region_data(r));
	return 0;
}

static int c_foreign_realloc(void)
{
	void *p = calloc(1, 32);
	CK(p, "malloc");
	sink = secretmem_realloc(p, 64) != NULL;
	return 0;
}

static int c_foreign_usable_size(void)
{
	void *p = calloc(1, 32);
	CK(p, "malloc");
	sink = (unsigned char)secretmem_usable_size(p);
	return 0;
}

static int c_foreign_owns(void)
{
	char local[64];
	void *p = calloc(1, 32), *q = secretmem_malloc(32);
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	CK(p && q && r, "allocation");
	CK(secretmem_owns(p) == 0, "libc pointer owned");
	CK(secretmem_owns(local) == 0, "stack pointer owned");
	CK(secretmem_owns(secretmem_region_data(r)) == 0, "region data owned");
	CK(secretmem_owns(NULL) == 0, "NULL owned");
	CK(secretmem_owns((void *)(uintptr_t)1) == 0, "address 1 owned");
	CK(secretmem_owns((void *)UINTPTR_MAX) == 0, "address UINTPTR_MAX owned");
	CK(secretmem_owns(q) == 1, "own block not owned");
	secretmem_free(q);
	CK(secretmem_owns(q) == 0, "freed block still owned");
	secretmem_free(NULL); /* no-op */
	CK(secretmem_usable_size(NULL) == 0, "usable_size(NULL)");
	free(p);
	secretmem_region_destroy(r);
	return 0;
}

/* ---- interior pointers ------------------------------------------------ */

static int c_interior_small(void)
{
	unsigned char *p = secretmem_malloc(64);
	CK(p, "malloc");
	secretmem_free(p + 16);
	return 0;
}

static int c_interior_large(void)
{
	unsigned char *p = secretmem_malloc(50000);
	CK(p, "malloc");
	secretmem_free(p + 4096);
	return 0;
}

static int c_interior_realloc(void)
{
	unsigned char *p = secretmem_malloc(200);
	CK(p, "malloc");
	sink = secretmem_realloc(p + 8, 400) != NULL;
	return 0;
}

static int c_interior_owns(void)
{
	unsigned char *p = secretmem_malloc(64), *q = secretmem_malloc(50000);
	CK(p && q, "malloc");
	CK(secretmem_owns(p + 1) == 0 && secretmem_owns(p + 16) == 0 && secretmem_owns(p + 63) == 0,
	   "interior of a small block owned");
	CK(secretmem_owns(q + 16) == 0 && secretmem_owns(q + 4096) == 0, "interior of a large block owned");
	CK(secretmem_owns(p) == 1 && secretmem_owns(q) == 1, "blocks not owned");
	secretmem_free(p);
	secretmem_free(q);
	return 0;
}

/* ---- free after trim -------------------------------------------------- */

/* the only block of its chunk: trim releases the chunk */
static int c_free_after_trim_released(void)
{
	void *p = secretmem_malloc(32);
	CK(p, "malloc");
	secretmem_free(p);
	CK(secretmem_trim() >= 0, "trim");
	secretmem_free(p);
	return 0;
}

/* a neighbour stays live: the chunk stays, the slot is known free */
static int c_free_after_trim_kept(void)
{
	void *keep = secretmem_malloc(32), *p = secretmem_malloc(32);
	CK(keep && p, "malloc");
	secretmem_free(p);
	CK(secretmem_trim() >= 0, "trim");
	secretmem_free(p);
	return 0;
}

static int c_free_after_trim_large(void)
{
	void *p = secretmem_malloc(100000);
	CK(p, "malloc");
	secretmem_free(p);
	CK(secretmem_trim() >= 0, "trim");
	secretmem_free(p);
	return 0;
}

/* ---- overflow into the next slot -------------------------------------- */

/* two live blocks of class 32 that are neighbours: q == p + 32 */
static int adjacent_pair(unsigned char **pp, unsigned char **qq, unsigned char **all, int n)
{
	for (int i = 0; i < n; i++) {
		all[i] = secretmem_malloc(32);
		if (!all[i])
			return -1;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (all[j] == all[i] + 32) {
				*pp = all[i];
				*qq = all[j];
				return 0;
			}
	return -1;
}

static int c_overflow_next_live(void)
{
	unsigned char *all[64], *p, *q;
	size_t before;

	CK(adjacent_pair(&p, &q, all, 64) == 0, "no two adjacent blocks of 32 bytes");
	before = live_count();
	tl_fill(q, 32, 99);
	memset(p, 0xa5, 40); /* 8 bytes past the end of p */
	/* not detected at the overflow: the neighbour's data changed ... */
	for (int i = 0; i < 8; i++)
		CK(q[i] == 0xa5, "overflow did not reach the neighbour");
	unsigned char want[32];
	tl_fill(want, 32, 99);
	CK(memcmp(q + 8, want + 8, 24) == 0, "the neighbour changed beyond the overflow");
	/* ... the allocator's metadata did not (it lives out of line) */
	CK(live_count() == before, "stats changed");
	CK(secretmem_usable_size(q) == 32 && secretmem_owns(q) == 1, "neighbour's metadata changed");
	for (int i = 0; i < 64; i++)
		secretmem_free(all[i]);
	CK(live_count() == before - 64, "stats after free");
	for (int i = 0; i < 64; i++) {
		all[i] = secretmem_malloc(32);
		CK(all[i], "malloc after the overflow");
	}
	for (int i = 0; i < 64; i++)
		secretmem_free(all[i]);
	return 0;
}

static int c_overflow_next_free(void)
{
	unsigned char *all[64], *p, *q;

	CK(adjacent_pair(&p, &q, all, 64) == 0, "no two adjacent blocks of 32 bytes");
	secretmem_free(q);
	memset(p, 0xa5, 40); /* 8 bytes into the free neighbour */
	/* detected when the slot is handed out again: LIFO, so the next
	 * allocation of the class takes q */
	sink = secretmem_malloc(32) != NULL;
	fprintf(stderr, "write into a free neighbour not detected on reuse\n");
	return 1;
}

/* ---- guard pages ------------------------------------------------------ */

static int c_overflow_guard_write(void)
{
	unsigned char *p = secretmem_malloc(20000);
	CK(p, "malloc");
	size_t u = secretmem_usable_size(p);
	p[u - 1] = 1; /* the last byte is fine */
	p[u] = 1;     /* the first byte after the block is the guard page */
	return 0;
}

static int c_overflow_guard_read(void)
{
	unsigned char *p = secretmem_malloc(70000);
	CK(p, "malloc");
	sink = p[secretmem_usable_size(p)];
	return 0;
}

/* a page-multiple large block starts on a page: the byte before it is the
 * lower guard page */
static int c_underflow_guard(void)
{
	unsigned char *p = secretmem_malloc(5 * 4096);
	CK(p, "malloc");
	CK(((uintptr_t)p & 4095) == 0, "block of 5 pages not page aligned: %p", (void *)p);
	p[-1] = 1;
	return 0;
}

/* ---- sizes ------------------------------------------------------------ */

static int c_calloc_overflow(void)
{
	static const size_t cases[][2] = {
		{ SIZE_MAX / 2 + 1, 2 }, { 2, SIZE_MAX / 2 + 1 }, { (size_t)1 << 32, (size_t)1 << 32 },
		{ SIZE_MAX, SIZE_MAX }, { SIZE_MAX / 16 + 1, 16 },
	};
	size_t before = live_count();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		errno = 0;
		void *p = secretmem_calloc(cases[i][0], cases[i][1]);
		CK(p == NULL && errno == ENOMEM, "calloc(%zu, %zu) = %p errno %d", cases[i][0], cases[i][1], p, errno);
	}
	CK(live_count() == before, "stats changed");
	return 0;
}

static int c_malloc_size_max(void)
{
	static const size_t sizes[] = { SIZE_MAX, SIZE_MAX - 15, SIZE_MAX - 4096, (size_t)PTRDIFF_MAX,
					(size_t)PTRDIFF_MAX + 1, (size_t)1 << 47 };
	unsigned char *keep = secretmem_malloc(100);
	CK(keep, "malloc");
	tl_fill(keep, 100, 5);
	size_t before = live_count();

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		errno = 0;
		void *p = secretmem_malloc(sizes[i]);
		CK(p == NULL && errno == ENOMEM, "malloc(%zu) = %p errno %d", sizes[i], p, errno);
		errno = 0;
		p = secretmem_realloc(keep, sizes[i]);
		CK(p == NULL && errno == ENOMEM, "realloc(p, %zu) = %p errno %d", sizes[i], p, errno);
		CK(tl_check(keep, 100, 5), "realloc failure changed the block");
	}
	CK(live_count() == before, "stats changed");
	secretmem_free(keep);
	return 0;
}

static int c_malloc_zero(void)
{
	unsigned char *p = secretmem_malloc(0), *q = secretmem_malloc(0), *r = secretmem_calloc(0, 8);
	CK(p && q && r, "malloc(0) = NULL");
	CK(p != q && q != r && p != r, "malloc(0) not unique");
	CK(secretmem_usable_size(p) == 16, "usable size %zu", secretmem_usable_size(p));
	CK(secretmem_owns(p) == 1, "not owned");
	for (int i = 0; i < 16; i++)
		CK(p[i] == 0, "not zero");
	memset(p, 1, 16); /* the usable size may be used */
	CK(live_count() == 3, "live %zu", live_count());
	secretmem_free(p);
	secretmem_free(q);
	secretmem_free(r);
	CK(live_count() == 0, "live %zu", live_count());
	return 0;
}

static int c_realloc_zero(void)
{
	unsigned char *p = secretmem_malloc(100);
	CK(p, "malloc");
	errno = 4242;
	void *r = secretmem_realloc(p, 0);
	CK(r == NULL, "realloc(p, 0) = %p", r);
	CK(errno == 4242, "errno changed to %d", errno);
	CK(live_count() == 0 && secretmem_owns(p) == 0, "block not freed");
	/* realloc(NULL, 0) is malloc(0): a minimal block */
	r = secretmem_realloc(NULL, 0);
	CK(r != NULL && secretmem_usable_size(r) == 16, "realloc(NULL, 0) = %p", r);
	secretmem_free(r);
	return 0;
}

/* ---- fork with the drop policy ---------------------------------------- */

static unsigned char *drop_block;

static int gc_read(void *arg)
{
	(void)arg;
	sink = drop_block[0];
	return 0;
}

static int gc_write(void *arg)
{
	(void)arg;
	drop_block[0] = 1;
	return 0;
}

static int gc_free(void *arg)
{
	(void)arg;
	secretmem_free(drop_block);
	return 0;
}

static int gc_fresh(void *arg)
{
	(void)arg;
	if (secretmem_owns(drop_block) != 0 || live_count() != 0)
		return 1;
	unsigned char *p = secretmem_malloc(64);
	if (!p)
		return 2;
	tl_fill(p, 64, 1);
	if (!tl_check(p, 64, 1))
		return 3;
	secretmem_free(p);
	return live_count() == 0 ? 0 : 4;
}

static int c_fork_drop(void)
{
	char out[4096];
	int st;

	CK(secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_DROP) == 0, "set_option");
	drop_block = secretmem_malloc(64);
	CK(drop_block, "malloc");
	tl_fill(drop_block, 64, 77);

	st = tl_run_child(gc_read, NULL, out, sizeof(out));
	CK(segv_status(st, out), "child reading an old block: %s", tl_status_str(st));
	st = tl_run_child(gc_write, NULL, out, sizeof(out));
	CK(segv_status(st, out), "child writing an old block: %s", tl_status_str(st));
	st = tl_run_child(gc_free, NULL, out, sizeof(out));
	CK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(out, MSG_FOREIGN),
	   "child freeing an old block: %s, output: %s", tl_status_str(st), out);
	st = tl_run_child(gc_fresh, NULL, out, sizeof(out));
	/* under valgrind also: memcheck's exit status 99 here means its
	 * leak check in the child reports the blocks dropped with their pages */
	CK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "child's fresh heap: %s %s", tl_status_str(st), out);
	/* the parent's block is untouched */
	CK(tl_check(drop_block, 64, 77), "parent's block changed");
	secretmem_free(drop_block);
	return 0;
}

/* ---- the table -------------------------------------------------------- */

enum expect { EXIT_OK, DIES };

struct bad_case {
	const char *name;
	int (*fn)(void);
	enum expect expect;
	int sig;
	const char *msg;  /* exact stderr line, or NULL */
	const char *msg2; /* an accepted alternative, or NULL */
	int stray_access; /* survives a stray access: memcheck may flag it */
	int poisoned;     /* touches a free slot: ASan may report it first */
};

static const struct bad_case cases[] = {
	{ "double-free-small", c_double_free_small, DIES, SIGABRT, MSG_DOUBLE, NULL, 0, 0 },
	{ "double-free-large", c_double_free_large, DIES, SIGABRT, MSG_DOUBLE, NULL, 0, 0 },
	{ "double-free-after-realloc0", c_double_free_realloc0, DIES, SIGABRT, MSG_DOUBLE, NULL, 0, 0 },
	{ "double-free-never-handed-out", c_double_free_never_given, DIES, SIGABRT, MSG_DOUBLE, NULL, 0, 0 },
	{ "foreign-libc", c_foreign_libc, DIES, SIGABRT, MSG_FOREIGN, NULL, 0, 0 },
	{ "foreign-stack", c_foreign_stack, DIES, SIGABRT, MSG_FOREIGN, NULL, 0, 0 },
	{ "foreign-region", c_foreign_region, DIES, SIGABRT, MSG_FOREIGN, NULL, 0, 0 },
	{ "foreign-realloc", c_foreign_realloc, DIES, SIGABRT, MSG_FOREIGN, NULL, 0, 0 },
	{ "foreign-usable-size", c_foreign_usable_size, DIES, SIGABRT, MSG_FOREIGN, NULL, 0, 0 },
	{ "foreign-owns", c_foreign_owns, EXIT_OK, 0, NULL, NULL, 0, 0 },
	{ "interior-small", c_interior_small, DIES, SIGABRT, MSG_INTERIOR, NULL, 0, 0 },
	{ "interior-large", c_interior_large, DIES, SIGABRT, MSG_INTERIOR, NULL, 0, 0 },
	{ "interior-realloc", c_interior_realloc, DIES, SIGABRT, MSG_INTERIOR, NULL, 0, 0 },
	{ "interior-owns", c_interior_owns, EXIT_OK, 0, NULL, NULL, 0, 0 },
	{ "free-after-trim-released", c_free_after_trim_released, DIES, SIGABRT, MSG_FOREIGN, NULL, 0, 0 },
	{ "free-after-trim-kept", c_free_after_trim_kept, DIES, SIGABRT, MSG_DOUBLE, NULL, 0, 0 },
	{ "free-after-trim-large", c_free_after_trim_large, DIES, SIGABRT, MSG_FOREIGN, NULL, 0, 0 },
	{ "overflow-next-slot-live", c_overflow_next_live, EXIT_OK, 0, NULL, NULL, 1, 0 },
	{ "overflow-next-slot-free", c_overflow_next_free, DIES, SIGABRT, MSG_WAF, NULL, 0, 1 },
	{ "overflow-guard-write", c_overflow_guard_write, DIES, SIGSEGV, NULL, NULL, 0, 0 },
	{ "overflow-guard-read", c_overflow_guard_read, DIES, SIGSEGV, NULL, NULL, 0, 0 },
	{ "underflow-guard", c_underflow_guard, DIES, SIGSEGV, NULL, NULL, 0, 0 },
	{ "calloc-overflow", c_calloc_overflow, EXIT_OK, 0, NULL, NULL, 0, 0 },
	{ "malloc-size-max", c_malloc_size_max, EXIT_OK, 0, NULL, NULL, 0, 0 },
	{ "malloc-zero", c_malloc_zero, EXIT_OK, 0, NULL, NULL, 0, 0 },
	{ "realloc-zero", c_realloc_zero, EXIT_OK, 0, NULL, NULL, 0, 0 },
	{ "fork-drop", c_fork_drop, EXIT_OK, 0, NULL, NULL, 0, 0 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static int run_case(void *arg)
{
	const struct bad_case *c = arg;

	return c->fn();
}

static int check_case(const struct bad_case *c)
{
	static char out[16384];
	int st = tl_run_child(run_case, (void *)(uintptr_t)c, out, sizeof(out));
	int ok;

	if (c->expect == EXIT_OK)
		ok = WIFEXITED(st) && (WEXITSTATUS(st) == 0 ||
				       (c->stray_access && tl_under_valgrind() && WEXITSTATUS(st) == 99));
	else if (c->sig == SIGSEGV)
		ok = segv_status(st, out);
	else
		ok = (WIFSIGNALED(st) && WTERMSIG(st) == c->sig &&
		      (!c->msg || strstr(out, c->msg) || (c->msg2 && strstr(out, c->msg2)))) ||
		     (c->poisoned && UNDER_SANITIZER && WIFEXITED(st) && WEXITSTATUS(st) != 0 &&
		      strstr(out, "AddressSanitizer"));
	if (ok) {
		int shown = c->msg && strstr(out, c->msg);
		printf("ok   %-28s %s%s%.*s%s\n", c->name, tl_status_str(st), shown ? ", " : "",
		       shown ? (int)strlen(c->msg) - 1 : 0, shown ? c->msg : "",
		       strstr(out, "Sanitizer") ? " (sanitizer report)" : "");
		return 0;
	}
	printf("FAIL %-28s got %s, expected %s", c->name, tl_status_str(st),
	       c->expect == EXIT_OK ? "exit 0" : c->sig == SIGABRT ? "SIGABRT" : "SIGSEGV");
	if (c->msg)
		printf(" with \"%.*s\"", (int)strlen(c->msg) - 1, c->msg);
	printf("\n    output: %s\n", out);
	return 1;
}

int main(int argc, char **argv)
{
	int failed = 0, ran = 0;

	/* the cases need the allocator; it falls back without the kernel
	 * feature, and every row holds for both backends */
	for (size_t i = 0; i < NCASES; i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)
			continue;
		failed += check_case(&cases[i]);
		ran++;
	}
	if (!ran)
		TL_FAIL("no case named %s", argv[1]);
	fflush(stdout);
	if (failed)
		TL_FAIL("%d of %d cases failed", failed, ran);
	return 0;
}
