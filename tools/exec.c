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
 * Exit status when the program cannot be run: 64 usage, 125 refused (the
 * module could not enter it, below), 126 found but not executable, 127
 * program or module not found.
 *
 * Before it runs the program, the tool checks that the dynamic linker will
 * load the module into it, resolving `#!` interpreters (and `#!/usr/bin/env
 * NAME`) first: a set-user-ID or set-group-ID program that changes the
 * process's IDs, or one with file capabilities run by a user other than
 * root, runs in secure-execution mode (the dynamic linker ignores
 * LD_PRELOAD paths there); a statically linked program has no dynamic
 * linker at all.  Such a target is refused with a message naming the
 * reason, unless --allow-unprotected is given: it then runs after a
 * warning that says nothing of it will be protected.  Whether the program
 * uses libcrypto at all cannot be known before it runs (python3 loads it
 * with dlopen): --report (SECRETMEM_REPORT=1) makes the module say at exit
 * what it protected.
 *
 * In heap mode another malloc in LD_PRELOAD or /etc/ld.so.preload (a file
 * that exports malloc or free: exec_alloc.c) is refused the same way (125,
 * or --allow-unprotected and a warning): the module would stay inactive.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "cli.h"

#ifndef SECRETMEM_PKGLIBDIR
#define SECRETMEM_PKGLIBDIR "/usr/local/lib/secretmem"
#endif

#define PRELOAD_NAME "libsecretmem-preload.so"
#define HEAP_NAME "libsecretmem-heap.so"
#define EXIT_REFUSED 125
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND 127

static void exec_usage(FILE *out)
{
	fputs("usage: secretmem exec [--mode secure|all|heap|off] [--report] [--allow-unprotected]\n"
	      "                      [--] PROGRAM [ARGS...]\n"
	      "Run PROGRAM with the preload module: OpenSSL's secure heap (mode secure,\n"
	      "the default) or all of OpenSSL's memory (mode all) in secret memory; or with\n"
	      "the heap module (mode heap): every malloc() block of the program and of the\n"
	      "programs it runs (G_SLICE=always-malloc is set).\n"
	      "  --report             at exit, the module says what it protected (stderr)\n"
	      "  --allow-unprotected  run a program the module cannot enter (set-ID, file\n"
	      "                       capabilities, statically linked), or in heap mode with\n"
	      "                       another malloc preloaded, instead of refusing\n",
	      out);
}

/* dir/name into out if it is a readable file; 0 or -1. */
static int try_dir(const char *dir, const char *name, char *out, size_t outlen)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -1;
	if (access(path, R_OK) != 0 || !realpath(path, out))
		return -1;
	(void)outlen;
	return 0;
}

