/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_cache_room - at the memory-lock limit, the free blocks a thread
 * keeps in its cache are not lost to the other sizes (secretmem_malloc(3),
 * "Memory-lock limit").
 *
 * As uid 65534 (no CAP_IPC_LOCK) under RLIMIT_MEMLOCK 512 KiB: six bursts of
 * 1,000 blocks of 32 bytes allocated, then freed (the class's bin grows to
 * 1,024 slots, 32 KiB); then 32-byte blocks until the limit refuses one,
 * all freed (the bin keeps 1,024 of them); then 64-byte blocks until the
 * limit refuses one: they must cover the bytes the 32-byte blocks had but
 * for 10 KiB (the bin shrinks back to 64 slots, 2 KiB, and each class keeps
 * an empty slab and a partial one).  Without the shrink at the limit the
 * 1,024 cached slots make it 36 KiB.
 * Run as an ordinary user, the test keeps its uid and lowers the soft limit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define LIMIT (512u << 10)
#define MAXN 40000

static int fill(void **v, size_t size)
{
	int n = 0;

	while (n < MAXN) {
		errno = 0;
		v[n] = secretmem_malloc(size);
		if (!v[n])
			break;
		memset(v[n], 0x5a, size);
		n++;
	}
	if (n == MAXN || errno != ENOMEM) {
		printf("%zu-byte blocks: %d made, then errno %s (want ENOMEM before %d)\n", size, n, strerror(errno),
		       MAXN);
		exit(1);
	}
	return n;
}

static int child(void)
{
	void **v = calloc(MAXN, sizeof(*v));

	if (!v)
		return 2;
	for (int r = 0; r < 6; r++) {
		for (int i = 0; i < 1000; i++) {
			v[i] = secretmem_malloc(32);
			TL_CHECK(v[i], "burst %d: %s", r, strerror(errno));
		}
		for (int i = 0; i < 1000; i++)
			secretmem_free(v[i]);
	}
	int n32 = fill(v, 32);
	for (int i = 0; i < n32; i++)
		secretmem_free(v[i]);
	int n64 = fill(v, 64);
	printf("under a %u KiB limit: %d blocks of 32 bytes (%d KiB), freed, then %d of 64 bytes (%d KiB)\n",
	       LIMIT >> 10, n32, n32 / 32, n64, n64 / 16);
	for (int i = 0; i < n64; i++)
		secretmem_free(v[i]);
	TL_CHECK(n64 * 64 + 10240 >= n32 * 32,
		 "the 64-byte blocks got %d bytes less than the 32-byte ones had (the cached slots kept them)",
		 n32 * 32 - n64 * 64);
	free(v);
	return 0;
}

int main(int argc, char **argv)
{
	static char out[8192], self[4096];

	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
	tl_need_secretmem();
	if (tl_under_valgrind())
		tl_skip("valgrind: no secret memory to limit");
	if (sysconf(_SC_PAGESIZE) != 4096)
		tl_skip("written for 4 KiB pages (its allowance is in pages of slabs)");
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	TL_CHECK(len > 0, "readlink /proc/self/exe: %s", strerror(errno));
	self[len] = 0;
	int st = tl_run_self_user(self, "child", NULL, LIMIT, out, sizeof(out));
	fputs(out, stdout);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		tl_skip("the user cannot run this test");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the limited child: %s", tl_status_str(st));
	return TL_PASS;
}
