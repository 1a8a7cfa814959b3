/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_realloc_room - secretmem_realloc(3)'s room to grow: a block that
 * moves to grow gets the usable size of twice the new size (the class
 * holding it, whole pages above 16 KiB, 1 MiB from 512 KiB, none above),
 * all of the room zero, counted in the statistics; a growth within the
 * usable size keeps the pointer and the contents; a buffer growing by
 * doubling from 16 B to 64 KiB moves at every second step only (6 of 12);
 * and at the memory-lock limit, where the room cannot be had, the block
 * gets exactly its new size and the call succeeds (a child without
 * CAP_IPC_LOCK), while a growth that cannot be had at all fails with
 * ENOMEM and leaves the block alone; a refused room prints no hint and
 * records no failure.  A small block's room stays small (8 KiB to 16 KiB
 * in 1,000-byte steps: one move).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static const size_t classes[] = { 16,   20,   24,   28,   32,   40,   48,   56,    64,    80,    96,
				  112,  128,  160,  192,  224,  256,  320,  384,   448,   512,   640,
				  768,  896,  1024, 1280, 1536, 1792, 2048, 2560,  3072,  3584,  4096,
				  5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384 };

/* The documented usable size after a move that grows a block to n. */
static int room_ok(size_t n, size_t u)
{
	size_t want = 2 * ((n + 15) & ~(size_t)15);

	if (n >= MIB)
		return u >= n && u < n + 16;
	if (want >= MIB)
		return u == MIB;
	if (want <= 16 * KIB) {
		for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
			if (classes[i] >= want)
				return u == classes[i];
		return 0;
	}
	if (n <= 16 * KIB)
		return u == 16 * KIB; /* a small block stays small */
	size_t pages = (want + 4095) / 4096 * 4096;
	return u % 4096 == 0 && u >= pages && u <= pages + pages / 4;
}

static void rules(void)
{
	static const size_t sizes[] = { 1, 17, 100, 1000, 5000, 8192, 9000, 16384, 20000, 40000, 100000, 300000,
					600000, MIB, 2 * MIB };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], from = n / 2 > 0 ? n / 2 : 1;
		unsigned char *p = secretmem_malloc(from);
		TL_CHECK(p, "malloc(%zu): %s", from, strerror(errno));
		size_t had = secretmem_usable_size(p);
		if (had >= n) { /* n = 1: already big enough */
			secretmem_free(p);
			continue;
		}
		tl_fill(p, had, n);
		unsigned char *q = secretmem_realloc(p, n);
		TL_CHECK(q, "realloc(%zu -> %zu): %s", from, n, strerror(errno));
		size_t u = secretmem_usable_size(q);
		TL_CHECK(room_ok(n, u), "realloc(%zu -> %zu): usable %zu, not the documented room", from, n, u);
		TL_CHECK(tl_check(q, had, n), "realloc(%zu -> %zu) lost the contents", from, n);
		for (size_t j = had; j < u; j++)
			TL_CHECK(q[j] == 0, "realloc(%zu -> %zu): room not zero at %zu", from, n, j);
		struct secretmem_stats st;
		TL_CHECK(secretmem_stats(&st) == 0 && st.live_allocations == 1 && st.bytes_in_use == u,
			 "stats after realloc to %zu: %zu live, %zu bytes in use, usable %zu", n, st.live_allocations,
			 st.bytes_in_use, u);
		/* the room is the caller's: growth within it stays, contents kept */
		memset(q + had, 0x5c, u - had);
		unsigned char *r = secretmem_realloc(q, u);
		TL_CHECK(r == q, "realloc(%zu) within the room moved %p -> %p", u, (void *)q, (void *)r);
		/* back to at least half of it: stays, the rest given up is zeroed */
		size_t m = (u + (u > 16 * KIB && n <= 16 * KIB ? 16 * KIB + 1 : n)) / 2;
		r = secretmem_realloc(q, m);
		TL_CHECK(r == q && tl_check(q, had, n) && q[m - 1] == 0x5c && (m == u || (q[m] == 0 && q[u - 1] == 0)),
			 "realloc(%zu) within the room: %p -> %p", m, (void *)q, (void *)r);
		printf("realloc(%zu -> %zu): usable %zu\n", from, n, u);
		secretmem_free(q);
	}
	printf("ok: room to grow as documented, zero, counted, growth within it in place\n");
}

static void doubling(void)
{
	size_t n = 16;
	unsigned char *p = secretmem_malloc(n);
	int moves = 0, steps = 0;

	TL_CHECK(p, "malloc: %s", strerror(errno));
	memset(p, 1, n);
	for (; n < 64 * KIB; n *= 2, steps++) {
		unsigned char *q = secretmem_realloc(p, 2 * n);
		TL_CHECK(q, "realloc(%zu): %s", 2 * n, strerror(errno));
		TL_CHECK(q[0] == 1 && q[n - 1] == (n == 16 ? 1 : (unsigned char)(n / 2 | 1)), "realloc(%zu) lost the contents", 2 * n);
		moves += q != p;
		memset(q + n, (int)(n | 1), n);
		p = q;
	}
	secretmem_free(p);
	printf("doubling 16 B -> 64 KiB: %d moves in %d steps\n", moves, steps);
	TL_CHECK(moves == steps / 2, "%d moves in %d steps (every second step should stay)", moves, steps);
}

/* Growing from 8 KiB to 16 KiB in 1,000-byte steps: one move (to the 16 KiB
 * class), then in place: room in a run would be lost below 16 KiB. */
