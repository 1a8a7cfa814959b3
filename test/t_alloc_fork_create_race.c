/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_create_race - a fork while another thread creates secret
 * memory gives the child neither the new secret file's descriptor nor its
 * mapping (secretmem(7): every mapping is MADV_DONTFORK from its creation;
 * secretmem_region_create(3): no descriptor stays open).
 *
 * A thread creates and destroys secret memory all the time - 4 KiB regions,
 * or 1.5 MiB blocks (a region each, given back by the trim after each) -
 * writing a marker into it; the main thread forks 400 times.
 * Each child looks through /proc/self/fd for a secret memory file and, under
 * the drop policy (where it has no secret memory at all), through
 * /proc/self/maps for a secret mapping.  Before the fix, the file's
 * descriptor was open from memfd_secret to its close outside any lock the
 * fork handlers take: 10-15 % of the children held one and could map and
 * read the parent's live secret.  A copy child's secretmem_stats figures
 * add up (secretmem_stats(3)).  The same for the support probe's own
 * file: a thread's first secretmem_stats() while the main thread forks,
 * 100 fresh processes; and a child of a raw fork(2) system call, whose
 * first secretmem_supported must not wait for the lock of a thread it does
 * not have (100 children).  Run as root and as an ordinary user (uid 65534,
 * 8 MiB memory-lock limit).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define FORKS 400

static atomic_int stop;
static int use_blocks;

static void *creator(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (use_blocks) {
			char *b = secretmem_malloc(3u << 19);
			if (b) {
				strcpy(b, "PARENT-SECRET");
				secretmem_free(b);
			}
			secretmem_trim();
		} else {
			struct secretmem_region *r = secretmem_region_create(4096, 0);
			if (r) {
				strcpy(secretmem_region_data(r), "PARENT-SECRET");
				secretmem_region_destroy(r);
			}
		}
	}
	return NULL;
}

/* The wait status of child pid. */
static int reap(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));
	return st;
}

/* Descriptors of secret memory files this process holds. */
static int secret_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char path[300], target[256];
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		ssize_t k = readlink(path, target, sizeof(target) - 1);
		if (k > 0) {
			target[k] = '\0';
			if (strstr(target, "secretmem"))
				n++;
		}
	}
	closedir(d);
	return n;
}

/* The probe case: a thread's first secretmem_stats() probes (one secret
 * file made and closed) while the main thread forks until it is done.  1
 * if a child held a secret file. */
static atomic_int probe_go, probe_done;

static void *first_stats(void *arg)
{
	struct secretmem_stats st;

	(void)arg;
	while (!atomic_load(&probe_go))
		;
	secretmem_stats(&st);
	atomic_store(&probe_done, 1);
	return NULL;
}

