/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * status_gather.c - the gathering of `secretmem status`: which processes
 * hold secret memory, walked from /proc into one struct status_report.
 *
 * A secretmem file shows as "/secretmem (deleted)" both in /proc/PID/maps
 * (a mapping) and as the target of a /proc/PID/fd link (an open fd).  Every
 * such file keeps the kernel from hibernating (hibernation_available() checks
 * secretmem_active()), and the kernel keeps no counter, so we look at every
 * process.  Mappings are matched by name and, when this process can create a
 * secretmem file itself, by the device of the secretmem mount, so a deleted
 * ordinary file that happens to be called /secretmem is not counted.
 *
 * The files of /proc/PID are the leader thread's view.  The threads share
 * the mappings (one mm), but a leader that called pthread_exit() while
 * other threads live is a zombie whose smaps, fd, mem, cmdline and environ
 * read empty; and a thread that called unshare(CLONE_FILES) has an fd
 * table of its own.  So the mm is read through a live thread when the
 * leader shows none, and every distinct fd table through
 * /proc/PID/task/TID/fd.
 *
 * For each holder: its command line, user, systemd unit or container, bytes,
 * fds and what can be seen from outside of libsecretmem (the shared library
 * or the preload module mapped, SECRETMEM_* variables of the initial
 * environment), and the figures page the heap module publishes
 * (heap/heapstats.h), read through /proc/PID/mem.  Then the processes that
 * could not be inspected, and whether some could not even be seen (hidepid
 * mount option of /proc, a PID namespace).  Nothing here writes output.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/kcmp.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "secretmem.h"
#include "cli.h"
#include "status.h"

/* The secretmem files seen, by device and inode: a file mapped twice, or
 * mapped and open, is one file.  The same set type keeps descriptors by
 * number too (fd >= 0), so that one read through two threads is one. */
struct file_id {
	dev_t dev;
	ino_t ino;
	int fd;                      /* -1 in a set of files */
};

struct file_set {
	struct file_id *v;
	size_t n, cap;
};

/* Adds id unless present; returns 1 if added, 0 if present, -ENOMEM. */
static int set_add(struct file_set *s, dev_t dev, ino_t ino, int fd)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].dev == dev && s->v[i].ino == ino && s->v[i].fd == fd)
			return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct file_id *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct file_id){ dev, ino, fd };
	return 1;
}

/* The walk of /proc: what status_gather() needs on the way, beside the
 * report it fills. */
struct scan {
	struct status_report *r;
	int dev_known;
	dev_t dev;                   /* device of secretmem files */
	size_t cap, heap_cap;        /* allocated r->holders, r->heap_only */
	size_t unprot_cap;           /* allocated r->unprot */
	struct file_set all;         /* the files of all holders */
};

/* Room for "/proc/PID/task/TID", the directory the memory of a process is
 * read through. */
#define MM_SIZE 40

static int is_secretmem_path(const char *s)
{
	return strcmp(s, CLI_SECRETMEM_NAME) == 0;
}

/*
 * Reads the smaps of mm (/proc/PID or /proc/PID/task/TID) into h.  Returns
 * the number of mappings (0: no mm, a kernel thread or a zombie leader),
 * -EACCES/-EPERM when not allowed, -ENOENT when the process is gone.
 */