static void small_steps(void)
{
	unsigned char *p = secretmem_malloc(8192);
	int moves = 0, steps = 0;

	TL_CHECK(p, "malloc: %s", strerror(errno));
	tl_fill(p, 8192, 5);
	for (size_t n = 9000; n <= 16 * KIB; n = n + 1000 < 16 * KIB ? n + 1000 : n == 16 * KIB ? n + 1 : 16 * KIB) {
		unsigned char *q = secretmem_realloc(p, n);
		TL_CHECK(q && tl_check(q, 8192, 5), "realloc(%zu): %s", n, q ? "lost the contents" : strerror(errno));
		moves += q != p;
		steps++;
		p = q;
	}
	TL_CHECK(secretmem_usable_size(p) == 16 * KIB, "usable %zu after growing to 16 KiB", secretmem_usable_size(p));
	secretmem_free(p);
	printf("8 KiB -> 16 KiB in 1,000-byte steps: %d moves in %d steps\n", moves, steps);
	TL_CHECK(moves == 1, "%d moves in %d steps between 8 and 16 KiB (the room should hold them)", moves, steps);
}

/* At the memory-lock limit: a run of 8 pages can be had, one of 16 not. */
static int limited(void *arg)
{
	(void)arg;
	if (tl_drop_cap_ipc_lock() || tl_set_memlock(512 * KIB)) {
		printf("cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK\n");
		return 2;
	}
	unsigned char *s = secretmem_malloc(16000), *blocks[4096];
	int n = 0;
	TL_CHECK(s, "malloc(16000): %s", strerror(errno));
	tl_fill(s, 16000, 3);
	while (n < 4096 && (blocks[n] = secretmem_malloc(32 * KIB)) != NULL)
		memset(blocks[n++], 0x33, 32 * KIB);
	TL_CHECK(n > 2 && n < 4096 && errno == ENOMEM, "%d blocks of 32 KiB, then errno %d", n, errno);
	/* one run of 8 pages between guard pages comes free */
	secretmem_free(blocks[n / 2]);
	unsigned char *q = secretmem_realloc(s, 32 * KIB);
	TL_CHECK(q, "realloc(16000 -> 32 KiB) at the limit: %s (no fallback to the size asked for)", strerror(errno));
	size_t u = secretmem_usable_size(q);
	TL_CHECK(u == 32 * KIB, "realloc at the limit: usable %zu, not 32 KiB", u);
	TL_CHECK(tl_check(q, 16000, 3), "realloc at the limit lost the contents");
	/* nothing for 64 KiB at all: ENOMEM, the block untouched */
	errno = 0;
	unsigned char *r = secretmem_realloc(q, 64 * KIB);
	TL_CHECK(!r && errno == ENOMEM, "realloc(64 KiB) with no memory: %p errno %d", (void *)r, errno);
	TL_CHECK(secretmem_owns(q) && tl_check(q, 16000, 3), "a failed realloc changed the block");
	printf("at the limit: %d blocks of 32 KiB; realloc to 32 KiB got usable %zu, to 64 KiB ENOMEM\n", n, u);
	return 0;
}

/* Under a limit that holds a 300,000-byte block but not its room: the
 * realloc succeeds without a hint or a recorded failure; the hint is still
 * there for a real failure afterwards. */
static int quiet_room(void *arg)
{
	(void)arg;
	if (tl_drop_cap_ipc_lock() || tl_set_memlock(512 * KIB)) {
		printf("cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK\n");
		return 2;
	}
	unsigned char *s = secretmem_malloc(16000);
	TL_CHECK(s, "malloc(16000): %s", strerror(errno));
	tl_fill(s, 16000, 4);
	unsigned char *q = secretmem_realloc(s, 300000);
	TL_CHECK(q && tl_check(q, 16000, 4), "realloc(16000 -> 300000): %s", q ? "lost the contents" : strerror(errno));
	size_t u = secretmem_usable_size(q);
	TL_CHECK(u == 300000, "realloc under 512 KiB: usable %zu (the room fitted?)", u);
	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	TL_CHECK(st.last_failure == SECRETMEM_FAILURE_NONE, "a successful realloc recorded failure %zu (%zu bytes)",
		 st.last_failure, st.last_failure_bytes);
	fflush(stdout);
	fprintf(stderr, "-- a real failure now --\n");
	errno = 0;
	void *big = secretmem_malloc(MIB);
	TL_CHECK(!big && errno == ENOMEM, "malloc(1 MiB) under 512 KiB: %p errno %d", big, errno);
	return 0;
}

int main(void)
{
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	if (sysconf(_SC_PAGESIZE) != 4096) {
		printf("skip: written for 4 KiB pages\n");
		return TL_SKIP;
	}
	/* first, so that the child starts with no chunk of this process */
	tl_need_root("drops CAP_IPC_LOCK in a child");
	tl_need_secretmem();
	char out[4096];
	int st = tl_run_child(limited, NULL, out, sizeof(out));
	fputs(out, stdout);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
		tl_skip("cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK here");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "at the memory-lock limit: %s", tl_status_str(st));
	printf("ok: at the memory-lock limit the block gets the size asked for\n");
	st = tl_run_child(quiet_room, NULL, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "room refused at the limit: %s", tl_status_str(st));
	const char *real = strstr(out, "-- a real failure now --");
	const char *hint = strstr(out, "memory-lock limit refused");
	TL_CHECK(real && hint && hint > real, "the hint %s", !hint ? "never came" : "came for the refused room");
	printf("ok: a refused room prints nothing and records nothing; a real failure still gets the hint\n");

	rules();
	doubling();
	small_steps();
	return TL_PASS;
}
