/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * exec.c - `secretmem exec [--mode M] [--] PROGRAM [ARGS...]`: run a program
 * with libsecretmem's preload module, so that OpenSSL keeps its keys in
 * secret memory (see secretmem-preload(7)).
 *
 * The module is looked for next to the secretmem binary (the build tree:
 * build/secretmem and build/libsecretmem-preload.so), then in
 * SECRETMEM_PKGLIBDIR (the installed layout, $(LIBDIR)/secretmem).  It is
 * put in front of LD_PRELOAD, SECRETMEM_OPENSSL is set to the mode, and the
 * program replaces this process (execvp: PATH search, same pid, same fds).
 * Exit status when the program cannot be run: 64 usage, 126 found but not
 * executable, 127 program or module not found.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

#ifndef SECRETMEM_PKGLIBDIR
#define SECRETMEM_PKGLIBDIR "/usr/local/lib/secretmem"
#endif

#define PRELOAD_NAME "libsecretmem-preload.so"
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND 127

static void exec_usage(FILE *out)
{
	fputs("usage: secretmem exec [--mode secure|all|off] [--] PROGRAM [ARGS...]\n"
	      "Run PROGRAM with the preload module: OpenSSL's secure heap (mode secure,\n"
	      "the default) or all of OpenSSL's memory (mode all) in secret memory.\n",
	      out);
}

/* dir/PRELOAD_NAME into out if it is a readable file; 0 or -1. */
static int try_dir(const char *dir, char *out, size_t outlen)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, PRELOAD_NAME) >= sizeof(path))
		return -1;
	if (access(path, R_OK) != 0 || !realpath(path, out))
		return -1;
	(void)outlen;
	return 0;
}

static int find_preload(char *out, size_t outlen, char *self_dir, size_t dirlen)
{
	ssize_t n = readlink("/proc/self/exe", self_dir, dirlen - 1);

	if (n > 0) {
		self_dir[n] = '\0';
		char *slash = strrchr(self_dir, '/');
		if (slash)
			*slash = '\0';
		if (try_dir(self_dir, out, outlen) == 0)
			return 0;
	} else {
		snprintf(self_dir, dirlen, "(unknown: /proc/self/exe unreadable)");
	}
	return try_dir(SECRETMEM_PKGLIBDIR, out, outlen);
}

/* 1 if the colon/space separated list contains item. */
static int list_has(const char *list, const char *item)
{
	size_t len = strlen(item);

	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ": ");

		if (l == len && strncmp(p, item, len) == 0)
			return 1;
		p += l;
		while (*p == ':' || *p == ' ')
			p++;
	}
	return 0;
}

int cmd_exec(int argc, char **argv)
{
	const char *mode = "secure";
	char preload[PATH_MAX], self_dir[PATH_MAX];
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			exec_usage(stdout);
			return CLI_EXIT_OK;
		}
		if (strcmp(a, "--mode") == 0 || strcmp(a, "-m") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "secretmem: exec: %s needs a value\n", a);
				exec_usage(stderr);
				return CLI_EXIT_USAGE;
			}
			mode = argv[++i];
			continue;
		}
		if (strncmp(a, "--mode=", 7) == 0) {
			mode = a + 7;
			continue;
		}
		if (a[0] == '-') {
			fprintf(stderr, "secretmem: exec: unknown option '%s'\n", a);
			exec_usage(stderr);
			return CLI_EXIT_USAGE;
		}
		break; /* the program */
	}
	if (strcmp(mode, "secure") != 0 && strcmp(mode, "all") != 0 && strcmp(mode, "off") != 0) {
		fprintf(stderr, "secretmem: exec: invalid mode '%s' (secure, all or off)\n", mode);
		return CLI_EXIT_USAGE;
	}
	if (i >= argc) {
		fputs("secretmem: exec: no program given\n", stderr);
		exec_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (find_preload(preload, sizeof(preload), self_dir, sizeof(self_dir)) != 0) {
		fprintf(stderr, "secretmem: exec: %s not found in %s nor in %s\n", PRELOAD_NAME,
			self_dir, SECRETMEM_PKGLIBDIR);
		return EXIT_NOT_FOUND;
	}

	const char *old = getenv("LD_PRELOAD");
	if (old && *old && !list_has(old, preload)) {
		size_t len = strlen(preload) + 1 + strlen(old) + 1;
		char *both = malloc(len);

		if (!both) {
			fputs("secretmem: exec: out of memory\n", stderr);
			return CLI_EXIT_OSERR;
		}
		snprintf(both, len, "%s:%s", preload, old);
		if (setenv("LD_PRELOAD", both, 1) != 0) {
			free(both);
			fprintf(stderr, "secretmem: exec: setenv: %s\n", strerror(errno));
			return CLI_EXIT_OSERR;
		}
		free(both);
	} else if (!old || !*old) {
		if (setenv("LD_PRELOAD", preload, 1) != 0) {
			fprintf(stderr, "secretmem: exec: setenv: %s\n", strerror(errno));
			return CLI_EXIT_OSERR;
		}
	}
	if (setenv("SECRETMEM_OPENSSL", mode, 1) != 0) {
		fprintf(stderr, "secretmem: exec: setenv: %s\n", strerror(errno));
		return CLI_EXIT_OSERR;
	}
	fflush(stdout);
	execvp(argv[i], argv + i);
	int err = errno;
	fprintf(stderr, "secretmem: exec: %s: %s\n", argv[i], strerror(err));
	return err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}