static int scan_maps(struct scan *sc, const char *mm, struct status_holder *h, struct file_set *files)
{
	char path[64], line[4096];
	FILE *f;
	int in = 0, n = 0;

	snprintf(path, sizeof(path), "%s/smaps", mm);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	errno = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		unsigned long long off, ino;
		unsigned int major_nr, minor_nr;
		char perms[8];
		int name_at = 0;

		/*
		 * A line longer than the buffer is a header with a long path,
		 * which anyone can choose: its tail, read as a line of its
		 * own, would be a header whose device and name the owner of
		 * the path wrote.  Skip to the end of the line.  The mapping
		 * itself is no secretmem file (that name is short), so the
		 * Size and Rss lines that follow are not counted either.
		 */
		if (!strchr(line, '\n') && !feof(f)) {
			int c;
			while ((c = getc(f)) != EOF && c != '\n')
				;
			in = 0;
			continue;
		}
		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %llu %n", &start, &end, perms, &off,
			   &major_nr, &minor_nr, &ino, &name_at) >= 7 && name_at > 0) {
			char *name = line + name_at;
			name[strcspn(name, "\n")] = '\0';
			n++;
			const char *base = strrchr(name, '/');
			base = base ? base + 1 : name;
			if (strncmp(base, "libsecretmem-preload.so", 23) == 0) {
				h->lib = STATUS_LIB_PRELOAD;
				h->mods |= STATUS_MOD_PRELOAD;
			} else if (strncmp(base, "libsecretmem-heap.so", 20) == 0) {
				h->lib = STATUS_LIB_HEAP;
				h->mods |= STATUS_MOD_HEAP;
			} else if (strcmp(name, "/memfd:" SM_HEAP_STATS_NAME " (deleted)") == 0 && !h->heap_page)
				h->heap_page = start;
			else if (strcmp(name, "/memfd:" SM_PRELOAD_STATS_NAME " (deleted)") == 0 && !h->preload_page)
				h->preload_page = start;
			else if (strncmp(base, "libsecretmem.so", 15) == 0 && h->lib == STATUS_LIB_NONE)
				h->lib = STATUS_LIB_SHARED;
			in = is_secretmem_path(name) &&
			     (!sc->dev_known || (major(sc->dev) == major_nr && minor(sc->dev) == minor_nr));
			if (in) {
				h->mappings++;
				if (set_add(files, makedev(major_nr, minor_nr), (ino_t)ino, -1) < 0)
					break;
			}
			continue;
		}
		if (!in)
			continue;
		unsigned long long kb;
		if (sscanf(line, "Size: %llu kB", &kb) == 1)
			h->mapped += kb * 1024;
		else if (sscanf(line, "Rss: %llu kB", &kb) == 1)
			h->resident += kb * 1024;
	}
	/* reading smaps of a process we may not trace fails at the first read */
	int err = ferror(f) ? errno : 0;
	fclose(f);
	return err ? -err : n;
}

/*
 * The leader showed no mm: if it is a zombie whose threads live on, reads
 * the mappings through the first live thread (they share one mm) and makes
 * mm that thread's directory.  Returns what scan_maps() did.
 */
static int scan_task_maps(struct scan *sc, pid_t pid, char *mm, size_t size, struct status_holder *h,
			  struct file_set *files)
{
	char path[64];
	int rc = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	for (struct dirent *e; rc == 0 && (e = readdir(d));) {
		char task[MM_SIZE];
		long tid = strtol(e->d_name, NULL, 10);

		if (tid <= 0 || tid > INT_MAX || tid == pid)
			continue;
		snprintf(task, sizeof(task), "/proc/%d/task/%d", (int)pid, (int)tid);
		rc = scan_maps(sc, task, h, files);
		if (rc == -ENOENT || rc == -ESRCH)
			rc = 0; /* that thread ended meanwhile: try the next */
		if (rc > 0)
			snprintf(mm, size, "%s", task);
	}
	closedir(d);
	return rc;
}

/* The secretmem descriptors of one fd table (path: a .../fd directory);
 * fds holds those counted already. */
static int scan_fd_table(struct scan *sc, const char *path, struct status_holder *h, struct file_set *files,
			 struct file_set *fds)
{
	char link[512], target[256];
	DIR *d;

	d = opendir(path);
	if (!d)
		return -errno;
	for (struct dirent *e; (e = readdir(d));) {
		struct stat st;
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (!is_secretmem_path(target) || stat(link, &st) != 0)
			continue;
		if (sc->dev_known && st.st_dev != sc->dev)
			continue;
		int added = set_add(fds, st.st_dev, st.st_ino, atoi(e->d_name));
		if (added < 0 || set_add(files, st.st_dev, st.st_ino, -1) < 0)
			break;
		h->fds += (unsigned)added;
	}
	closedir(d);
	return 0;
}

