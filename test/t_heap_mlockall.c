/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_mlockall - a program that calls mlockall(MCL_CURRENT|MCL_FUTURE)
 * (cryptsetup-style tools do), run by an ordinary user (uid 65534,
 * ulimit -l 8192), with and without the heap module.  From then on every
 * new mapping counts against the memory-lock limit at mmap time, PROT_NONE
 * reservations too.  Each run allocates 4 KiB blocks, writing each, until
 * malloc fails: under the heap module it must reach what glibc reaches
 * alone less the module's own locked footprint (FOOTPRINT), its first
 * blocks must be secret memory, and when secret memory is refused the
 * warning names the memory-lock limit.  (The allocator used to reserve a
 * 4 MiB span per chunk: refused at 3.2 MiB, with "cause: out of memory",
 * where glibc reached 5.8 MiB.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "heaprig.h"
#include "tlib.h"

#define LIMIT ((size_t)8 << 20)
#define BLOCK ((size_t)4 << 10)
/* what the module itself keeps locked under mlockall: its code, data and
 * .bss (the early arena, the radix map's first level), metadata, a radix
 * leaf, the thread cache, the room kept for fork's copy (measured: 0.64 to
 * 0.69 MiB with 4 KiB blocks) */
#define FOOTPRINT ((size_t)1 << 20)

static int child(void)
{
	size_t n = 0;
	int first = 0;

	if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
		printf("mlockall: %s\n", strerror(errno));
		return 1;
	}
	for (;;) {
		unsigned char *p = malloc(BLOCK);
		if (!p)
			break;
		memset(p, 0x5a, BLOCK);
		if (n == 0)
			first = hr_where(p);
		n++;
		if (n * BLOCK >= LIMIT)
			break;
	}
	printf("reached %zu KiB; first block: %c\n", n * BLOCK >> 10, first ? first : '-');
	return 0;
}

static size_t reached(const char *out)
{
	const char *r = strstr(out, "reached ");
	size_t kib = 0;

	TL_CHECK(r && sscanf(r, "reached %zu KiB", &kib) == 1, "no figure in the output:\n%s", out);
	return kib;
}

int main(int argc, char **argv)
{
	static char out[1 << 14];

	if (argc > 1)
		return child();
	tl_need_secretmem();
	hr_module();
	int st = hr_run_user(argv[0], "run", 0, NULL, LIMIT, out, sizeof(out));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("%s", out);
		tl_skip("an ordinary user cannot run the tests here");
	}
	printf("== plain (glibc): %s\n%s", tl_status_str(st), out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "plain run");
	size_t plain = reached(out);
	st = hr_run_user(argv[0], "run", 1, NULL, LIMIT, out, sizeof(out));
	printf("== heap module: %s\n%s", tl_status_str(st), out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "heap run");
	size_t heap = reached(out);
	TL_CHECK(strstr(out, "first block: s"), "the first block is not in secret memory");
	TL_CHECK(heap + (FOOTPRINT >> 10) >= plain, "the heap module reached %zu KiB, glibc alone %zu KiB", heap, plain);
	const char *w = strstr(out, "secret memory refused");
	TL_CHECK(!w || strstr(w, "cause: memory-lock limit"), "the refusal does not name the memory-lock limit");
	printf("heap module %zu KiB, glibc %zu KiB under mlockall and ulimit -l 8192\n", heap, plain);
	return TL_PASS;
}
