/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * maps.c - this process's mappings, line by line from /proc/self/maps, with
 * raw system calls into the caller's buffer: no malloc, no stdio, no lock,
 * so it can run with the library's locks held, in a fork child that did not
 * run the fork handlers, and under a thread that is inside the allocator.
 * Used by fork.c (a raw child's inherited window) and adopt.c (which memory
 * a locked range is).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

static uintptr_t hex(const char **s)
{
	uintptr_t v = 0;
	const char *p = *s;

	for (;; p++) {
		char c = *p;
		if (c >= '0' && c <= '9')
			v = v * 16 + (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uintptr_t)(c - 'a' + 10);
		else
			break;
	}
	*s = p;
	return v;
}

static const char *skip_field(const char *p)
{
	while (*p && *p != ' ')
		p++;
	while (*p == ' ')
		p++;
	return p;
}

/* "lo-hi rwxp offset dev inode   path" */
static int parse(const char *p, struct sm_mapline *m)
{
	m->lo = hex(&p);
	if (*p++ != '-')
		return -1;
	m->hi = hex(&p);
	if (*p++ != ' ' || strlen(p) < 5)
		return -1;
	m->prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) | (p[2] == 'x' ? PROT_EXEC : 0);
	m->shared = p[3] == 's';
	p = skip_field(p); /* perms */
	p = skip_field(p); /* offset */
	m->nodev = strncmp(p, "00:", 3) == 0; /* a pseudo file system */
	p = skip_field(p); /* device */
	m->inode = 0;
	while (*p >= '0' && *p <= '9')
		m->inode = m->inode * 10 + (unsigned long)(*p++ - '0');
	while (*p == ' ')
		p++;
	m->path = p;
	return 0;
}

int sm_maps_walk(char *buf, size_t len, int (*fn)(const struct sm_mapline *m, void *arg), void *arg)
{
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t have = 0;
	int rc = 0;

	if (fd < 0)
		return -errno;
	while (!rc) {
		long n = syscall(SYS_read, fd, buf + have, len - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = -errno;
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		char *nl, *line = buf;
		while (!rc && (nl = strchr(line, '\n')) != NULL) {
			struct sm_mapline m;
			*nl = '\0';
			if (parse(line, &m) == 0)
				rc = fn(&m, arg);
			line = nl + 1;
		}
		have = strlen(line);
		if (have == len - 1) /* a line longer than the buffer: cut */
			have = 0;
		memmove(buf, line, have);
	}
	syscall(SYS_close, fd);
	return rc;
}

int sm_mapline_secret(const struct sm_mapline *m)
{
	/* a memfd_secret file: never a path of a disk's file system */
	return m->shared && m->nodev &&
	       (strcmp(m->path, "/secretmem (deleted)") == 0 || strcmp(m->path, "/secretmem") == 0);
}
