/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * status.c - `secretmem status`: which processes hold secret memory?
 *
 * A secretmem file shows as "/secretmem (deleted)" both in /proc/PID/maps
 * (a mapping) and as the target of a /proc/PID/fd link (an open fd).  Every
 * such file keeps the kernel from hibernating (hibernation_available() checks
 * secretmem_active()), and the kernel keeps no counter, so we look at every
 * process.  Mappings are matched by name and, when this process can create a
 * secretmem file itself, by the device of the secretmem mount, so a deleted
 * ordinary file that happens to be called /secretmem is not counted.
 *
 * gather_status() fills one struct status_report: the holders (with their
 * command line, user, systemd unit or container, bytes, fds and what can be
 * seen from outside of libsecretmem: the shared library or the preload
 * module mapped, SECRETMEM_* variables of the initial environment), the
 * processes that could not be inspected, and whether some could not even
 * be seen (hidepid mount option of /proc, a PID namespace).  One renderer
 * per format (text, JSON, Prometheus text exposition) reads that report.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "secretmem.h"
#include "cli.h"
#include "../heap/heapstats.h"

struct file_id {
	dev_t dev;
	ino_t ino;
};

struct file_set {
	struct file_id *v;
	size_t n, cap;
};

/* Adds id unless present; returns 1 if added, 0 if present, -ENOMEM. */
static int set_add(struct file_set *s, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].dev == dev && s->v[i].ino == ino)
			return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct file_id *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct file_id){ dev, ino };
	return 1;
}

enum lib_seen { LIB_NONE, LIB_SHARED, LIB_PRELOAD, LIB_HEAP };

struct holder {
	pid_t pid;
	uid_t uid;
	char comm[64];
	char cmdline[1024];          /* arguments joined by spaces, raw bytes  */
	char unit[256];              /* systemd unit from the cgroup, "" if none */
	char container[160];         /* container/namespace, "" if none         */
	int lib;                     /* enum lib_seen                           */
	char lib_env[256];           /* SECRETMEM_* of the initial environment  */
	int env_readable;
	unsigned long long mapped;   /* bytes: smaps Size of secretmem mappings */
	unsigned long long resident; /* bytes: smaps Rss of those mappings      */
	unsigned mappings;
	unsigned fds;
	unsigned files;              /* distinct secretmem files (by inode)    */
	/* the heap module (secretmem-heap(7)): its figures page */
	unsigned long heap_page;     /* address of the page, 0 if none          */
	int heap_read;               /* 0 read, else -errno (ptrace access)     */
	struct sm_heap_stats heap;
};

#define MAX_UNINSPECTED 64

struct scan {
	pid_t uninspected_pid[MAX_UNINSPECTED];
	int dev_known;
	dev_t dev;                   /* device of secretmem files */
	struct holder *h;
	size_t n, cap;
	struct holder *heap_only;    /* heap module, no secret memory at all */
	size_t heap_n, heap_cap;
	unsigned uninspected;        /* processes we could not read */
	unsigned scanned;
	struct file_set all;
};

static int is_secretmem_path(const char *s)
{
	return strcmp(s, CLI_SECRETMEM_NAME) == 0;
}

/*
 * Reads /proc/PID/smaps into h.  Returns 0, -EACCES/-EPERM when not
 * allowed, -ENOENT when the process is gone.
 */
