/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_protect - fork() while another thread changes a region's
 * protection.
 *
 * Under the copy policy the parent copies every secret region in fork()'s
 * prepare handler.  A thread that switches a 1 MiB region between
 * SECRETMEM_NOACCESS and SECRETMEM_READWRITE meanwhile must not make that
 * copy fault (the parent used to die of SIGSEGV inside fork()).  The child
 * gets the contents, with the protection the region had at fork time.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define SIZE (1u << 20)
#define FORKS 200

static struct secretmem_region *r;
static atomic_int stop;

static void *toggler(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (secretmem_region_protect(r, SECRETMEM_NOACCESS) ||
		    secretmem_region_protect(r, SECRETMEM_READWRITE))
			abort();
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	int bad = 0;

	tl_need_secretmem();
	r = secretmem_region_create(SIZE, 0);
	TL_CHECK(r, "region_create: %s", strerror(errno));
	tl_fill(secretmem_region_data(r), SIZE, 7);
	TL_CHECK(pthread_create(&t, NULL, toggler, NULL) == 0, "pthread_create");
	for (int i = 0; i < FORKS; i++) {
		fflush(stdout);
		pid_t pid = fork();
		TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0) {
			/* the copy has the fork-time mode: make it readable
			 * (no other thread here) and check the contents */
			if (secretmem_region_protect(r, SECRETMEM_READWRITE))
				_exit(2);
			_exit(tl_check(secretmem_region_data(r), SIZE, 7) ? 0 : 3);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0)
			TL_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			printf("fork %d: child %s\n", i, tl_status_str(st));
			bad++;
		}
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	TL_CHECK(bad == 0, "%d of %d children did not get the region's contents", bad, FORKS);
	TL_CHECK(secretmem_region_protect(r, SECRETMEM_READWRITE) == 0, "protect");
	TL_CHECK(tl_check(secretmem_region_data(r), SIZE, 7), "the parent's region changed");
	printf("%d forks while another thread toggled the protection: parent alive, every child has the copy\n",
	       FORKS);
	secretmem_region_destroy(r);
	return 0;
}
