/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * fatal.c - fixed messages written with raw write(2): no stdio, no malloc,
 * no cancellation point,
 * usable from any state the allocator can be in.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

static atomic_int quiet;

void sm_warnings_off(void)
{
	atomic_store(&quiet, 1);
}

int sm_warnings_are_off(void)
{
	return atomic_load_explicit(&quiet, memory_order_relaxed);
}

void sm_put(const char *s)
{
	size_t len = strlen(s);
	int saved = errno; /* a warning does not change the caller's errno */

	if (sm_warnings_are_off())
		return;
	while (len > 0) {
		/* raw: write(2) is a cancellation point, and this runs with
		 * library locks held */
		long n = syscall(SYS_write, STDERR_FILENO, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		s += n;
		len -= (size_t)n;
	}
	errno = saved;
}

void sm_fatal(const char *msg)
{
	char line[256];
	const char *prefix = "secretmem: fatal: ";
	size_t p = strlen(prefix), m = strlen(msg);

	if (p + m + 2 > sizeof(line))
		m = sizeof(line) - p - 2;
	memcpy(line, prefix, p);
	memcpy(line + p, msg, m);
	line[p + m] = '\n';
	line[p + m + 1] = '\0';
	sm_put(line); /* one write: the line is not interleaved with others */
	abort();
}

void sm_warn(const char *a, const char *b, const char *c)
{
	char line[512];
	const char *parts[4] = { "secretmem: warning: ", a, b, c };
	size_t len = 0;

	for (int i = 0; i < 4; i++) {
		if (!parts[i])
			continue;
		size_t n = strlen(parts[i]);
		if (n > sizeof(line) - 2 - len)
			n = sizeof(line) - 2 - len;
		memcpy(line + len, parts[i], n);
		len += n;
	}
	line[len++] = '\n';
	line[len] = '\0';
	sm_put(line);
}

char *sm_utoa(size_t v, char *buf)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (int i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return buf;
}