static int scan_maps(struct scan *sc, pid_t pid, struct holder *h, struct file_set *files)
{
	char path[64], line[4096];
	FILE *f;
	int in = 0;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
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

		if (sscanf(line, "%lx-%lx %7s %llx %x:%x %llu %n", &start, &end, perms, &off,
			   &major_nr, &minor_nr, &ino, &name_at) >= 7 && name_at > 0) {
			char *name = line + name_at;
			name[strcspn(name, "\n")] = '\0';
			const char *base = strrchr(name, '/');
			base = base ? base + 1 : name;
			if (strncmp(base, "libsecretmem-preload.so", 23) == 0)
				h->lib = LIB_PRELOAD;
			else if (strncmp(base, "libsecretmem-heap.so", 20) == 0)
				h->lib = LIB_HEAP;
			else if (strcmp(name, "/memfd:" SM_HEAP_STATS_NAME " (deleted)") == 0 && !h->heap_page)
				h->heap_page = start;
			else if (strncmp(base, "libsecretmem.so", 15) == 0 && h->lib == LIB_NONE)
				h->lib = LIB_SHARED;
			in = is_secretmem_path(name) &&
			     (!sc->dev_known || (major(sc->dev) == major_nr && minor(sc->dev) == minor_nr));
			if (in) {
				h->mappings++;
				if (set_add(files, makedev(major_nr, minor_nr), (ino_t)ino) < 0)
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
	return err ? -err : 0;
}

static int scan_fds(struct scan *sc, pid_t pid, struct holder *h, struct file_set *files)
{
	char path[64], link[512], target[256];
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
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
		h->fds++;
		if (set_add(files, st.st_dev, st.st_ino) < 0)
			break;
	}
	closedir(d);
	return 0;
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* The systemd unit and the container of a process, from its cgroup path
 * (cgroup v2 "0::" line, else the v1 name=systemd hierarchy). */
static void unit_from_cgroup(const char *cg, struct holder *h)
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

static void read_cgroup(pid_t pid, struct holder *h)
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

static void read_identity(pid_t pid, struct holder *h)
{
	char path[64], buf[4096];
	const char *p;
	struct stat mine, theirs;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (cli_read_file(path, h->comm, sizeof(h->comm)) < 0)
		snprintf(h->comm, sizeof(h->comm), "?");
	h->uid = (uid_t)-1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (cli_read_file(path, buf, sizeof(buf)) >= 0 && (p = strstr(buf, "\nUid:")))
		h->uid = (uid_t)strtoul(p + 5, NULL, 10);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = cli_read_file(path, h->cmdline, sizeof(h->cmdline)); /* NUL-separated */
	for (ssize_t i = 0; i < n; i++)
		if (h->cmdline[i] == '\0')
			h->cmdline[i] = ' ';
	while (n > 0 && h->cmdline[n - 1] == ' ')
		h->cmdline[--n] = '\0';
	if (n <= 0)
		snprintf(h->cmdline, sizeof(h->cmdline), "[%s]", h->comm);
	read_cgroup(pid, h);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	if (!h->container[0] && stat("/proc/self/ns/pid", &mine) == 0 && stat(path, &theirs) == 0 &&
	    mine.st_ino != theirs.st_ino)
		snprintf(h->container, sizeof(h->container), "another PID namespace");
	/* the initial environment: SECRETMEM_* and whether the preload module
	 * was asked for (a process may change its environment later) */
	static char env[65536];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	n = cli_read_file(path, env, sizeof(env));
	h->env_readable = n >= 0;
	size_t used = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(env + i) + 1) {
		if (strncmp(env + i, "SECRETMEM_", 10) != 0 || used + 2 >= sizeof(h->lib_env))
			continue;
		used += (size_t)snprintf(h->lib_env + used, sizeof(h->lib_env) - used, "%s%s",
					 used ? " " : "", env + i);
		if (used >= sizeof(h->lib_env))
			used = sizeof(h->lib_env) - 1;
	}
}

static int scan_process(struct scan *sc, pid_t pid)
{
	struct holder h;
	struct file_set files = { 0 };
	int rm, rf;

	memset(&h, 0, sizeof(h));
	h.pid = pid;
	rm = scan_maps(sc, pid, &h, &files);
	rf = scan_fds(sc, pid, &h, &files);
	if (rm == -ENOENT || rm == -ESRCH || rf == -ENOENT) {
		free(files.v);
		return 0; /* gone meanwhile */
	}
	sc->scanned++;
	if (rm < 0 || rf < 0) {
		if (sc->uninspected < MAX_UNINSPECTED)
			sc->uninspected_pid[sc->uninspected] = pid;
		sc->uninspected++;
	}
	if (h.heap_page) {
		/* the module's figures: a read of its page through /proc/PID/mem */
		char mem[64];
		snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)pid);
		int fd = open(mem, O_RDONLY | O_CLOEXEC);
		h.heap_read = fd < 0 ? -errno : 0;
		if (fd >= 0) {
			ssize_t got = pread(fd, &h.heap, sizeof(h.heap), (off_t)h.heap_page);
			if (got != (ssize_t)sizeof(h.heap) || h.heap.magic != SM_HEAP_STATS_MAGIC)
				h.heap_read = got < 0 ? -errno : -EIO;
			close(fd);
		}
	}
	if (h.heap_page && !h.mappings && !h.fds) {
		read_identity(pid, &h);
		if (sc->heap_n == sc->heap_cap) {
			size_t cap = sc->heap_cap ? sc->heap_cap * 2 : 8;
			struct holder *v = realloc(sc->heap_only, cap * sizeof(*v));
			if (!v) {
				free(files.v);
				return -ENOMEM;
			}
			sc->heap_only = v;
			sc->heap_cap = cap;
		}
		sc->heap_only[sc->heap_n++] = h;
	}
	if (h.mappings || h.fds) {
		h.files = (unsigned)files.n;
		for (size_t i = 0; i < files.n; i++)
			if (set_add(&sc->all, files.v[i].dev, files.v[i].ino) < 0)
				break;
		read_identity(pid, &h);
		if (sc->n == sc->cap) {
			size_t cap = sc->cap ? sc->cap * 2 : 16;
			struct holder *v = realloc(sc->h, cap * sizeof(*v));
			if (!v) {
				free(files.v);
				return -ENOMEM;
			}
			sc->h = v;
			sc->cap = cap;
		}
		sc->h[sc->n++] = h;
	}
	free(files.v);
	return 0;
}

