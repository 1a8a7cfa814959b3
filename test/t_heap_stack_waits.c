/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_stack_waits - every wait that heap/waits.c clears before, proved
 * by a scan: test/helpers/heap_stackkey WAIT copies a random key into a
 * local array four calls deep in its main thread, then waits in that call
 * for something that never comes (the list is the helper's wait_modes[]:
 * read after each way a descriptor's "never waits" memo must be forgotten,
 * readv, recv*, accept*, the poll family, the sleeps, the condition waits,
 * pause, sigsuspend, sigwait*, wait*, pthread_*join*, sem_*wait).  Once the main
 * thread has stayed in one system call for 30 ms, and 60 ms later, a root
 * process reads the program's memory (/proc/PID/mem) and counts the copies
 * on the main thread's stack and elsewhere:
 *  - control, no module: the main stack holds the key (so the scan, and
 *    that wait's set-up, leave it there);
 *  - heap mode, as root and as uid 65534 without CAP_IPC_LOCK under
 *    `ulimit -l 8192`: no copy anywhere.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "heapscan.h"
#include "tlib.h"

static const char *const modes[] = {
	"memo_close", "memo_dup2", "memo_dup3", "memo_close_range", "memo_closefrom", "memo_setfl", "memo_fcntl64",
	"memo_fionbio", "readv", "recv", "recvfrom", "recvmsg", "recvmmsg", "accept", "accept4", "poll", "ppoll",
	"select", "pselect", "epoll_wait", "epoll_pwait", "epoll_pwait2", "nanosleep", "clock_nanosleep", "usleep",
	"sleep", "cond_wait", "cond_timedwait", "pause", "sigsuspend", "sigwait", "sigwaitinfo", "sigtimedwait",
	"waitpid", "wait", "waitid", "wait4", "pthread_join", "pthread_timedjoin_np", "pthread_clockjoin_np",
	"sem_wait", "sem_timedwait", "sem_clockwait"
};

static char helper[PATH_MAX], keyfile[PATH_MAX];

static void ms_sleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* Wait until the main thread has been in one system call for 30 ms. */
static void wait_settled(pid_t pid, const char *log, const char *label)
{
	long last = -2;
	int same = 0;

	for (int ms = 0; ms < 30000; ms += 10) {
		long nr = heap_in_syscall(pid, pid);
		same = nr >= 0 && nr == last ? same + 1 : 0;
		last = nr;
		if (same == 3)
			return;
		ms_sleep(10);
	}
	rig_cat(log);
	TL_FAIL("%s: the main thread did not settle in a wait", label);
}

/* Copies on the main stack (*stack) and elsewhere (*other). */
static void run(const struct scan_key *key, const char *mode, const char *who, int *stack, int *other)
{
	const char *dir = rig_tmpdir();
	char log[PATH_MAX], label[128];
	const char *const *env = strcmp(who, "plain") ? heap_env() : NULL;
	char arg[32];
	pid_t pid;

	snprintf(arg, sizeof(arg), "%s", mode);
	snprintf(log, sizeof(log), "%s/waits-%s-%c.log", dir, mode, who[0]);
	snprintf(label, sizeof(label), "%s (%s)", mode, who);
	if (!strcmp(who, "uid 65534")) {
		char *argv[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
				 helper, keyfile, arg, NULL };
		pid = rig_spawn_limited(argv, env, log, (size_t)8 << 20);
		for (int ms = 0; ms < 30000 && !rig_file_has(log, "ready"); ms += 10)
			ms_sleep(10);
	} else {
		char *argv[] = { helper, keyfile, arg, NULL };
		pid = rig_spawn_ready(argv, env, log);
	}
	wait_settled(pid, log, label);
	ms_sleep(60);

	struct scan_result res;
	TL_CHECK(scan_pid(key, pid, &res, label) >= 0, "%s: cannot read the program's memory", label);
	*stack = *other = 0;
	for (int i = 0; i < res.count; i++) {
		if (strstr(res.copy[i].where, "[stack]"))
			++*stack;
		else
			++*other;
	}
	scan_result_free(&res);
	if (env && (rig_file_has(log, "secretmem-heap:") || rig_secret_rss_kb(pid) <= 0)) {
		rig_cat(log);
		TL_FAIL("%s: the module complained, or the program has no secret memory", label);
	}
	rig_stop(pid);
}

int main(void)
{
	struct scan_key key;
	int n = (int)(sizeof(modes) / sizeof(modes[0])), least = INT_MAX, stack, other;

	tl_need_root("the scan reads another process's memory");
	rig_need("setpriv");
	heap_stackkey_setup("t_heap_stack_waits", &key, helper, keyfile);

	for (int i = 0; i < n; i++) {
		run(&key, modes[i], "plain", &stack, &other);
		TL_CHECK(stack > 0, "control, %s: no copy on the main stack (the wait's set-up cleared it?)", modes[i]);
		least = stack < least ? stack : least;
		const char *who[] = { "heap", "uid 65534" };
		for (int w = 0; w < 2; w++) {
			run(&key, modes[i], who[w], &stack, &other);
			TL_CHECK(stack == 0 && other == 0, "%s (%s): %d copies on the main stack, %d elsewhere", modes[i],
				 who[w], stack, other);
		}
	}
	scan_key_free(&key);
	printf("%d waits: a heap-mode program waiting in any of them keeps no key on its stack "
	       "(control: at least %d copies on the main stack in each)\n", n, least);
	return 0;
}
