/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "heaprig.h"
#include "tlib.h"

const char *hr_module(void)
{
	static char path[PATH_MAX];

#ifdef TL_SANITIZED
	tl_skip("a sanitizer replaces malloc itself: the heap module cannot be tested in this build");
#endif
	if (tl_under_valgrind())
		tl_skip("valgrind replaces malloc itself");
	if (!path[0] && !realpath(tl_build_path("libsecretmem-heap.so"), path))
		tl_skip("libsecretmem-heap.so is not built");
	return path;
}

int hr_run_user(const char *self, const char *arg, int heap, const char *const *env, size_t memlock, char *out,
		size_t outlen)
{
	const char *all[32];
	char pre[PATH_MAX + 16];
	size_t n = 0;

	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", hr_module());
	if (heap)
		all[n++] = pre;
	for (size_t i = 0; env && env[i] && n < 31; i++)
		all[n++] = env[i];
	all[n] = NULL;
	if (memlock)
		return tl_run_self_user(self, arg, all, memlock, out, outlen);
	return tl_run_self(self, arg, all, out, outlen);
}

int hr_run(const char *self, const char *arg, int heap, const char *const *env, char *out, size_t outlen)
{
	return hr_run_user(self, arg, heap, env, 0, out, outlen);
}

int hr_where(const void *p)
{
	char line[4096];

	if (tl_maps_line(p, line, sizeof(line)) != 0)
		return '?';
	if (strstr(line, "/secretmem (deleted)"))
		return 's';
	/* the fallback: locked private anonymous memory, out of core dumps */
	if (!strchr(line, '/') && tl_has_vmflag(p, "lo") == 1 && tl_has_vmflag(p, "dd") == 1)
		return 'f';
	return 'o';
}

int hr_active(void)
{
	struct sm_heap_stats st;

	return hr_stats(0, &st) == 0 && st.state == SM_HEAP_ACTIVE;
}

int hr_stats(pid_t pid, struct sm_heap_stats *st)
{
	char path[64], line[4096];
	unsigned long start = 0, end;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid ? (int)pid : (int)getpid());
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/memfd:" SM_HEAP_STATS_NAME) && sscanf(line, "%lx-%lx", &start, &end) == 2) {
			found = 1;
			break;
		}
	fclose(f);
	if (!found)
		return -ENOENT;
	if (!pid) {
		memcpy(st, (const void *)start, sizeof(*st));
		return 0;
	}
	return tl_read_proc_mem(pid, (const void *)start, st, sizeof(*st));
}