static int pid_cmp(const void *a, const void *b)
{
	const struct holder *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int scan_all(struct scan *sc)
{
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
	if (sc->n) /* qsort(NULL, 0, ...) is undefined */
		qsort(sc->h, sc->n, sizeof(*sc->h), pid_cmp);
	if (sc->heap_n)
		qsort(sc->heap_only, sc->heap_n, sizeof(*sc->heap_only), pid_cmp);
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

struct visibility {
	char hidepid[32];     /* the /proc mount's hidepid= value, "" if none */
	char subset[32];      /* subset= value, "" if none                     */
	long gid;             /* gid= value, -1 if none                        */
	int exempt;           /* we see everything anyway (CAP_SYS_PTRACE, gid) */
	int hidden;           /* other users' processes may be invisible       */
	int pidns;            /* we are in a PID namespace below the initial one */
};

static void read_visibility(struct visibility *v)
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

struct status_report {
	struct scan sc;
	struct visibility vis;
	int hib;                  /* enum cli_hibernation */
	char power_state[256];
	unsigned long long mapped, resident;
	unsigned fds;
	int complete;             /* every process seen and inspected */
	long long time;           /* when the scan ended (Unix time)   */
};

static int gather_status(struct status_report *r)
{
	int rc;

	memset(r, 0, sizeof(*r));
	learn_dev(&r->sc);
	rc = scan_all(&r->sc);
	if (rc < 0)
		return rc;
	/* read after the scan: a holder that appeared meanwhile is not missed */
	r->hib = cli_hibernation(r->power_state, sizeof(r->power_state));
	read_visibility(&r->vis);
	for (size_t i = 0; i < r->sc.n; i++) {
		r->mapped += r->sc.h[i].mapped;
		r->resident += r->sc.h[i].resident;
		r->fds += r->sc.h[i].fds;
	}
	r->complete = !r->sc.uninspected && !r->vis.hidden && !r->vis.pidns;
	r->time = (long long)time(NULL);
	return 0;
}

static void free_status(struct status_report *r)
{
	free(r->sc.h);
	free(r->sc.heap_only);
	free(r->sc.all.v);
}

/* The exit status of --quiet. */
static int status_code(const struct status_report *r)
{
	if (r->sc.n)
		return CLI_EXIT_STATUS_HELD;
	return r->complete ? CLI_EXIT_STATUS_NONE : CLI_EXIT_STATUS_INCOMPLETE;
}

/* ---- rendering helpers ----------------------------------------------- */

static const char *user_name(uid_t uid, char *buf, size_t size)
{
	struct passwd *pw = uid == (uid_t)-1 ? NULL : getpwuid(uid);

	if (pw)
		snprintf(buf, size, "%s", pw->pw_name);
	else if (uid == (uid_t)-1)
		snprintf(buf, size, "?");
	else
		snprintf(buf, size, "%u", (unsigned)uid);
	return buf;
}

/* A process name or command line made safe for a terminal: \xNN for control
 * and non-ASCII bytes and for the backslash (a name can hold escape
 * sequences). */
static const char *printable(const char *s, char *buf, size_t size)
{
	size_t used = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && used + 5 < size; p++) {
		if (*p < 0x20 || *p >= 0x7f || *p == '\\')
			used += (size_t)snprintf(buf + used, size - used, "\\x%02x", *p);
		else
			buf[used++] = (char)*p;
	}
	buf[used] = '\0';
	return buf;
}

/* The hibernation state: name for JSON. */
static const char *hibernation_state(int h, size_t holders)
{
	if (h == CLI_HIBERNATION_UNSUPPORTED)
		return "not supported";
	if (h == CLI_HIBERNATION_AVAILABLE)
		return "available";
	return holders ? "blocked" : "unavailable";
}

/* What status can tell of libsecretmem in a process, from outside. */
static const char *lib_mode(const struct holder *h, char *buf, size_t size)
{
	const char *openssl = strstr(h->lib_env, "SECRETMEM_OPENSSL=");
	char mode[32] = "secure";

	if (openssl)
		snprintf(mode, sizeof(mode), "%.*s", (int)strcspn(openssl + 18, " "), openssl + 18);
	if (h->lib == LIB_HEAP)
		snprintf(buf, size, "heap module (secretmem exec --mode heap)");
	else if (h->lib == LIB_PRELOAD)
		snprintf(buf, size, "preload module (SECRETMEM_OPENSSL=%s%s)", mode,
			 openssl ? "" : " by default");
	else if (h->lib == LIB_SHARED)
		snprintf(buf, size, "libsecretmem.so");
	else
		snprintf(buf, size, "not seen (static libsecretmem, or memfd_secret used directly)");
	return buf;
}

static const char *lib_key(const struct holder *h)
{
	return h->lib == LIB_HEAP ? "heap" : h->lib == LIB_PRELOAD ? "preload" :
	       h->lib == LIB_SHARED ? "shared-library" : "not seen";
}

/* The heap module's figures in one line of text. */
static const char *heap_text(const struct holder *h, char *buf, size_t size)
{
	const struct sm_heap_stats *s = &h->heap;

	if (h->heap_read)
		snprintf(buf, size, "figures unreadable (%s: root, or ptrace access to the process, reads them)",
			 cli_strerror(-h->heap_read));
	else if (s->state == SM_HEAP_STOOD_DOWN)
		snprintf(buf, size, "stood down (the OpenSSL preload module is loaded too): every block in ordinary "
			 "memory, %llu bytes in %llu blocks", (unsigned long long)s->plain_bytes,
			 (unsigned long long)s->plain_blocks);
	else
		snprintf(buf, size, "secret %llu bytes, locked fallback %llu bytes, plain %llu bytes in %llu "
			 "blocks (%llu refused secret memory, %llu above the huge threshold of %llu), "
			 "early %llu bytes%s",
			 (unsigned long long)s->secret_bytes, (unsigned long long)s->fallback_bytes,
			 (unsigned long long)s->plain_bytes, (unsigned long long)s->plain_blocks,
			 (unsigned long long)s->refusals, (unsigned long long)s->huge_allocs,
			 (unsigned long long)s->huge_threshold, (unsigned long long)s->early_bytes,
			 s->require ? ", SECRETMEM_REQUIRE" : "");
	return buf;
}

static void json_heap(struct json *j, const struct holder *h)
{
	const struct sm_heap_stats *s = &h->heap;

	if (!h->heap_page) {
		json_null(j, "heap");
		return;
	}
	json_object_begin(j, "heap");
	json_bool(j, "readable", h->heap_read == 0);
	if (h->heap_read == 0) {
		json_string(j, "state", s->state == SM_HEAP_STOOD_DOWN ? "stood down" : "active");
		json_uint(j, "secret_bytes", s->secret_bytes);
		json_uint(j, "fallback_bytes", s->fallback_bytes);
		json_uint(j, "plain_bytes", s->plain_bytes);
		json_uint(j, "plain_blocks", s->plain_blocks);
		json_uint(j, "early_bytes", s->early_bytes);
		json_uint(j, "refusals", s->refusals);
		json_uint(j, "huge_allocations", s->huge_allocs);
		json_uint(j, "huge_threshold", s->huge_threshold);
		json_bool(j, "require", s->require != 0);
	}
	json_object_end(j);
}

static const char *plural(size_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void render_verdict(const struct status_report *r, FILE *out)
{
	size_t n = r->sc.n;

	if (r->hib == CLI_HIBERNATION_UNSUPPORTED)
		fprintf(out, "verdict: this machine cannot hibernate (no hibernation support); %zu "
			"process%s hold%s secret memory%s\n", n, plural(n, "", "es"), plural(n, "s", ""),
			r->complete ? "" : " (among those it could see: a process it could not see or "
					   "inspect may hold more)");
	else if (n)
		fprintf(out, "verdict: hibernation is blocked by %zu process%s holding secret memory\n",
			n, plural(n, "", "es"));
	else if (r->hib == CLI_HIBERNATION_AVAILABLE)
		fprintf(out, "verdict: hibernation is not blocked (available)%s\n",
			r->complete ? "" : "; this tool could not see or inspect every process");
	else
		fprintf(out, "verdict: hibernation is unavailable, but not because of secret memory "
			"this tool could inspect (nohibernate, lockdown%s)\n",
			r->complete ? "" : ", or a process it could not see or inspect");
	if (n && r->hib != CLI_HIBERNATION_UNSUPPORTED)
		fprintf(out, "to do: stop or restart the holders below (systemctl restart UNIT), or run "
			"them with SECRETMEM_RELEASE_IDLE=1 so that libsecretmem gives idle secret "
			"memory back\n");
}

static void render_visibility(const struct status_report *r, FILE *out)
{
	const struct visibility *v = &r->vis;

	if (r->sc.uninspected) {
		fprintf(out, "not inspected: %u process%s (permission denied%s):", r->sc.uninspected,
			plural(r->sc.uninspected, "", "es"),
			geteuid() == 0 ? " even to root: another namespace or a security module" :
					 "; run as root to see all");
		for (unsigned i = 0; i < r->sc.uninspected && i < MAX_UNINSPECTED; i++)
			fprintf(out, " %d", (int)r->sc.uninspected_pid[i]);
		fprintf(out, "%s\n", r->sc.uninspected > MAX_UNINSPECTED ? " ..." : "");
	}
	if (v->hidden)
		fprintf(out, "not seen: /proc is mounted with hidepid=%s%s: other users' processes are "
			"invisible to this one (run as root or in the gid= group)\n", v->hidepid,
			v->subset[0] ? " (and subset=pid)" : "");
	if (v->pidns)
		fprintf(out, "not seen: this process runs in a PID namespace (a container): holders "
			"on the host and in other containers cannot be seen; run on the host\n");
}

/* ---- renderers --------------------------------------------------------- */

static void render_status_text(const struct status_report *r, FILE *out)
{
	char user[64], buf[2048], mode[160];

	render_verdict(r, out);
	if (r->sc.n) {
		fprintf(out, "%-8s %-12s %12s %12s %5s %4s %s\n", "PID", "USER", "MAPPED", "RESIDENT",
			"FILES", "FDS", "COMMAND");
		for (size_t i = 0; i < r->sc.n; i++) {
			const struct holder *p = &r->sc.h[i];
			fprintf(out, "%-8d %-12s %12llu %12llu %5u %4u %s\n", (int)p->pid,
				user_name(p->uid, user, sizeof(user)), p->mapped, p->resident, p->files,
				p->fds, printable(p->comm, buf, sizeof(buf)));
			fprintf(out, "         command line: %s\n", printable(p->cmdline, buf, sizeof(buf)));
			if (p->unit[0])
				fprintf(out, "         unit: %s\n", printable(p->unit, buf, sizeof(buf)));
			if (p->container[0])
				fprintf(out, "         container: %s\n", printable(p->container, buf,
										sizeof(buf)));
			fprintf(out, "         libsecretmem: %s\n", lib_mode(p, mode, sizeof(mode)));
			if (p->heap_page)
				fprintf(out, "         heap: %s\n", heap_text(p, buf, sizeof(buf)));
			if (p->lib_env[0])
				fprintf(out, "         environment: %s\n",
					printable(p->lib_env, buf, sizeof(buf)));
			if (p->fds)
				fprintf(out, "         holds %u secretmem fd%s: pidfd_getfd can take %s\n",
					p->fds, plural(p->fds, "", "s"), plural(p->fds, "it", "them"));
		}
	} else {
		fprintf(out, "no process holds secret memory\n");
	}
	for (size_t i = 0; i < r->sc.heap_n; i++) {
		const struct holder *p = &r->sc.heap_only[i];
		fprintf(out, "heap mode without secret memory: %d %s (%s): %s\n", (int)p->pid,
			printable(p->comm, buf, sizeof(buf)), user_name(p->uid, user, sizeof(user)),
			heap_text(p, mode, sizeof(mode)));
	}
	fprintf(out, "total: %zu process%s, %llu bytes mapped, %llu bytes resident, "
		"%zu secretmem file%s\n", r->sc.n, plural(r->sc.n, "", "es"), r->mapped, r->resident,
		r->sc.all.n, plural(r->sc.all.n, "", "s"));
	render_visibility(r, out);
	if (r->hib == CLI_HIBERNATION_UNSUPPORTED)
		fprintf(out, "hibernation: not supported on this machine (/sys/power/state: \"%s\")\n",
			r->power_state);
	else if (r->hib == CLI_HIBERNATION_AVAILABLE)
		fprintf(out, "hibernation: available\n");
	else if (r->sc.n)
		fprintf(out, "hibernation: blocked by %zu process%s\n", r->sc.n, plural(r->sc.n, "", "es"));
	else
		fprintf(out, "hibernation: unavailable, but not because of secret memory this tool could "
			"inspect (nohibernate, lockdown%s)\n",
			r->complete ? "" : ", or a process it could not see or inspect");
	fflush(out);
}

static void render_status_json(const struct status_report *r, FILE *out)
{
	char user[64], mode[160];
	struct json j;

	json_init(&j, out);
	json_object_begin(&j, NULL);
	json_string(&j, "tool", "secretmem");
	json_string(&j, "version", SECRETMEM_VERSION_STRING);
	json_string(&j, "command", "status");
	json_array_begin(&j, "processes");
	for (size_t i = 0; i < r->sc.n; i++) {
		const struct holder *p = &r->sc.h[i];
		json_object_begin(&j, NULL);
		json_int(&j, "pid", p->pid);
		json_string(&j, "command", p->comm);
		json_string(&j, "cmdline", p->cmdline);
		json_string(&j, "user", user_name(p->uid, user, sizeof(user)));
		if (p->uid == (uid_t)-1)
			json_null(&j, "uid");
		else
			json_uint(&j, "uid", p->uid);
		json_string(&j, "unit", p->unit[0] ? p->unit : NULL);
		json_string(&j, "container", p->container[0] ? p->container : NULL);
		json_uint(&j, "mapped_bytes", p->mapped);
		json_uint(&j, "resident_bytes", p->resident);
		json_uint(&j, "mappings", p->mappings);
		json_uint(&j, "fds", p->fds);
		json_uint(&j, "files", p->files);
		json_object_begin(&j, "libsecretmem");
		json_string(&j, "seen", lib_key(p));
		json_string(&j, "mode", lib_mode(p, mode, sizeof(mode)));
		json_string(&j, "environment", p->env_readable ? p->lib_env : NULL);
		json_object_end(&j);
		json_heap(&j, p);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "heap_without_secret_memory");
	for (size_t i = 0; i < r->sc.heap_n; i++) {
		const struct holder *p = &r->sc.heap_only[i];
		json_object_begin(&j, NULL);
		json_int(&j, "pid", p->pid);
		json_string(&j, "command", p->comm);
		json_string(&j, "cmdline", p->cmdline);
		json_string(&j, "user", user_name(p->uid, user, sizeof(user)));
		json_heap(&j, p);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_begin(&j, "totals");
	json_uint(&j, "processes", r->sc.n);
	json_uint(&j, "mapped_bytes", r->mapped);
	json_uint(&j, "resident_bytes", r->resident);
	json_uint(&j, "fds", r->fds);
	json_uint(&j, "files", r->sc.all.n);
	json_object_end(&j);
	json_uint(&j, "scanned", r->sc.scanned);
	json_uint(&j, "uninspected", r->sc.uninspected);
	json_array_begin(&j, "uninspected_pids");
	for (unsigned i = 0; i < r->sc.uninspected && i < MAX_UNINSPECTED; i++)
		json_int(&j, NULL, r->sc.uninspected_pid[i]);
	json_array_end(&j);
	json_object_begin(&j, "visibility");
	json_bool(&j, "complete", r->complete);
	json_string(&j, "hidepid", r->vis.hidepid[0] ? r->vis.hidepid : NULL);
	json_string(&j, "subset", r->vis.subset[0] ? r->vis.subset : NULL);
	if (r->vis.gid >= 0)
		json_int(&j, "gid", r->vis.gid);
	else
		json_null(&j, "gid");
	json_bool(&j, "hidden_processes_possible", r->vis.hidden);
	json_bool(&j, "pid_namespace", r->vis.pidns);
	json_object_end(&j);
	json_object_begin(&j, "hibernation");
	json_string(&j, "state", hibernation_state(r->hib, r->sc.n));
	json_uint(&j, "blocking_processes", r->hib == CLI_HIBERNATION_UNSUPPORTED ? 0 : r->sc.n);
	json_string(&j, "power_state", r->power_state);
	json_object_end(&j);
	json_int(&j, "quiet_exit_status", status_code(r));
	json_object_end(&j);
	json_finish(&j);
}

/* A Prometheus label value: backslash, quote and newline escaped; bytes
 * that are not printable ASCII as \xNN (itself escaped), so the file is
 * always valid UTF-8. */
static void prom_label(FILE *out, const char *s)
{
	char buf[2048];

	printable(s, buf, sizeof(buf));
	fputc('"', out);
	for (const char *p = buf; *p; p++) {
		if (*p == '\\' || *p == '"')
			fputc('\\', out);
		fputc(*p, out);
	}
	fputc('"', out);
}

static void prom_metric(FILE *out, const char *name, const char *help, unsigned long long v)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", name, help, name, name, v);
}

static void render_status_prometheus(const struct status_report *r, FILE *out)
{
	static const struct {
		const char *name, *help;
		int resident;
	} per[] = {
		{ "secretmem_process_mapped_bytes", "Secret memory mapped by a process, in bytes.", 0 },
		{ "secretmem_process_resident_bytes", "Secret memory resident in a process, in bytes.", 1 },
	};

	prom_metric(out, "secretmem_holders", "Processes that hold secret memory (memfd_secret).",
		    r->sc.n);
	prom_metric(out, "secretmem_mapped_bytes", "Secret memory mapped by all holders, in bytes.",
		    r->mapped);
	prom_metric(out, "secretmem_resident_bytes",
		    "Secret memory resident in all holders, in bytes.", r->resident);
	prom_metric(out, "secretmem_fds", "Open secret memory file descriptors.", r->fds);
	prom_metric(out, "secretmem_files", "Distinct secret memory files.", r->sc.all.n);
	prom_metric(out, "secretmem_hibernation_supported", "1 if this machine can hibernate.",
		    r->hib != CLI_HIBERNATION_UNSUPPORTED);
	prom_metric(out, "secretmem_hibernation_blocked",
		    "1 if secret memory keeps this machine from hibernating.",
		    r->hib != CLI_HIBERNATION_UNSUPPORTED && r->sc.n > 0);
	prom_metric(out, "secretmem_uninspected_processes",
		    "Processes whose memory could not be inspected.", r->sc.uninspected);
	prom_metric(out, "secretmem_scan_complete",
		    "1 if every process could be seen and inspected (no hidepid, no PID namespace).",
		    r->complete);
	prom_metric(out, "secretmem_scan_timestamp_seconds", "When the scan ended (Unix time).",
		    (unsigned long long)r->time);
	for (size_t k = 0; k < 2; k++) {
		fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", per[k].name, per[k].help, per[k].name);
		for (size_t i = 0; i < r->sc.n; i++) {
			const struct holder *p = &r->sc.h[i];
			fprintf(out, "%s{pid=\"%d\",command=", per[k].name, (int)p->pid);
			prom_label(out, p->comm);
			fputs(",unit=", out);
			prom_label(out, p->unit);
			fprintf(out, "} %llu\n", per[k].resident ? p->resident : p->mapped);
		}
	}
	static const struct {
		const char *name, *help;
		size_t off;
	} heap[] = {
		{ "secretmem_heap_secret_bytes", "Heap module: secret memory of the allocator, in bytes.",
		  offsetof(struct sm_heap_stats, secret_bytes) },
		{ "secretmem_heap_fallback_bytes", "Heap module: locked fallback memory of the allocator, in bytes.",
		  offsetof(struct sm_heap_stats, fallback_bytes) },
		{ "secretmem_heap_plain_bytes", "Heap module: live blocks in ordinary memory, in bytes.",
		  offsetof(struct sm_heap_stats, plain_bytes) },
		{ "secretmem_heap_early_bytes", "Heap module: live blocks in its static arena (ordinary memory), in bytes.",
		  offsetof(struct sm_heap_stats, early_bytes) },
	};
	for (size_t k = 0; k < sizeof(heap) / sizeof(heap[0]); k++) {
		fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", heap[k].name, heap[k].help, heap[k].name);
		for (int list = 0; list < 2; list++) {
			const struct holder *v = list ? r->sc.heap_only : r->sc.h;
			size_t n = list ? r->sc.heap_n : r->sc.n;
			for (size_t i = 0; i < n; i++) {
				const struct holder *p = &v[i];
				if (!p->heap_page || p->heap_read)
					continue;
				uint64_t val;
				memcpy(&val, (const char *)&p->heap + heap[k].off, sizeof(val));
				fprintf(out, "%s{pid=\"%d\",command=", heap[k].name, (int)p->pid);
				prom_label(out, p->comm);
				fprintf(out, "} %llu\n", (unsigned long long)val);
			}
		}
	}
}

/* Writes the Prometheus file atomically: a temporary file in the same
 * directory, fsync, rename.  0 or -errno. */
static int write_prometheus(const struct status_report *r, const char *path)
{
	char tmp[4096];
	int fd, rc = 0;
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		close(fd);
		unlink(tmp);
		return rc;
	}
	render_status_prometheus(r, f);
	if (fflush(f) != 0 || ferror(f))
		rc = -(errno ? errno : EIO);
	if (!rc && fsync(fd) != 0)
		rc = -errno;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* ---- the command ----------------------------------------------------- */

static int usage_status(FILE *out, int rc)
{
	fputs("usage: secretmem status [--json | --quiet] [--prometheus FILE]\n"
	      "Says whether secret memory blocks hibernation, then lists the processes that\n"
	      "hold it (a mapping or an open fd): PID, user, command line, systemd unit or\n"
	      "container, bytes mapped and resident, fds, libsecretmem as seen from outside;\n"
	      "then the processes it could not inspect or see.  --prometheus writes the\n"
	      "figures for node_exporter's textfile collector (atomically).  Exit with\n"
	      "--quiet: 0 nothing holds secret memory, 1 something does, 2 could not see or\n"
	      "inspect every process; otherwise 0.  64 usage error, 71 system error.\n",
	      out);
	return rc;
}

int cmd_status(int argc, char **argv)
{
	struct status_report r;
	const char *prom = NULL;
	int json = 0, quiet = 0, rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
			quiet = 1;
		} else if (strcmp(argv[i], "--prometheus") == 0 && i + 1 < argc && argv[i + 1][0]) {
			prom = argv[++i];
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			return usage_status(stdout, CLI_EXIT_OK);
		} else {
			fprintf(stderr, "secretmem status: unknown argument '%s'\n", argv[i]);
			return usage_status(stderr, CLI_EXIT_USAGE);
		}
	}
	if (json && quiet) {
		fprintf(stderr, "secretmem status: --json and --quiet exclude each other\n");
		return usage_status(stderr, CLI_EXIT_USAGE);
	}
	rc = gather_status(&r);
	if (rc < 0) {
		fprintf(stderr, "secretmem status: cannot scan /proc: %s\n", cli_strerror(-rc));
		free_status(&r);
		return CLI_EXIT_OSERR;
	}
	if (prom) {
		rc = write_prometheus(&r, prom);
		if (rc < 0) {
			fprintf(stderr, "secretmem status: cannot write %s: %s\n", prom, cli_strerror(-rc));
			free_status(&r);
			return CLI_EXIT_OSERR;
		}
	}
	if (json)
		render_status_json(&r, stdout);
	else if (!quiet)
		render_status_text(&r, stdout);
	rc = quiet ? status_code(&r) : CLI_EXIT_OK;
	free_status(&r);
	return rc;
}
