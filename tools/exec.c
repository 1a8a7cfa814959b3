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
 * program replaces this process (same pid, same fds).  The program is found
 * as execvp() finds it (PATH, or glibc's default path when PATH is unset),
 * and exactly the file that was checked is run (execv), so the check and
 * the run cannot disagree.
 * Exit status when the program cannot be run: 64 usage, 125 refused (the
 * module could not enter it, below), 126 found but not executable, 127
 * program or module not found.
 *
 * Before it runs the program, the tool checks that the dynamic linker will
 * load the module into it, resolving `#!` interpreters (and `#!/usr/bin/env
 * NAME`, NAME in the PATH env gives it) and the program of the dynamic
 * linker run as a program first: a set-user-ID or set-group-ID program that
 * changes the process's IDs, any program run while this process's effective
 * IDs differ from its real IDs, or one with file capabilities run by a user
 * other than root, runs in secure-execution mode (the dynamic linker
 * ignores LD_PRELOAD paths there); a statically linked program has no
 * dynamic linker at all.  Such a target is refused with a message naming the
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
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
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

/* The search path of execvp() when PATH is unset: glibc's default
 * (confstr(_CS_PATH), /bin:/usr/bin), not a list of our own. */
static const char *default_path(void)
{
	static char buf[256];

	if (!buf[0]) {
		size_t n = confstr(_CS_PATH, buf, sizeof(buf));
		if (n == 0 || n > sizeof(buf))
			snprintf(buf, sizeof(buf), "/bin:/usr/bin");
	}
	return buf;
}

/*
 * The file execvp() would run for name with this PATH (NULL: unset): name
 * itself when it holds a slash, else the first executable regular file of
 * the search.  0, or -1 with errno EACCES (a file was found but none could
 * be executed) or ENOENT, as execvp() would fail.
 */
static int search_path(const char *name, const char *path, char *out, size_t outlen)
{
	int denied = 0;

	if (strchr(name, '/'))
		return (size_t)snprintf(out, outlen, "%s", name) < outlen ? 0 : (errno = ENAMETOOLONG, -1);
	if (!path)
		path = default_path();
	/* an empty element, and an empty PATH, is the current directory */
	for (const char *p = path; *name;) {
		size_t l = strcspn(p, ":");
		struct stat st;

		if ((size_t)snprintf(out, outlen, "%.*s%s%s", (int)l, p, l ? "/" : "", name) < outlen &&
		    stat(out, &st) == 0) {
			if (S_ISREG(st.st_mode) && faccessat(AT_FDCWD, out, X_OK, AT_EACCESS) == 0)
				return 0;
			denied = 1;
		}
		p += l;
		if (!*p++)
			break;
	}
	errno = denied ? EACCES : ENOENT;
	return -1;
}

/* What env does to PATH before it runs its program. */
enum env_path { ENV_PATH_KEPT, ENV_PATH_SET, ENV_PATH_UNSET };

/*
 * The program a `#!/usr/bin/env ...` line runs, into name, and the PATH env
 * searches it in (into *how, and the value into path when env sets it).
 * As GNU env reads its arguments: options first (-i and -, which empty the
 * environment, -u NAME, -S, whose string env splits: the kernel passes it
 * as one argument, -v, --), then NAME=VALUE assignments, then the program.
 * 1; 0 when env has no program; -1 when exec cannot follow env (another
 * option such as -C DIR, or quotes, escapes, variables or a comment, which
 * env -S would rewrite).
 */
static int env_program(const char *line, char *name, size_t len, char *path, size_t pathlen, enum env_path *how)
{
	const char *p = line;
	int words = 0, options = 1, unset = 0;

	*how = ENV_PATH_KEPT;
	if (strpbrk(line, "\"'\\$#"))
		return -1;
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
		if (options && w[0] == '-') {
			if (n == 2 && memcmp(w, "--", 2) == 0) {
				options = 0;
			} else if ((n == 2 && memcmp(w, "-i", 2) == 0) || n == 1 ||
				   (n == 20 && memcmp(w, "--ignore-environment", 20) == 0)) {
				*how = ENV_PATH_UNSET;
				if (n == 1)
					options = 0; /* "-" is the first operand */
			} else if ((n == 2 && memcmp(w, "-v", 2) == 0) || (n == 7 && memcmp(w, "--debug", 7) == 0)) {
				/* env says what it does on stderr */
			} else if ((n == 2 && memcmp(w, "-S", 2) == 0) || (n == 14 && memcmp(w, "--split-string", 14) == 0)) {
				/* its string: the words that follow */
			} else if (n > 2 && w[1] == 'S') {
				p = w + 2; /* -SWORD: WORD is the string's first word */
			} else if (n > 15 && memcmp(w, "--split-string=", 15) == 0) {
				p = w + 15;
			} else if ((n == 2 && memcmp(w, "-u", 2) == 0) || (n == 7 && memcmp(w, "--unset", 7) == 0)) {
				unset = 1; /* its NAME is the next word */
			} else if ((n > 2 && w[1] == 'u') || (n > 8 && memcmp(w, "--unset=", 8) == 0)) {
				const char *var = w[1] == 'u' ? w + 2 : w + 8;
				if ((size_t)(w + n - var) == 4 && memcmp(var, "PATH", 4) == 0)
					*how = ENV_PATH_UNSET;
			} else {
				return -1;
			}
			continue;
		}
		if (unset) {
			if (n == 4 && memcmp(w, "PATH", 4) == 0)
				*how = ENV_PATH_UNSET;
			unset = 0;
			continue;
		}
		options = 0;
		if (memchr(w, '=', n)) {
			if (n >= 5 && memcmp(w, "PATH=", 5) == 0) {
				if (n - 5 >= pathlen)
					return -1;
				memcpy(path, w + 5, n - 5);
				path[n - 5] = '\0';
				*how = ENV_PATH_SET;
			}
			continue;
		}
		if (n >= len)
			return -1;
		memcpy(name, w, n);
		name[n] = '\0';
		return 1;
	}
	return 0;
}

