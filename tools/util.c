/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * util.c - small helpers of the secretmem tool: /proc and /sys readers,
 * errno names, capability and seccomp queries.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"

ssize_t cli_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t used = 0;

	if (size == 0)
		return -EINVAL;
	if (fd < 0)
		return -errno;
	while (used < size - 1) {
		ssize_t n = read(fd, buf + used, size - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	while (used > 0 && (buf[used - 1] == '\n' || buf[used - 1] == ' '))
		used--;
	buf[used] = '\0';
	return (ssize_t)used;
}

static const struct {
	int err;
	const char *name;
} errno_names[] = {
	{ EPERM, "EPERM" },   { ENOENT, "ENOENT" },     { ESRCH, "ESRCH" },
	{ EINTR, "EINTR" },   { EIO, "EIO" },           { EBADF, "EBADF" },
	{ ECHILD, "ECHILD" }, { EAGAIN, "EAGAIN" },     { ENOMEM, "ENOMEM" },
	{ EACCES, "EACCES" }, { EFAULT, "EFAULT" },     { EBUSY, "EBUSY" },
	{ EEXIST, "EEXIST" }, { ENODEV, "ENODEV" },     { EINVAL, "EINVAL" },
	{ ENFILE, "ENFILE" }, { EMFILE, "EMFILE" },     { EFBIG, "EFBIG" },
	{ ENOSPC, "ENOSPC" }, { ESPIPE, "ESPIPE" },     { EROFS, "EROFS" },
	{ EPIPE, "EPIPE" },   { ERANGE, "ERANGE" },     { ENOSYS, "ENOSYS" },
	{ EOPNOTSUPP, "EOPNOTSUPP" }, { ETXTBSY, "ETXTBSY" },
	{ ENXIO, "ENXIO" },   { E2BIG, "E2BIG" },       { ENOEXEC, "ENOEXEC" },
};

const char *cli_errno_name(int err)
{
	static char buf[32];

	for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (errno_names[i].err == err)
			return errno_names[i].name;
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

const char *cli_strerror(int err)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "%s (%s)", strerror(err), cli_errno_name(err));
	return buf;
}

int cli_has_word(const char *s, const char *word)
{
	size_t wl = strlen(word);

	for (const char *p = s; (p = strstr(p, word)) != NULL; p += wl) {
		int starts = p == s || p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n';
		char end = p[wl];
		if (starts && (end == '\0' || end == ' ' || end == '\t' || end == '\n'))
			return 1;
	}
	return 0;
}

int cli_seccomp_mode(void)
{
	char buf[4096];
	const char *p;

	if (cli_read_file("/proc/self/status", buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "\nSeccomp:");
	if (!p)
		return -1;
	return (int)strtol(p + 9, NULL, 10);
}

int cli_has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (cap < 0 || cap >= 64)
		return -EINVAL;
	if (syscall(SYS_capget, &hdr, data) != 0)
		return -errno;
	return (data[cap / 32].effective >> (cap % 32)) & 1u;
}

int cli_has_cap_ipc_lock(void)
{
	return cli_has_cap(CAP_IPC_LOCK);
}

long long cli_vmlck(void)
{
	char buf[4096];
	const char *p;

	if (cli_read_file("/proc/self/status", buf, sizeof(buf)) < 0)
		return -ENOENT;
	p = strstr(buf, "\nVmLck:");
	if (!p)
		return -ENOENT;
	return strtoll(p + 7, NULL, 10) * 1024;
}

int cli_hibernation(char *state, size_t state_size)
{
	if (cli_read_file("/sys/power/state", state, state_size) < 0)
		state[0] = '\0';
	if (cli_has_word(state, "disk"))
		return CLI_HIBERNATION_AVAILABLE;
	if (access("/sys/power/disk", F_OK) == 0)
		return CLI_HIBERNATION_UNAVAILABLE;
	return CLI_HIBERNATION_UNSUPPORTED;
}

const char *cli_hibernation_name(int h)
{
	switch (h) {
	case CLI_HIBERNATION_AVAILABLE:
		return "available";
	case CLI_HIBERNATION_UNAVAILABLE:
		return "unavailable";
	default:
		return "not supported";
	}
}

int cli_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return st;
}

const char *cli_status_text(int st)
{
	static char buf[96];

	if (st == -1)
		snprintf(buf, sizeof(buf), "lost (waitpid failed)");
	else if (WIFEXITED(st))
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, sizeof(buf), "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(buf, sizeof(buf), "status 0x%x", st);
	return buf;
}
