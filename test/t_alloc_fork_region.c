/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_region - what the copy policy copies.
 *  - Regions in each access mode: the child's copy has the contents and the
 *    same mode (read-only: readable, a write faults; no access: a read
 *    faults, and after secretmem_region_protect(READWRITE) the contents are
 *    there); the parent's regions keep their modes (the parent's copy made
 *    for the child never changes them).
 *  - Only what holds data: an allocator chunk of which only the first pages
 *    hold live blocks costs the child only those pages (the memory behind
 *    the child's chunk mapping, by mincore(2), is at most a quarter of the
 *    parent's).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define RSZ 16384

static struct secretmem_region *reg[3];
static unsigned char *small;

/* KiB of memory behind the mapping that contains addr: mincore(2) of a
 * shared file mapping counts the file's pages in memory, whether or not
 * this process touched them (unlike Rss); -1 on error. */
static long rss_kib(const void *addr)
{
	char line[512];
	unsigned long lo, hi;
	static unsigned char vec[1 << 16];

	if (tl_maps_line(addr, line, sizeof(line)) || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
		return -1;
	size_t pages = (hi - lo) / 4096;
	if (pages > sizeof(vec) || mincore((void *)lo, hi - lo, vec))
		return -1;
	long n = 0;
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	return n * 4;
}

static int perms(const void *addr, char *p4)
{
	char line[512];

	if (tl_maps_line(addr, line, sizeof(line)))
		return -1;
	const char *sp = strchr(line, ' ');
	if (!sp)
		return -1;
	memcpy(p4, sp + 1, 3);
	p4[3] = 0;
	return 0;
}

static int read_one(void *arg)
{
	tl_no_core();
	tl_signal_default(SIGSEGV);
	return *(volatile unsigned char *)arg == 0xff ? 3 : 4;
}

static int write_one(void *arg)
{
	tl_no_core();
	tl_signal_default(SIGSEGV);
	*(volatile unsigned char *)arg = 1;
	return 5;
}

/* In a forked child: the copies and their modes. */
static int child_regions(void *arg)
{
	static char out[1024];
	(void)arg;

	unsigned char *rw = secretmem_region_data(reg[0]), *ro = secretmem_region_data(reg[1]),
		      *na = secretmem_region_data(reg[2]);
	if (!tl_check(rw, RSZ, 1) || !tl_check(ro, RSZ, 2))
		return 10;
	int st = tl_run_child(write_one, ro, out, sizeof(out));
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
		return 11; /* the read-only copy is writable */
	st = tl_run_child(read_one, na, out, sizeof(out));
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
		return 12; /* the no-access copy is readable */
	if (secretmem_region_protect(reg[2], SECRETMEM_READWRITE) || !tl_check(na, RSZ, 3))
		return 13;
	memset(na, 0xee, RSZ);
	memset(rw, 0xee, RSZ);
	return 0;
}

static int child_rss(void *arg)
{
	long parent = (long)(intptr_t)arg, mine = rss_kib(small);

	printf("chunk mapping: parent %ld KiB resident, child %ld KiB\n", parent, mine);
	if (!tl_check(small, 64, 9))
		return 20;
	return mine >= 0 && mine * 4 <= parent ? 0 : 21;
}

int main(void)
{
	static char out[4096];
	static const int modes[3] = { SECRETMEM_READWRITE, SECRETMEM_READONLY, SECRETMEM_NOACCESS };
	static const char *const want[3] = { "rw-", "r--", "---" };

	tl_need_secretmem();
	for (int i = 0; i < 3; i++) {
		reg[i] = secretmem_region_create(RSZ, 0);
		TL_CHECK(reg[i], "region_create: %s", strerror(errno));
		tl_fill(secretmem_region_data(reg[i]), RSZ, (uint64_t)i + 1);
		TL_CHECK(secretmem_region_protect(reg[i], modes[i]) == 0, "protect");
	}
	int st = tl_run_child(child_regions, NULL, out, sizeof(out));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child with copies of the regions: %s\n%s", tl_status_str(st),
		 out);
	for (int i = 0; i < 3; i++) {
		char p[4];
		TL_CHECK(perms(secretmem_region_data(reg[i]), p) == 0 && strcmp(p, want[i]) == 0,
			 "region %d: mode in the parent is %s after the fork, want %s", i, p, want[i]);
		TL_CHECK(secretmem_region_protect(reg[i], SECRETMEM_READWRITE) == 0, "protect");
		TL_CHECK(tl_check(secretmem_region_data(reg[i]), RSZ, (uint64_t)i + 1), "region %d changed", i);
		TL_CHECK(secretmem_region_destroy(reg[i]) == 0, "destroy");
	}
	printf("ok: regions copied with their modes\n");

	/* a chunk faulted in far beyond its live blocks: fill a few chunks,
	 * keep only the lowest block of the biggest one */
	enum { N = 8000 };
	static unsigned char *p[N];
	long best = -1;
	int keep = 0;
	for (int i = 0; i < N; i++) {
		p[i] = secretmem_malloc(256);
		TL_CHECK(p[i], "malloc: %s", strerror(errno));
	}
	for (int i = 0; i < N; i += 50) {
		long r = rss_kib(p[i]);
		if (r > best) {
			best = r;
			keep = i;
		}
	}
	char line[512];
	unsigned long lo, hi;
	TL_CHECK(tl_maps_line(p[keep], line, sizeof(line)) == 0 && sscanf(line, "%lx-%lx", &lo, &hi) == 2, "maps");
	for (int i = 0; i < N; i++)
		if ((uintptr_t)p[i] >= lo && (uintptr_t)p[i] < hi && p[i] < p[keep])
			keep = i;
	small = p[keep];
	tl_fill(small, 64, 9);
	for (int i = 0; i < N; i++)
		if (i != keep)
			secretmem_free(p[i]);
	long parent = rss_kib(small);
	TL_CHECK(parent >= 256, "the chunk has only %ld KiB resident; the test needs a bigger one", parent);
	st = tl_run_child(child_rss, (void *)(intptr_t)parent, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's copy of a mostly empty chunk: %s\n%s",
		 tl_status_str(st), out);
	secretmem_free(small);
	return TL_PASS;
}