/* dl_iterate_phdr(): the name of the object loaded at AT_BASE. */
static int loader_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_addr != (ElfW(Addr))getauxval(AT_BASE) || !info->dlpi_name || !info->dlpi_name[0])
		return 0;
	*(const char **)data = info->dlpi_name;
	return 1;
}

/* 1 if st is the dynamic linker of this process (the one PT_INTERP names). */
static int is_loader(const struct stat *st)
{
	const char *name = NULL;
	struct stat ls;

	if (getauxval(AT_BASE) == 0)
		return 0;
	dl_iterate_phdr(loader_cb, &name);
	return name && stat(name, &ls) == 0 && ls.st_dev == st->st_dev && ls.st_ino == st->st_ino;
}

/* 1 if the ELF file (its first n bytes in hdr) has program headers but no
 * PT_INTERP: no dynamic linker runs with it. */
static int elf_static(int fd, const unsigned char *hdr, ssize_t n)
{
	int is64 = hdr[EI_CLASS] == ELFCLASS64;
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
		if (type == PT_INTERP)
			return 0;
	}
	return phnum > 0;
}

/*
 * The program the dynamic linker run as a program (`ld.so [OPTIONS]
 * PROGRAM [ARGS]`, args after ld.so) loads: after ld.so's options, those
 * of glibc 2.36 that take a value skipped with it.  NULL if none.
 */
static const char *loader_program(char *const *args)
{
	static const char *const with_value[] = { "--library-path", "--inhibit-rpath", "--audit", "--preload",
						  "--argv0", "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask" };

	for (; args && *args; args++) {
		if (strncmp(*args, "--", 2) != 0)
			return *args;
		for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
			if (strcmp(*args, with_value[k]) == 0 && args[1]) {
				args++;
				break;
			}
	}
	return NULL;
}

/*
 * Why the dynamic linker would not load the module into path (one line into
 * why): 1; or 0 when it would; or CANNOT_TELL (why says so) when path
 * cannot be read to tell.  Follows #! interpreters up to depth 4, as the
 * kernel does, and `#!/usr/bin/env` to the program env runs.  Unknown
 * formats pass: execve() decides.  The kernel ignores a script's own
 * set-ID bits and file capabilities, and every set-ID bit under
 * no_new_privs (PR_SET_NO_NEW_PRIVS), but not file capabilities there.
 * A process whose effective IDs differ from its real IDs (run by a
 * set-user-ID program, or setpriv --euid) runs whatever it executes in
 * secure-execution mode, whether or not the program is set-ID.  args, at
 * depth 0, are the program's arguments: the dynamic linker run as a
 * program loads the module into the program it runs, which is checked.
 */