/* 1 when threads a and b share one fd table, 0 when not, -1 when kcmp(2)
 * cannot tell (refused: Docker's default profile without CAP_SYS_PTRACE;
 * missing). */
static int same_files(pid_t a, pid_t b)
{
	long r = syscall(SYS_kcmp, a, b, KCMP_FILES, 0, 0);

	return r == 0 ? 1 : r > 0 ? 0 : -1;
}

/*
 * The secretmem descriptors of every fd table of pid: the leader's, and
 * the one of each thread that does not share it with a thread read before
 * (kcmp(2)).  Where kcmp cannot tell, one thread's table besides the
 * leader's (a leader that ended shows none) and a descriptor seen in both,
 * same number and file, is counted once: reading every thread's table
 * took a process of 1,000 threads and 3,000 descriptors 32 s.  Returns 0,
 * or the -errno of the leader's table or of a thread's.
 */
static int scan_fds(struct scan *sc, pid_t pid, struct status_holder *h, struct file_set *files)
{
	struct file_set fds = { 0 };
	pid_t tables[32];
	size_t ntables = 0;
	char path[64];
	int rc, blind = 0, blind_read = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	rc = scan_fd_table(sc, path, h, files, &fds);
	if (rc < 0)
		goto out;
	tables[ntables++] = pid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	for (struct dirent *e; d && (e = readdir(d));) {
		long tid = strtol(e->d_name, NULL, 10);
		int shared = 0;

		if (tid <= 0 || tid > INT_MAX || tid == pid)
			continue;
		for (size_t i = 0; i < ntables && !shared && !blind; i++) {
			int same = same_files((pid_t)tid, tables[i]);
			if (same < 0)
				blind = 1;
			shared = same > 0;
		}
		if (shared)
			continue;
		if (blind && blind_read)
			break; /* one table besides the leader's, as said above */
		snprintf(path, sizeof(path), "/proc/%d/task/%ld/fd", (int)pid, tid);
		/* kcmp said it is a table of its own: all its descriptors count */
		struct file_set own = { 0 };
		int r = scan_fd_table(sc, path, h, files, blind ? &fds : &own);
		free(own.v);
		blind_read |= blind;
		if (r < 0 && r != -ENOENT && r != -ESRCH)
			rc = r; /* a thread with other credentials */
		if (r == 0 && ntables < sizeof(tables) / sizeof(tables[0]))
			tables[ntables++] = (pid_t)tid;
	}
	if (d)
		closedir(d);
out:
	free(fds.v);
	return rc;
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* The systemd unit and the container of a process, from its cgroup path
 * (cgroup v2 "0::" line, else the v1 name=systemd hierarchy). */
static void unit_from_cgroup(const char *cg, struct status_holder *h)
{
	const char *p = cg, *user = NULL;
	size_t user_len = 0;

	h->unit[0] = h->container[0] = '\0';
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			break;
		if (strncmp(p, "user@", 5) == 0 && ends_with(p, n, ".service")) {
			user = p;
			user_len = n;
		} else if (ends_with(p, n, ".service") || ends_with(p, n, ".scope") ||
			   ends_with(p, n, ".socket") || ends_with(p, n, ".mount")) {
			if (user)
				snprintf(h->unit, sizeof(h->unit), "%.*s (in %.*s)", (int)n, p,
					 (int)user_len, user);
			else
				snprintf(h->unit, sizeof(h->unit), "%.*s", (int)n, p);
		}
		static const struct {
			const char *prefix, *name;
		} rt[] = { { "docker-", "docker" }, { "libpod-", "podman" },
			   { "cri-containerd-", "containerd" }, { "crio-", "cri-o" } };
		for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]); i++) {
			size_t k = strlen(rt[i].prefix);
			if (n > k && strncmp(p, rt[i].prefix, k) == 0)
				snprintf(h->container, sizeof(h->container), "%s %.12s", rt[i].name, p + k);
		}
		if (strncmp(p, "docker", n) == 0 && n == 6 && p[n] == '/')
			snprintf(h->container, sizeof(h->container), "docker %.12s", p + n + 1);
		if (n >= 8 && strncmp(p, "kubepods", 8) == 0 && !h->container[0])
			snprintf(h->container, sizeof(h->container), "kubernetes pod");
		p += n;
	}
}

