/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_stack_calls - the calls that heap mode interposes to clear dead
 * stack frames before a wait (heap/stackclear.c) keep their meaning, and
 * no live frame is ever cleared: test/helpers/heap_waits (select's and
 * pselect's sets, poll, ppoll, epoll (epoll_pwait2's timespec), read,
 * readv and recv on ready, empty and non-blocking descriptors, MSG_WAITALL,
 * MSG_PEEK, recvmmsg, accept, the sleeps, condition waits, semaphores
 * (sem_timedwait checks tv_nsec first, sem_clockwait the clock too), the
 * timed joins (an ended thread is joined whatever the time), a
 * wait in a signal handler on a signal stack that is an array on the
 * thread's own stack, a wait in a handler on the thread's stack, in a
 * coroutine (makecontext), on a 16 KiB thread stack and on a stack the
 * program gave, pthread_cancel of a thread waiting in read; bad time,
 * remaining-time and waitid info pointers get EFAULT, sigtimedwait's
 * EINVAL leaves a pending signal, a sleep past the kernel's range, a
 * cancellation pending at sem_wait and sem_timedwait).
 * Run without the module (the checks are right), under it as root, and
 * under it as uid 65534 without CAP_IPC_LOCK under `ulimit -l 8192`.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heapscan.h"
#include "tlib.h"

static char helper[PATH_MAX];

static void run(const char *mode)
{
	char log[PATH_MAX];
	int heap = strcmp(mode, "plain") != 0, st;
	pid_t pid;

	snprintf(log, sizeof(log), "%s/waits-%c%d.log", rig_tmpdir(), mode[0], (int)strlen(mode));
	if (strstr(mode, "65534")) {
		char *argv[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
				 helper, NULL };
		pid = rig_spawn_limited(argv, heap_env(), log, (size_t)8 << 20);
	} else {
		char *argv[] = { helper, NULL };
		pid = rig_spawn(argv, heap ? heap_env() : NULL, log, rig_tmpdir(), 0);
	}
	TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	rig_cat(log);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && rig_file_has(log, "0 failures"),
		 "%s: heap_waits failed (status 0x%x)", mode, st);
	TL_CHECK(!heap || !rig_file_has(log, "secretmem-heap:"), "%s: the module complained", mode);
}

int main(void)
{
	if (!realpath(tl_build_path("test/helpers/heap_waits"), helper))
		tl_skip("test/helpers/heap_waits is not built");
	run("plain");
	heap_need_module("t_heap_stack_calls");
	run("heap");
	if (geteuid() == 0) {
		rig_need("setpriv");
		run("heap, uid 65534");
	}
	printf("the waits keep their meaning under heap mode's stack clearing, and live frames stay\n");
	return 0;
}