#define CANNOT_TELL 2
static int cannot_enter(const char *path, char *const *args, char *why, size_t len, int depth)
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
	/* the IDs the program will run with: the kernel's test is that they
	 * differ from the real IDs of the process that runs it */
	uid_t euid = !nosuid && (st.st_mode & S_ISUID) ? st.st_uid : geteuid();
	gid_t egid = !nosuid && (st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) ? st.st_gid : getegid();
	int secure = 1; /* secure-execution mode: the module cannot enter */
	if (!nosuid && (st.st_mode & S_ISUID) && st.st_uid != getuid())
		snprintf(why, len, "%s is set-user-ID (owner uid %u): the dynamic linker runs it in secure-execution "
			 "mode and ignores LD_PRELOAD", path, (unsigned)st.st_uid);
	else if (!nosuid && (st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getgid())
		snprintf(why, len, "%s is set-group-ID (group gid %u): the dynamic linker runs it in "
			 "secure-execution mode and ignores LD_PRELOAD", path, (unsigned)st.st_gid);
	else if (!script && (euid != getuid() || egid != getgid()))
		snprintf(why, len, "secretmem runs with effective %s %u but real %s %u: the kernel runs %s in "
			 "secure-execution mode and the dynamic linker ignores LD_PRELOAD", euid != getuid() ? "uid" : "gid",
			 euid != getuid() ? (unsigned)euid : (unsigned)egid, euid != getuid() ? "uid" : "gid",
			 euid != getuid() ? (unsigned)getuid() : (unsigned)getgid(), path);
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
		char interp[PATH_MAX], arg[PATH_MAX], found[PATH_MAX], envpath[PATH_MAX];
		char *line = (char *)hdr + 2, *end;
		enum env_path how;

		close(fd);
		hdr[n] = '\0';
		end = strchr(line, '\n');
		if (end)
			*end = '\0';
		if (sscanf(line, " %4095s", interp) < 1)
			return 0;
		if (strcmp(strrchr(interp, '/') ? strrchr(interp, '/') + 1 : interp, "env") != 0)
			return cannot_enter(interp, NULL, why, len, depth + 1);
		/* #!/usr/bin/env NAME: NAME is the program that runs, found in
		 * the PATH env gives it */
		int r = env_program(line, arg, sizeof(arg), envpath, sizeof(envpath), &how);
		if (r < 0) {
			snprintf(why, len, "%s runs its program through \"#!%.200s\", which exec cannot follow, so "
				 "exec cannot tell whether the module can enter it", path, line);
			return CANNOT_TELL;
		}
		if (r > 0 && search_path(arg, how == ENV_PATH_SET ? envpath : how == ENV_PATH_UNSET ? NULL
				     : getenv("PATH"), found, sizeof(found)) == 0)
			return cannot_enter(found, NULL, why, len, depth + 1);
		return cannot_enter(interp, NULL, why, len, depth + 1);
	}
	if (n >= (ssize_t)sizeof(Elf32_Ehdr) && memcmp(hdr, ELFMAG, SELFMAG) == 0) {
		int stat_ok = elf_static(fd, hdr, n);

		close(fd);
		if (!stat_ok)
			return 0;
		if (is_loader(&st)) {
			/* ld.so PROGRAM: the module is loaded into PROGRAM,
			 * unless PROGRAM is statically linked (ld.so runs it
			 * without preloading anything); set-ID bits do not
			 * apply, the kernel runs ld.so */
			const char *prog = depth == 0 ? loader_program(args) : NULL;
			int pfd = prog && strchr(prog, '/') ? open(prog, O_RDONLY | O_CLOEXEC) : -1;
			struct stat ps;

			if (pfd < 0) {
				/* from a #! line, or not named by a path:
				 * which program it runs is not checked */
				snprintf(why, len, "the dynamic linker %s runs a program exec cannot check (%s)", path,
					 prog ? "not named by a path" : "named by a #! line");
				return 1;
			}
			n = read(pfd, hdr, sizeof(hdr) - 1);
			int prog_static = n >= (ssize_t)sizeof(Elf32_Ehdr) && memcmp(hdr, ELFMAG, SELFMAG) == 0 &&
					  elf_static(pfd, hdr, n) && fstat(pfd, &ps) == 0 && !is_loader(&ps);
			close(pfd);
			if (prog_static)
				snprintf(why, len, "%s is statically linked: the dynamic linker %s runs it without "
					 "loading the module", prog, path);
			return prog_static;
		}
		snprintf(why, len, "%s is statically linked: there is no dynamic linker to load the module", path);
		return 1;
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
	if (strpbrk(preload, " :")) {
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

	/* the file checked is the file run (execv, not a second search) */
	if (search_path(argv[i], getenv("PATH"), target, sizeof(target)) != 0) {
		int err = errno;
		fprintf(stderr, "secretmem: exec: %s: %s\n", argv[i], strerror(err));
		return err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
	}
	int enter = strcmp(mode, "off") != 0 ? cannot_enter(target, argv + i + 1, why, sizeof(why), 0) : 0;
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
	execv(target, argv + i);
	int err = errno;
	if (err == ENOEXEC) {
		/* as execvp(): a file that is neither ELF nor #! is a shell
		 * script (argv[i - 1] is ours to reuse) */
		argv[i - 1] = "/bin/sh";
		argv[i] = target;
		execv("/bin/sh", argv + i - 1);
		err = errno;
	}
	fprintf(stderr, "secretmem: exec: %s: %s\n", argv[i], strerror(err));
	return err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}
