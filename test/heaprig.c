/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

/* Copy file src to dir/name, mode 0755; 0 or -1. */
static int stage_copy(const char *src, const char *dir, const char *name)
{
	char dst[PATH_MAX], buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC), rc = -1;

	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	int outfd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (in >= 0 && outfd >= 0) {
		ssize_t n;
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(outfd, buf, (size_t)n) != n)
				break;
		rc = n == 0 ? 0 : -1;
	}
	if (in >= 0)
		close(in);
	if (outfd >= 0)
		close(outfd);
	return rc;
}

static char stage_dir[64];

static void stage_remove(void)
{
	tl_empty_dir(stage_dir);
	rmdir(stage_dir);
}

/*
 * As root, the build tree may be out of uid 65534's reach (a clone under
 * /root): the test program, the module and the command are copied once to
 * a directory of /tmp that every user can read, and run from there (the
 * command finds the module next to itself).  NULL when not needed.
 */
static const char *stage(void)
{
	char self[PATH_MAX];
	ssize_t n;

	if (geteuid() != 0)
		return NULL;
	if (stage_dir[0])
		return stage_dir;
	snprintf(stage_dir, sizeof(stage_dir), "/tmp/secretmem-user.XXXXXX");
	if (!mkdtemp(stage_dir) || chmod(stage_dir, 0755) != 0)
		TL_FAIL("mkdtemp: %s", strerror(errno));
	atexit(stage_remove);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	TL_CHECK(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	const char *cli = tl_build_path("secretmem");
	TL_CHECK(stage_copy(self, stage_dir, "test") == 0 && stage_copy(hr_module(), stage_dir, "libsecretmem-heap.so") == 0 &&
			 (access(cli, R_OK) != 0 || stage_copy(cli, stage_dir, "secretmem") == 0),
		 "copying to %s: %s", stage_dir, strerror(errno));
	return stage_dir;
}

int hr_run_user(const char *self, const char *arg, int heap, const char *const *env, size_t memlock, char *out,
		size_t outlen)
{
	const char *all[32];
	char pre[PATH_MAX + 16], sbuild[PATH_MAX + 32], sself[PATH_MAX];
	size_t n = 0;
	const char *dir = memlock ? stage() : NULL;

	if (dir) {
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s/libsecretmem-heap.so", dir);
		snprintf(sbuild, sizeof(sbuild), "SECRETMEM_BUILD=%s", dir);
		snprintf(sself, sizeof(sself), "%s/test", dir);
		all[n++] = sbuild;
		self = sself;
	} else {
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", hr_module());
	}
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

size_t hr_vmlck(void)
{
	char line[256];
	size_t kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	TL_CHECK(f, "/proc/self/status: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

void hr_set_soft_memlock(size_t bytes)
{
	struct rlimit rl;

	TL_CHECK(getrlimit(RLIMIT_MEMLOCK, &rl) == 0, "getrlimit");
	rl.rlim_cur = bytes;
	TL_CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "setrlimit(%zu): %s", bytes, strerror(errno));
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