static void read_cgroup(pid_t pid, struct status_holder *h)
{
	char path[64], buf[4096], v1[1024] = "";
	const char *v2 = NULL;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (cli_read_file(path, buf, sizeof(buf)) < 0)
		return;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "0::", 3) == 0)
			v2 = line + 3;
		else if (strstr(line, ":name=systemd:"))
			snprintf(v1, sizeof(v1), "%s", strstr(line, ":name=systemd:") + 14);
	}
	/* on a hybrid system the v2 path is "/" unless systemd uses it */
	unit_from_cgroup(v1[0] ? v1 : v2 ? v2 : "", h);
}

/* The name of uid (else the number, else "?" if unknown). */
static void user_name(uid_t uid, char *buf, size_t size)
{
	struct passwd *pw = uid == (uid_t)-1 ? NULL : getpwuid(uid);

	if (pw)
		snprintf(buf, size, "%s", pw->pw_name);
	else if (uid == (uid_t)-1)
		snprintf(buf, size, "?");
	else
		snprintf(buf, size, "%u", (unsigned)uid);
}

/*
 * The NUL-separated strings of path (/proc/PID/environ or cmdline) whole,
 * up to STATUS_STRINGS_MAX bytes (*cut set when there were more): a
 * NUL-terminated malloc'd buffer, its length in *len; NULL with -errno in
 * *err.
 */