static int probe_round(void)
{
	pthread_t t;
	int held = 0;
	void *k = secretmem_malloc(32); /* handlers installed, no probe yet */

	if (!k || pthread_create(&t, NULL, first_stats, NULL))
		TL_FAIL("set-up: %s", strerror(errno));
	atomic_store(&probe_go, 1);
	while (!atomic_load(&probe_done)) {
		pid_t pid = fork();
		if (pid < 0)
			TL_FAIL("fork: %s", strerror(errno));
		if (pid == 0)
			tl_child_exit(secret_fds() != 0 || tl_maps_has("secretmem"));
		int st = reap((pid_t)pid);
		held |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	pthread_join(t, NULL);
	secretmem_free(k);
	return held;
}

/* A raw fork (the system call: no handler runs) while the thread creates
 * regions: the child's first secretmem_supported probes, and must not wait
 * for the new-file lock a thread it does not have held.  1 if a child
 * hung (alarm) or failed. */
static int raw_case(void)
{
	pthread_t t;
	int bad = 0;

	use_blocks = 0;
	if (pthread_create(&t, NULL, creator, NULL))
		TL_FAIL("pthread_create");
	usleep(10000); /* the thread at work */
	int made = 0;
	for (int i = 0; i < 100 && bad < 3; i++, made++) { /* a hang costs the alarm's 5 s */
		long pid = syscall(SYS_fork);
		if (pid < 0)
			TL_FAIL("fork: %s", strerror(errno));
		if (pid == 0) {
			alarm(5);
			int rc = secretmem_supported();
			_exit(rc == 0 ? 0 : 2);
		}
		int st = reap((pid_t)pid);
		bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("raw fork, first secretmem_supported in the child: %d children, %d hung or failed\n", made, bad);
	return bad != 0;
}

/* Each round a fresh process (the probe runs once per process). */
static int probe_case(const char *self)
{
	int rounds = 100, bad = 0;

	for (int i = 0; i < rounds; i++) {
		pid_t pid = fork();
		if (pid < 0)
			TL_FAIL("fork: %s", strerror(errno));
		if (pid == 0) {
			execl(self, self, "probe-round", (char *)NULL);
			_exit(127);
		}
		int st = reap((pid_t)pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) > 1)
			TL_FAIL("round %d ended with %s", i, tl_status_str(st));
		bad += WEXITSTATUS(st);
	}
	printf("first stats (the probe), drop: %d rounds, a child held a secret file in %d\n", rounds, bad);
	return bad != 0;
}

/* One case: blocks or regions, under the policy in SECRETMEM_FORK. */
static int run_case(int blocks, int drop)
{
	pthread_t t;
	int fd_children = 0, map_children = 0, sum_children = 0;

	use_blocks = blocks;
	atomic_store(&stop, 0);
	if (secret_fds() != 0)
		TL_FAIL("a secret memory descriptor open before the test");
	if (pthread_create(&t, NULL, creator, NULL))
		TL_FAIL("pthread_create");
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		if (pid < 0)
			TL_FAIL("fork: %s", strerror(errno));
		if (pid == 0) {
			int rc = 0;
			if (secret_fds() != 0)
				rc |= 1;
			if (drop && tl_maps_has("secretmem"))
				rc |= 2;
			/* secretmem_stats(3): the sum holds in a copy child */
			struct secretmem_stats st;
			if (!drop && (secretmem_stats(&st) ||
				      st.secret_bytes + st.fallback_bytes != st.bytes_mapped + st.api_region_bytes))
				rc |= 4;
			tl_child_exit(rc);
		}
		int st = reap((pid_t)pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) > 7)
			TL_FAIL("child %d ended with %s", i, tl_status_str(st));
		fd_children += WEXITSTATUS(st) & 1;
		map_children += (WEXITSTATUS(st) & 2) != 0;
		sum_children += (WEXITSTATUS(st) & 4) != 0;
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("%s, %s: %d forks, %d children held a secret memory file, %d a secret mapping, %d had figures "
	       "that do not add up\n",
	       blocks ? "1.5 MiB blocks" : "4 KiB regions", drop ? "drop" : "copy", FORKS, fd_children, map_children,
	       sum_children);
	return fd_children || map_children || sum_children;
}

int main(int argc, char **argv)
{
#if defined(__SANITIZE_THREAD__)
	tl_skip("ThreadSanitizer: thousands of forks of a threaded process run past the test's time, and it does "
		"not know a child of a raw fork; the normal and AddressSanitizer runs cover it");
#endif
	/* before any probe of this process: the child's must be its first */
	if (argc > 1 && strcmp(argv[1], "raw") == 0)
		return raw_case();
	tl_need_secretmem();
	if (argc > 1 && strcmp(argv[1], "probe-round") == 0)
		return probe_round();
	if (argc > 1 && strcmp(argv[1], "probe") == 0)
		return probe_case(argv[0]);
	if (argc > 1) { /* one case, in this process: "blocks" or "regions" */
		const char *p = getenv("SECRETMEM_FORK");
		return run_case(strcmp(argv[1], "blocks") == 0, p && strcmp(p, "drop") == 0) ? 1 : 0;
	}
	static const char *const drop[] = { "SECRETMEM_FORK=drop", NULL };
	static const char *const copy[] = { NULL };
	static const struct {
		const char *what;
		const char *const *env;
		int user;
	} cases[] = {
		{ "regions", drop, 0 }, { "regions", copy, 0 }, { "blocks", copy, 0 }, { "probe", drop, 0 },
		{ "raw", copy, 0 }, { "regions", drop, 1 }, { "blocks", drop, 1 }, { "probe", drop, 1 },
	};
	char out[4096];
	int failed = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int st = cases[i].user ? tl_run_self_user(argv[0], cases[i].what, cases[i].env, 8u << 20, out, sizeof(out))
				       : tl_run_self(argv[0], cases[i].what, cases[i].env, out, sizeof(out));
		printf("%s%s", cases[i].user ? "(uid 65534) " : "", out);
		if (cases[i].user && WIFEXITED(st) && WEXITSTATUS(st) == 77)
			continue;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			printf("  -> failed: %s\n", tl_status_str(st));
			failed = 1;
		}
	}
	return failed;
}
