/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_cloexec - secretmem_memfd() flags and close-on-exec.
 *
 * secretmem_memfd(O_CLOEXEC) gives an fd with FD_CLOEXEC that is gone after
 * exec; secretmem_memfd(0) gives one that survives exec.  Any other bit
 * (FD_CLOEXEC, whose value 1 the man page wrongly suggests, O_NONBLOCK,
 * high bits) is -EINVAL, and errno is left alone in every case.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define SENTINEL 4242

/* 1 if fd is open in a freshly exec'd shell, 0 if not. */
static int open_after_exec(int fd)
{
	char cmd[64];
	int st;

	snprintf(cmd, sizeof(cmd), "test -e /proc/self/fd/%d", fd);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));
	TL_CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 1), "sh -c '%s': %s", cmd,
		 tl_status_str(st));
	return WEXITSTATUS(st) == 0;
}

int main(void)
{
	static const unsigned int bad[] = {
		1 /* FD_CLOEXEC */, O_NONBLOCK, O_RDWR, O_CLOEXEC | 1, O_CLOEXEC | O_NONBLOCK, 0x80000000u, ~0u,
	};

	tl_need_secretmem();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = SENTINEL;
		int fd = secretmem_memfd(bad[i]);
		TL_CHECK(fd == -EINVAL, "secretmem_memfd(%#x) = %d, want -EINVAL", bad[i], fd);
		TL_CHECK(errno == SENTINEL, "secretmem_memfd(%#x) changed errno to %d", bad[i], errno);
	}

	errno = SENTINEL;
	int fd_ce = secretmem_memfd(O_CLOEXEC);
	TL_CHECK(fd_ce >= 0, "secretmem_memfd(O_CLOEXEC): %s", strerror(-fd_ce));
	TL_CHECK(errno == SENTINEL, "secretmem_memfd(O_CLOEXEC) changed errno to %d", errno);
	int fd_keep = secretmem_memfd(0);
	TL_CHECK(fd_keep >= 0, "secretmem_memfd(0): %s", strerror(-fd_keep));
	TL_CHECK(errno == SENTINEL, "secretmem_memfd(0) changed errno to %d", errno);

	int fl = fcntl(fd_ce, F_GETFD);
	TL_CHECK(fl >= 0 && (fl & FD_CLOEXEC), "O_CLOEXEC fd flags %#x", fl);
	fl = fcntl(fd_keep, F_GETFD);
	TL_CHECK(fl >= 0 && !(fl & FD_CLOEXEC), "flags-0 fd has FD_CLOEXEC (%#x)", fl);

	/* the shell sees its own fds at /proc/self/fd */
	TL_CHECK(open_after_exec(fd_keep) == 1, "fd %d of secretmem_memfd(0) did not survive exec", fd_keep);
	TL_CHECK(open_after_exec(fd_ce) == 0, "fd %d of secretmem_memfd(O_CLOEXEC) survived exec", fd_ce);

	close(fd_ce);
	close(fd_keep);
	printf("O_CLOEXEC fd closes on exec, flags-0 fd survives, other bits EINVAL\n");
	return TL_PASS;
}
