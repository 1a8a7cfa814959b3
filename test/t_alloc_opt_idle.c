/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_opt_idle - SECRETMEM_RELEASE_IDLE=1: when the last live block is
 * freed every secret mapping is released (stats regions 0, no
 * "/secretmem (deleted)" line in /proc/self/maps, so hibernation is possible
 * again); allocating afterwards works.  Without it, freeing the last block
 * keeps the pages for reuse.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include "secretmem.h"
#include "tlib.h"

/* how a secret memory mapping shows in /proc/PID/maps */
#define MAPNAME "/secretmem (deleted)"

static struct secretmem_stats get(void)
{
	struct secretmem_stats s;

	TL_CHECK(secretmem_stats(&s) == 0, "stats");
	return s;
}

static int idle_mode(void)
{
	TL_CHECK(secretmem_get_option(SECRETMEM_OPT_RELEASE_IDLE) == 1, "RELEASE_IDLE not in force");
	for (int round = 0; round < 3; round++) {
		void *p = secretmem_malloc(32), *q = secretmem_malloc(100000), *r = secretmem_malloc(3000);
		TL_CHECK(p && q && r, "round %d: malloc: %s", round, strerror(errno));
		memset(p, 1, 32);
		memset(q, 2, 100000);
		memset(r, 3, 3000);
		struct secretmem_stats s = get();
		TL_CHECK(s.regions >= 1 && s.pages_mapped > 0, "round %d: nothing mapped", round);
		TL_CHECK(tl_maps_has(MAPNAME), "round %d: no %s mapping in /proc/self/maps", round, MAPNAME);
		secretmem_free(p);
		secretmem_free(r);
		s = get();
		TL_CHECK(s.regions >= 1 && s.live_allocations == 1, "round %d: released with a block still live", round);
		TL_CHECK(((unsigned char *)q)[99999] == 2, "round %d: live block changed", round);
		secretmem_free(q);
		s = get();
		TL_CHECK(s.regions == 0 && s.pages_mapped == 0 && s.bytes_mapped == 0,
			 "round %d: after the last free: %zu regions, %zu pages mapped", round, s.regions, s.pages_mapped);
		TL_CHECK(!tl_maps_has(MAPNAME), "round %d: a %s mapping remains after the last free", round, MAPNAME);
	}
	printf("ok: RELEASE_IDLE=1: every secret mapping released at the last free (3 rounds)\n");
	return 0;
}

static int default_child(void *arg)
{
	(void)arg;
	void *p = secretmem_malloc(32);
	TL_CHECK(p, "malloc");
	secretmem_free(p);
	struct secretmem_stats s = get();
	TL_CHECK(s.regions >= 1 && s.pages_mapped > 0, "default: pages released at the last free without RELEASE_IDLE");
	return 0;
}

static int api_child(void *arg)
{
	(void)arg;
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_RELEASE_IDLE, 1) == 0, "set_option(RELEASE_IDLE, 1)");
	return idle_mode();
}

int main(int argc, char **argv)
{
	static char out[8192];

	if (argc > 1 && strcmp(argv[1], "env") == 0)
		return idle_mode();
	tl_need_secretmem();
	const char *env[] = { "SECRETMEM_RELEASE_IDLE=1", NULL };
	int st = tl_run_self(argv[0], "env", env, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SECRETMEM_RELEASE_IDLE=1: %s", tl_status_str(st));
	st = tl_run_child(api_child, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "set_option(RELEASE_IDLE, 1): %s", tl_status_str(st));
	st = tl_run_child(default_child, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "default: %s", tl_status_str(st));
	printf("ok: RELEASE_IDLE through the environment and the API; default keeps pages\n");
	return TL_PASS;
}