static char *read_strings(const char *path, size_t *len, int *cut, int *err)
{
	size_t cap = 65536, used = 0;
	char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*len = 0;
	*cut = 0;
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	for (;;) {
		if (used == cap || !buf) {
			if (buf && cap >= STATUS_STRINGS_MAX) {
				char c;
				*cut = read(fd, &c, 1) > 0;
				break;
			}
			cap = buf ? cap * 2 : cap;
			if (cap > STATUS_STRINGS_MAX)
				cap = STATUS_STRINGS_MAX;
			char *b = realloc(buf, cap + 1);
			if (!b) {
				*err = -ENOMEM;
				goto fail;
			}
			buf = b;
		}
		ssize_t n = read(fd, buf + used, cap - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*err = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';
	*len = used;
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
}

/* mm: where the memory of pid is read (the leader, or a live thread); env:
 * its initial environment (NULL if unreadable).  0 or -ENOMEM. */
static int read_identity(pid_t pid, const char *mm, const char *env, size_t env_len, struct status_holder *h)
{
	char path[64], buf[4096];
	const char *p;
	struct stat mine, theirs;
	size_t n = 0;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (cli_read_file(path, h->comm, sizeof(h->comm)) < 0)
		snprintf(h->comm, sizeof(h->comm), "?");
	h->uid = (uid_t)-1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (cli_read_file(path, buf, sizeof(buf)) >= 0 && (p = strstr(buf, "\nUid:")))
		h->uid = (uid_t)strtoul(p + 5, NULL, 10);
	user_name(h->uid, h->user, sizeof(h->user));
	snprintf(path, sizeof(path), "%s/cmdline", mm);
	h->cmdline = read_strings(path, &n, &h->cmdline_cut, &err); /* NUL-separated */
	if (!h->cmdline && err == -ENOMEM)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (h->cmdline[i] == '\0')
			h->cmdline[i] = ' ';
	while (n > 0 && (h->cmdline[n - 1] == ' ' || h->cmdline[n - 1] == '\n'))
		h->cmdline[--n] = '\0';
	if (n == 0) {
		size_t size = sizeof(h->comm) + 2;
		free(h->cmdline);
		h->cmdline = malloc(size);
		if (!h->cmdline)
			return -ENOMEM;
		snprintf(h->cmdline, size, "[%s]", h->comm);
	}
	read_cgroup(pid, h);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	if (!h->container[0] && stat("/proc/self/ns/pid", &mine) == 0 && stat(path, &theirs) == 0 &&
	    mine.st_ino != theirs.st_ino)
		snprintf(h->container, sizeof(h->container), "another PID namespace");
	/* the initial environment: SECRETMEM_* (a process may change its
	 * environment later) */
	size_t used = 0;
	for (size_t i = 0; env && i < env_len; i += strlen(env + i) + 1) {
		if (strncmp(env + i, "SECRETMEM_", 10) != 0 || used + 2 >= sizeof(h->lib_env))
			continue;
		used += (size_t)snprintf(h->lib_env + used, sizeof(h->lib_env) - used, "%s%s",
					 used ? " " : "", env + i);
		if (used >= sizeof(h->lib_env))
			used = sizeof(h->lib_env) - 1;
	}
	return 0;
}

/* ---- what is outside a module ------------------------------------------ */

/* size bytes at addr of mm into buf, checked against magic: 0 or -errno. */
static int read_page(const char *mm, unsigned long addr, void *buf, size_t size, uint64_t magic)
{
	char mem[64];
	uint64_t m;

	snprintf(mem, sizeof(mem), "%s/mem", mm);
	int fd = open(mem, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t got = pread(fd, buf, size, (off_t)addr);
	int err = got < 0 ? errno : 0;
	close(fd);
	memcpy(&m, buf, sizeof(m));
	if (got != (ssize_t)size || m != magic)
		return err ? -err : -EIO;
	return 0;
}

/* Append "; "-separated text to h->unprotected. */
static void why(struct status_holder *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why(struct status_holder *h, const char *fmt, ...)
{
	size_t used = strlen(h->unprotected);
	va_list ap;

	if (used && used + 2 < sizeof(h->unprotected)) {
		memcpy(h->unprotected + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(h->unprotected + used, sizeof(h->unprotected) - used, fmt, ap);
	va_end(ap);
}

/* AT_SECURE and AT_BASE of mm's auxiliary vector: 0, or -errno. */
static int read_auxv(const char *mm, unsigned long *secure, unsigned long *interp)
{
	char path[64];
	unsigned long v[128];

	snprintf(path, sizeof(path), "%s/auxv", mm);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, v, sizeof(v));
	close(fd);
	if (n < 0)
		return -EIO;
	*secure = *interp = 0;
	for (size_t i = 0; i + 1 < (size_t)n / sizeof(v[0]) && v[i] != AT_NULL; i += 2) {
		if (v[i] == AT_SECURE)
			*secure = v[i + 1];
		else if (v[i] == AT_BASE)
			*interp = v[i + 1];
	}
	return 0;
}

/* 1 if the LD_PRELOAD list names a file called name. */
static int list_names(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ": \t");
		const char *base = p + l;

		while (base > p && base[-1] != '/')
			base--;
		if ((size_t)(p + l - base) == len && memcmp(base, name, len) == 0)
			return 1;
		p += l;
		while (*p == ':' || *p == ' ' || *p == '\t')
			p++;
	}
	return 0;
}

/* A module the initial environment (env, NULL if unreadable) asks for
 * (LD_PRELOAD) and that is not mapped: the dynamic linker did not load it. */
static void requested(const char *mm, const char *env, size_t n, struct status_holder *h)
{
	static const struct {
		const char *name;
		unsigned mod;
	} mods[] = { { "libsecretmem-heap.so", STATUS_MOD_HEAP }, { "libsecretmem-preload.so", STATUS_MOD_PRELOAD } };
	const char *pre = NULL;

	for (size_t i = 0; env && i < n; i += strlen(env + i) + 1)
		if (strncmp(env + i, "LD_PRELOAD=", 11) == 0)
			pre = env + i + 11;
	if (!pre)
		return;
	for (size_t k = 0; k < sizeof(mods) / sizeof(mods[0]); k++) {
		unsigned long secure = 0, interp = 0;

		if (!list_names(pre, mods[k].name) || (h->mods & mods[k].mod))
			continue;
		if (read_auxv(mm, &secure, &interp) != 0)
			why(h, "%s requested, not loaded", mods[k].name);
		else
			why(h, "%s requested, not loaded (%s)", mods[k].name,
			    secure ? "set-ID" : !interp ? "statically linked" : "the dynamic linker could not load it");
	}
}

/* Why the process of mm is (partly) outside a module, into h->unprotected. */
static void unprotected(const char *mm, const char *env, size_t env_len, struct status_holder *h)
{
	if (h->heap_page && !h->heap_read && h->heap.state == SM_HEAP_INACTIVE)
		why(h, "heap module inactive: %.*s", (int)sizeof(h->heap.reason), h->heap.reason);
	if (h->preload_page)
		h->preload_read = read_page(mm, h->preload_page, &h->preload, sizeof(h->preload),
					    SM_PRELOAD_STATS_MAGIC);
	if (h->preload_page && !h->preload_read) {
		const struct sm_preload_stats *p = &h->preload;
		if (p->state == SM_PRELOAD_INACTIVE)
			why(h, "preload module inactive: %.*s", (int)sizeof(p->reason), p->reason);
		if (p->unreached) {
			char names[4 * sizeof(p->unreached_name[0])] = "";
			size_t used = 0;
			for (uint64_t i = 0; i < p->unreached && i < SM_PRELOAD_UNREACHED_MAX; i++)
				used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%.*s", i ? ", " : "",
							 (int)sizeof(p->unreached_name[i]), p->unreached_name[i]);
			why(h, "OpenSSL out of the preload module's reach in %s%s (heap mode covers it)", names,
			    p->unreached > SM_PRELOAD_UNREACHED_MAX ? " and more" : "");
		}
	}
	requested(mm, env, env_len, h);
}

/* Appends a copy of h (its own cmdline) to *v: 0 or -ENOMEM. */
static int push(struct status_holder **v, size_t *n, size_t *cap, const struct status_holder *h)
{
	char *cmdline = h->cmdline ? strdup(h->cmdline) : NULL;

	if (h->cmdline && !cmdline)
		return -ENOMEM;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct status_holder *w = realloc(*v, c * sizeof(*w));
		if (!w) {
			free(cmdline);
			return -ENOMEM;
		}
		*v = w;
		*cap = c;
	}
	(*v)[*n] = *h;
	(*v)[(*n)++].cmdline = cmdline;
	return 0;
}

static int scan_process(struct scan *sc, pid_t pid)
{
	struct status_report *r = sc->r;
	struct status_holder h;
	struct file_set files = { 0 };
	char mm[MM_SIZE];
	int rm, rf;

	memset(&h, 0, sizeof(h));
	h.pid = pid;
	snprintf(mm, sizeof(mm), "/proc/%d", (int)pid);
	rm = scan_maps(sc, mm, &h, &files);
	if (rm == 0) /* no mm: a kernel thread, or a zombie leader */
		rm = scan_task_maps(sc, pid, mm, sizeof(mm), &h, &files);
	rf = scan_fds(sc, pid, &h, &files);
	if (rm == -ENOENT || rm == -ESRCH || rf == -ENOENT) {
		free(files.v);
		return 0; /* gone meanwhile */
	}
	r->scanned++;
	if (rm < 0 || rf < 0) {
		if (r->uninspected < STATUS_MAX_UNINSPECTED)
			r->uninspected_pid[r->uninspected] = pid;
		r->uninspected++;
	}
	/* the module's figures: a read of its page through /proc/PID/mem */
	if (h.heap_page)
		h.heap_read = read_page(mm, h.heap_page, &h.heap, sizeof(h.heap), SM_HEAP_STATS_MAGIC);
	/* the initial environment: SECRETMEM_*, and the modules LD_PRELOAD
	 * asks for */
	char path[MM_SIZE + 16], *env;
	size_t env_len;
	int err = 0, rc = 0;
	snprintf(path, sizeof(path), "%s/environ", mm);
	env = read_strings(path, &env_len, &h.env_cut, &err);
	h.env_readable = env != NULL;
	if (!env && err == -ENOMEM)
		rc = -ENOMEM;
	if (h.env_cut) {
		if (r->env_cut < STATUS_MAX_UNINSPECTED)
			r->env_cut_pid[r->env_cut] = pid;
		r->env_cut++;
	}
	if (rm >= 0)
		unprotected(mm, env, env_len, &h);
	if (!rc && (h.unprotected[0] || h.heap_page || h.mappings || h.fds))
		rc = read_identity(pid, mm, env, env_len, &h);
	free(env);
	if (!rc && h.unprotected[0])
		rc = push(&r->unprot, &r->unprot_n, &sc->unprot_cap, &h);
	if (!rc && h.heap_page && !h.mappings && !h.fds)
		rc = push(&r->heap_only, &r->heap_n, &sc->heap_cap, &h);
	if (!rc && (h.mappings || h.fds)) {
		h.files = (unsigned)files.n;
		for (size_t i = 0; i < files.n; i++)
			if (set_add(&sc->all, files.v[i].dev, files.v[i].ino, -1) < 0)
				break;
		rc = push(&r->holders, &r->n, &sc->cap, &h);
	}
	free(h.cmdline);
	free(files.v);
	return rc;
}

static int pid_cmp(const void *a, const void *b)
{
	const struct status_holder *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int scan_all(struct scan *sc)
{
	struct status_report *r = sc->r;
	DIR *d = opendir("/proc");

	if (!d)
		return -errno;
	for (struct dirent *e; (e = readdir(d));) {
		char *end;
		long pid;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		if (scan_process(sc, (pid_t)pid) < 0) {
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	if (r->n) /* qsort(NULL, 0, ...) is undefined */
		qsort(r->holders, r->n, sizeof(*r->holders), pid_cmp);
	if (r->heap_n)
		qsort(r->heap_only, r->heap_n, sizeof(*r->heap_only), pid_cmp);
	if (r->unprot_n)
		qsort(r->unprot, r->unprot_n, sizeof(*r->unprot), pid_cmp);
	return 0;
}

/* The device of secretmem files, from a file of our own (if we can make one). */
static void learn_dev(struct scan *sc)
{
	struct stat st;
	int fd;

	if (secretmem_supported() != 0)
		return;
	fd = secretmem_memfd(O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0) {
		sc->dev = st.st_dev;
		sc->dev_known = 1;
	}
	close(fd);
}

/* ---- what this scan cannot see --------------------------------------- */

/* The initial PID namespace's inode number (PROC_PID_INIT_INO). */
#define PID_INIT_INO 0xEFFFFFFCu

static void read_visibility(struct status_visibility *v)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[2048];
	struct stat st;

	memset(v, 0, sizeof(*v));
	v->gid = -1;
	if (f) {
		/* the last mount on /proc is the one in effect */
		while (fgets(line, sizeof(line), f)) {
			char point[512], fstype[64], source[256], opts[1024] = "";
			char *dash = strstr(line, " - ");
			if (!dash || sscanf(line, "%*s %*s %*s %*s %511s", point) != 1 ||
			    strcmp(point, "/proc") != 0)
				continue;
			if (sscanf(dash + 3, "%63s %255s %1023s", fstype, source, opts) < 2 ||
			    strcmp(fstype, "proc") != 0)
				continue;
			v->hidepid[0] = v->subset[0] = '\0';
			v->gid = -1;
			for (char *o = strtok(opts, ","); o; o = strtok(NULL, ",")) {
				if (strncmp(o, "hidepid=", 8) == 0)
					snprintf(v->hidepid, sizeof(v->hidepid), "%s", o + 8);
				else if (strncmp(o, "subset=", 7) == 0)
					snprintf(v->subset, sizeof(v->subset), "%s", o + 7);
				else if (strncmp(o, "gid=", 4) == 0)
					v->gid = strtol(o + 4, NULL, 10);
			}
		}
		fclose(f);
	}
	/* hidepid=2/invisible hides other users' processes; 4/ptraceable all
	 * but the ones we may trace; 1/noaccess leaves them visible but
	 * unreadable (counted as not inspected) */
	int hides = strcmp(v->hidepid, "2") == 0 || strcmp(v->hidepid, "invisible") == 0 ||
		    strcmp(v->hidepid, "4") == 0 || strcmp(v->hidepid, "ptraceable") == 0;
	v->exempt = cli_has_cap(CAP_SYS_PTRACE) == 1;
	if (v->gid >= 0) {
		gid_t groups[256];
		int n = getgroups(256, groups);
		v->exempt |= getegid() == (gid_t)v->gid;
		for (int i = 0; i < n; i++)
			v->exempt |= groups[i] == (gid_t)v->gid;
	}
	v->hidden = hides && !v->exempt;
	v->pidns = stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != PID_INIT_INO;
}

/* ---- the report ------------------------------------------------------ */

/*
 * /proc is a proc file system that shows this process: an empty directory
 * (a chroot or a container without /proc mounted) or the proc mount of a
 * PID namespace we are not in would list no process, and the scan would
 * call that complete.  0, or -errno with r->error set.
 */
static int check_proc(struct status_report *r)
{
	struct statfs fs;
	struct stat st;

	if (statfs("/proc", &fs) != 0) {
		r->error = "/proc cannot be read";
		return -errno;
	}
	if (fs.f_type != PROC_SUPER_MAGIC) {
		r->error = "/proc is not a proc file system (mount -t proc proc /proc)";
		return -ENOTSUP;
	}
	if (stat("/proc/self/stat", &st) != 0) {
		int err = errno;
		r->error = "/proc does not show this process (the proc mount of another PID namespace)";
		return -err;
	}
	return 0;
}

int status_gather(struct status_report *r)
{
	struct scan sc = { .r = r };
	int rc;

	memset(r, 0, sizeof(*r));
	rc = check_proc(r);
	if (rc < 0)
		return rc;
	learn_dev(&sc);
	rc = scan_all(&sc);
	r->files = sc.all.n;
	free(sc.all.v);
	if (rc < 0)
		return rc;
	/* read after the scan: a holder that appeared meanwhile is not missed */
	r->hib = cli_hibernation(r->power_state, sizeof(r->power_state));
	read_visibility(&r->vis);
	for (size_t i = 0; i < r->n; i++) {
		r->mapped += r->holders[i].mapped;
		r->resident += r->holders[i].resident;
		r->fds += r->holders[i].fds;
	}
	r->root = geteuid() == 0;
	r->complete = !r->uninspected && !r->vis.hidden && !r->vis.pidns;
	/* the exit status of --quiet */
	if (r->n)
		r->quiet_exit = CLI_EXIT_STATUS_HELD;
	else
		r->quiet_exit = r->complete ? CLI_EXIT_STATUS_NONE : CLI_EXIT_STATUS_INCOMPLETE;
	r->time = (long long)time(NULL);
	return 0;
}

void status_free(struct status_report *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->holders[i].cmdline);
	for (size_t i = 0; i < r->heap_n; i++)
		free(r->heap_only[i].cmdline);
	for (size_t i = 0; i < r->unprot_n; i++)
		free(r->unprot[i].cmdline);
	free(r->holders);
	free(r->heap_only);
	free(r->unprot);
	r->holders = r->heap_only = r->unprot = NULL;
	r->n = r->heap_n = r->unprot_n = 0;
}