static int find_preload(const char *name, char *out, size_t outlen, char *self_dir, size_t dirlen)
{
	ssize_t n = readlink("/proc/self/exe", self_dir, dirlen - 1);

	if (n > 0) {
		self_dir[n] = '\0';
		char *slash = strrchr(self_dir, '/');
		if (slash)
			*slash = '\0';
		if (try_dir(self_dir, name, out, outlen) == 0)
			return 0;
	} else {
		snprintf(self_dir, dirlen, "(unknown: /proc/self/exe unreadable)");
	}
	return try_dir(SECRETMEM_PKGLIBDIR, name, out, outlen);
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

/*
 * The other module out of LD_PRELOAD (every entry whose file name is name):
 * one module per process, so one allocator and one set of fork handlers,
 * also when `secretmem exec` runs under another `secretmem exec`.  0 or -1.
 */
static int strip_module(const char *name)
{
	const char *old = getenv("LD_PRELOAD");
	size_t nlen = strlen(name);

	if (!old || !strstr(old, name))
		return 0;
	char *out = malloc(strlen(old) + 1);
	if (!out)
		return -1;
	size_t used = 0;
	for (const char *p = old; *p;) {
		size_t l = strcspn(p, ": ");
		const char *base = p + l;
		while (base > p && base[-1] != '/')
			base--;
		if (l && !((size_t)(p + l - base) == nlen && strncmp(base, name, nlen) == 0)) {
			if (used)
				out[used++] = ':';
			memcpy(out + used, p, l);
			used += l;
		}
		p += l;
		while (*p == ':' || *p == ' ')
			p++;
	}
	out[used] = '\0';
	int rc = setenv("LD_PRELOAD", out, 1);
	free(out);
	return rc;
}

/* PATH search as execvp() does it: the first executable regular file. */
static int find_in_path(const char *name, char *out, size_t outlen)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/'))
		return (size_t)snprintf(out, outlen, "%s", name) < outlen ? 0 : -1;
	if (!path)
		path = "/usr/local/bin:/bin:/usr/bin";
	/* an empty element, and an empty PATH, is the current directory */
	for (const char *p = path;; p++) {
		size_t l = strcspn(p, ":");
		struct stat st;

		if ((size_t)snprintf(out, outlen, "%.*s%s%s", (int)l, p, l ? "/" : "", name) < outlen &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		p += l;
		if (!*p)
			break;
	}
	return -1;
}

/*
 * The program a `#!/usr/bin/env ...` line runs, into name: the first word
 * after env's -i, -, --, -S (whose string env splits: the kernel passes it
 * as one argument) and NAME=VALUE assignments.  0 when another option comes
 * first (one that takes an argument, -u NAME, would hide the program).
 */
static int env_program(const char *line, char *name, size_t len)
{
	const char *p = line;
	int words = 0;

	while (*p) {
		while (*p == ' ' || *p == '\t')
			p++;
		const char *w = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		size_t n = (size_t)(p - w);
		if (n == 0)
			break;
		if (words++ == 0)
			continue; /* env itself */
		if (n >= 2 && w[0] == '-' && w[1] == 'S') {
			if (n == 2)
				continue;
			w += 2; /* -SNAME */
			n -= 2;
		} else if ((n == 2 && (memcmp(w, "-i", 2) == 0 || memcmp(w, "--", 2) == 0)) || (n == 1 && w[0] == '-') ||
			   memchr(w, '=', n)) {
			continue;
		}
		if (w[0] == '-' || n >= len)
			return 0;
		memcpy(name, w, n);
		name[n] = '\0';
		return 1;
	}
	return 0;
}

/*
 * Why the dynamic linker would not load the module into path (one line into
 * why): 1; or 0 when it would; or CANNOT_TELL (why says so) when path
 * cannot be read to tell.  Follows #! interpreters up to depth 4, as the
 * kernel does.  Unknown formats pass: execve() decides.  The kernel ignores
 * a script's own set-ID bits and file capabilities, and every set-ID bit
 * under no_new_privs (PR_SET_NO_NEW_PRIVS), but not file capabilities
 * there.
 */
#define CANNOT_TELL 2
static int cannot_enter(const char *path, char *why, size_t len, int depth)
{
	unsigned char hdr[256];
	struct stat st;
	struct statvfs vfs;
	ssize_t n = -1;
	int fd;

	if (depth > 4 || stat(path, &st) != 0)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	int open_err = errno;
	if (fd >= 0)
		n = read(fd, hdr, sizeof(hdr) - 1);
	int script = n >= 2 && hdr[0] == '#' && hdr[1] == '!';
	/* file capabilities still make secure-execution mode under
	 * no_new_privs (the kernel only keeps them from being raised) */
	int nocaps = script || (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID));
	int nosuid = nocaps || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1;
	int secure = 1; /* secure-execution mode: the module cannot enter */
	if (!nosuid && (st.st_mode & S_ISUID) && st.st_uid != getuid())
		snprintf(why, len, "%s is set-user-ID (owner uid %u): the dynamic linker runs it in secure-execution "
			 "mode and ignores LD_PRELOAD", path, (unsigned)st.st_uid);
	else if (!nosuid && (st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getgid())
		snprintf(why, len, "%s is set-group-ID (group gid %u): the dynamic linker runs it in "
			 "secure-execution mode and ignores LD_PRELOAD", path, (unsigned)st.st_gid);
	else if (!nocaps && getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0)
		snprintf(why, len, "%s has file capabilities: run by a user other than root it runs in "
			 "secure-execution mode and the dynamic linker ignores LD_PRELOAD", path);
	else
		secure = 0;
	if (secure) {
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (fd < 0) {
		/* execute-only (mode 0711): the kernel runs it, we cannot look */
		snprintf(why, len, "%s cannot be read (%s), so exec cannot tell whether the module can enter it "
			 "(a statically linked program would run unprotected)", path, strerror(open_err));
		return CANNOT_TELL;
	}
	if (script) {
		char interp[PATH_MAX], arg[PATH_MAX], found[PATH_MAX];
		char *line = (char *)hdr + 2, *end;

		close(fd);
		hdr[n] = '\0';
		end = strchr(line, '\n');
		if (end)
			*end = '\0';
		if (sscanf(line, " %4095s", interp) < 1)
			return 0;
		/* #!/usr/bin/env NAME: NAME is the program that runs. */
		if (strcmp(strrchr(interp, '/') ? strrchr(interp, '/') + 1 : interp, "env") == 0 &&
		    env_program(line, arg, sizeof(arg)) && find_in_path(arg, found, sizeof(found)) == 0)
			return cannot_enter(found, why, len, depth + 1);
		return cannot_enter(interp, why, len, depth + 1);
	}
	if (n >= (ssize_t)sizeof(Elf32_Ehdr) && memcmp(hdr, ELFMAG, SELFMAG) == 0) {
		int interp = 0, is64 = hdr[EI_CLASS] == ELFCLASS64;
		Elf64_Ehdr e64;
		Elf32_Ehdr e32;
		off_t phoff;
		unsigned phnum, phentsize;

		if (is64 && n >= (ssize_t)sizeof(e64)) {
			memcpy(&e64, hdr, sizeof(e64));
			phoff = (off_t)e64.e_phoff;
			phnum = e64.e_phnum;
			phentsize = e64.e_phentsize;
		} else {
			memcpy(&e32, hdr, sizeof(e32));
			phoff = (off_t)e32.e_phoff;
			phnum = e32.e_phnum;
			phentsize = e32.e_phentsize;
		}
		for (unsigned i = 0; i < phnum && i < 256; i++) {
			uint32_t type;

			if (pread(fd, &type, sizeof(type), phoff + (off_t)i * phentsize) != (ssize_t)sizeof(type))
				break;
			if (type == PT_INTERP) {
				interp = 1;
				break;
			}
		}
		close(fd);
		if (!interp && phnum > 0) {
			snprintf(why, len, "%s is statically linked: there is no dynamic linker to load the module",
				 path);
			return 1;
		}
		return 0;
	}
	close(fd);
	return 0;
}

int cmd_exec(int argc, char **argv)
{
	const char *mode = "secure";
	char preload[PATH_MAX], self_dir[PATH_MAX], target[PATH_MAX], why[PATH_MAX + 200];
	int i, allow = 0, report = 0;

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
		if (strcmp(a, "--allow-unprotected") == 0) {
			allow = 1;
			continue;
		}
		if (strcmp(a, "--report") == 0) {
			report = 1;
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
	if (strcmp(mode, "secure") != 0 && strcmp(mode, "all") != 0 && strcmp(mode, "off") != 0 &&
	    strcmp(mode, "heap") != 0) {
		fprintf(stderr, "secretmem: exec: invalid mode '%s' (secure, all, heap or off)\n", mode);
		return CLI_EXIT_USAGE;
	}
	int heap = strcmp(mode, "heap") == 0;
	const char *module = heap ? HEAP_NAME : PRELOAD_NAME;
	if (i >= argc) {
		fputs("secretmem: exec: no program given\n", stderr);
		exec_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (find_preload(module, preload, sizeof(preload), self_dir, sizeof(self_dir)) != 0) {
		fprintf(stderr, "secretmem: exec: %s not found in %s nor in %s\n", module,
			self_dir, SECRETMEM_PKGLIBDIR);
		return EXIT_NOT_FOUND;
	}
	/* LD_PRELOAD splits at spaces and colons, with no way to quote them:
	 * the dynamic linker would look for the pieces of this path, find
	 * none, and run the program without the module */
	int no_preload = 0;
	if (strcmp(mode, "off") != 0 && strpbrk(preload, " :")) {
		if (!allow) {
			fprintf(stderr, "secretmem: exec: refusing to run %s: the module's path \"%s\" holds a space or a "
				"colon, which LD_PRELOAD cannot carry, so nothing of it would be protected (install "
				"secretmem in a directory without them; --allow-unprotected runs it anyway)\n",
				argv[i], preload);
			return EXIT_REFUSED;
		}
		fprintf(stderr, "secretmem: exec: warning: %s: nothing of it will be protected: the module's path "
			"holds a space or a colon, which LD_PRELOAD cannot carry\n", argv[i]);
		no_preload = 1; /* its pieces would be relative paths for ld.so */
	}

	int enter = strcmp(mode, "off") != 0 && find_in_path(argv[i], target, sizeof(target)) == 0
			    ? cannot_enter(target, why, sizeof(why), 0) : 0;
	if (enter == CANNOT_TELL) {
		fprintf(stderr, "secretmem: exec: warning: %s\n", why);
	} else if (enter) {
		if (!allow) {
			fprintf(stderr, "secretmem: exec: refusing to run %s: %s, so nothing of it would be "
				"protected (--allow-unprotected runs it anyway; secretmem-preload(7) says how a "
				"set-ID program can be protected)\n", argv[i], why);
			return EXIT_REFUSED;
		}
		fprintf(stderr, "secretmem: exec: warning: %s: nothing of it will be protected: %s\n", argv[i], why);
	}
	if (report && setenv("SECRETMEM_REPORT", "1", 1) != 0) {
		fprintf(stderr, "secretmem: exec: setenv: %s\n", strerror(errno));
		return CLI_EXIT_OSERR;
	}

	if (strip_module(heap ? PRELOAD_NAME : HEAP_NAME) != 0 || (heap && strip_module(HEAP_NAME) != 0)) {
		fprintf(stderr, "secretmem: exec: setenv: %s\n", strerror(errno));
		return CLI_EXIT_OSERR;
	}
	/* another malloc preloaded: the heap module would stay out of its way
	 * (secretmem-heap(7), ANOTHER ALLOCATOR) */
	if (heap && exec_other_allocator(why, sizeof(why))) {
		if (!allow) {
			fprintf(stderr, "secretmem: exec: refusing to run %s: %s (--allow-unprotected runs it anyway; "
				"without that file in the list the heap is protected)\n", argv[i], why);
			return EXIT_REFUSED;
		}
		fprintf(stderr, "secretmem: exec: warning: %s: nothing of its heap will be protected: %s\n", argv[i], why);
	}
	/* GLib's slice allocator maps memory of its own: plain malloc, so the
	 * heap module gets its blocks (inherited by every exec'd descendant).
	 * Python keeps its allocator: the module gives it its arenas. */
	if (heap && setenv("G_SLICE", "always-malloc", 1) != 0) {
		fprintf(stderr, "secretmem: exec: setenv: %s\n", strerror(errno));
		return CLI_EXIT_OSERR;
	}
	const char *old = getenv("LD_PRELOAD");
	if (no_preload) {
		/* LD_PRELOAD as it was */
	} else if (old && *old && !list_has(old, preload)) {
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
	if (!heap && setenv("SECRETMEM_OPENSSL", mode, 1) != 0) {
		fprintf(stderr, "secretmem: exec: setenv: %s\n", strerror(errno));
		return CLI_EXIT_OSERR;
	}
	fflush(stdout);
	execvp(argv[i], argv + i);
	int err = errno;
	fprintf(stderr, "secretmem: exec: %s: %s\n", argv[i], strerror(err));
	return err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}
