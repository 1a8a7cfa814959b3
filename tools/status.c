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
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "secretmem.h"
#include "cli.h"

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

struct holder {
	pid_t pid;
	uid_t uid;
	char comm[64];
	unsigned long long mapped;   /* bytes: smaps Size of secretmem mappings */
	unsigned long long resident; /* bytes: smaps Rss of those mappings      */
	unsigned mappings;
	unsigned fds;
	unsigned files;              /* distinct secretmem files (by inode)    */
};

struct scan {
	int dev_known;
	dev_t dev;                   /* device of secretmem files */
	struct holder *h;
	size_t n, cap;
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
	char path[64], line[1024];
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

static void read_identity(pid_t pid, struct holder *h)
{
	char path[64], buf[4096];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (cli_read_file(path, h->comm, sizeof(h->comm)) < 0)
		snprintf(h->comm, sizeof(h->comm), "?");
	h->uid = (uid_t)-1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (cli_read_file(path, buf, sizeof(buf)) >= 0 && (p = strstr(buf, "\nUid:")))
		h->uid = (uid_t)strtoul(p + 5, NULL, 10);
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
	if (rm < 0 || rf < 0)
		sc->uninspected++;
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
	qsort(sc->h, sc->n, sizeof(*sc->h), pid_cmp);
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

/* A process name made safe for a terminal: \xNN for control and non-ASCII
 * bytes (a name can hold escape sequences). */
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

/* The hibernation line: state name for JSON, text for people. */
static const char *hibernation_state(int h, size_t holders)
{
	if (h == CLI_HIBERNATION_UNSUPPORTED)
		return "not supported";
	if (h == CLI_HIBERNATION_AVAILABLE)
		return "available";
	return holders ? "blocked" : "unavailable";
}

static int usage_status(FILE *out, int rc)
{
	fputs("usage: secretmem status [--json]\n"
	      "Lists the processes that hold secret memory (a mapping or an open fd), with\n"
	      "the bytes mapped and resident, then totals and whether hibernation is blocked.\n",
	      out);
	return rc;
}

int cmd_status(int argc, char **argv)
{
	struct scan sc;
	char state[256], user[64], name[256];
	unsigned long long mapped = 0, resident = 0;
	unsigned fds = 0;
	int json = 0, h, rc;

	rc = cli_parse_json_option(argc, argv, "status", usage_status, &json);
	if (rc >= 0)
		return rc;
	memset(&sc, 0, sizeof(sc));
	learn_dev(&sc);
	rc = scan_all(&sc);
	if (rc < 0) {
		fprintf(stderr, "secretmem status: cannot scan /proc: %s\n", cli_strerror(-rc));
		free(sc.h);
		free(sc.all.v);
		return CLI_EXIT_OSERR;
	}
	/* read after the scan: a holder that appeared meanwhile is not missed */
	h = cli_hibernation(state, sizeof(state));
	for (size_t i = 0; i < sc.n; i++) {
		mapped += sc.h[i].mapped;
		resident += sc.h[i].resident;
		fds += sc.h[i].fds;
	}
	const char *hstate = hibernation_state(h, sc.n);

	if (json) {
		struct json j;
		json_init(&j, stdout);
		json_object_begin(&j, NULL);
		json_string(&j, "tool", "secretmem");
		json_string(&j, "version", SECRETMEM_VERSION_STRING);
		json_string(&j, "command", "status");
		json_array_begin(&j, "processes");
		for (size_t i = 0; i < sc.n; i++) {
			const struct holder *p = &sc.h[i];
			json_object_begin(&j, NULL);
			json_int(&j, "pid", p->pid);
			json_string(&j, "command", p->comm);
			json_string(&j, "user", user_name(p->uid, user, sizeof(user)));
			if (p->uid == (uid_t)-1)
				json_null(&j, "uid");
			else
				json_uint(&j, "uid", p->uid);
			json_uint(&j, "mapped_bytes", p->mapped);
			json_uint(&j, "resident_bytes", p->resident);
			json_uint(&j, "mappings", p->mappings);
			json_uint(&j, "fds", p->fds);
			json_uint(&j, "files", p->files);
			json_object_end(&j);
		}
		json_array_end(&j);
		json_object_begin(&j, "totals");
		json_uint(&j, "processes", sc.n);
		json_uint(&j, "mapped_bytes", mapped);
		json_uint(&j, "resident_bytes", resident);
		json_uint(&j, "fds", fds);
		json_uint(&j, "files", sc.all.n);
		json_object_end(&j);
		json_uint(&j, "scanned", sc.scanned);
		json_uint(&j, "uninspected", sc.uninspected);
		json_object_begin(&j, "hibernation");
		json_string(&j, "state", hstate);
		json_uint(&j, "blocking_processes", h == CLI_HIBERNATION_UNSUPPORTED ? 0 : sc.n);
		json_string(&j, "power_state", state);
		json_object_end(&j);
		json_object_end(&j);
		json_finish(&j);
	} else {
		if (sc.n == 0) {
			printf("no process holds secret memory\n");
		} else {
			printf("%-8s %-12s %12s %12s %5s %4s %s\n", "PID", "USER", "MAPPED", "RESIDENT",
			       "FILES", "FDS", "COMMAND");
			for (size_t i = 0; i < sc.n; i++) {
				const struct holder *p = &sc.h[i];
				printf("%-8d %-12s %12llu %12llu %5u %4u %s\n", (int)p->pid,
				       user_name(p->uid, user, sizeof(user)), p->mapped, p->resident,
				       p->files, p->fds, printable(p->comm, name, sizeof(name)));
			}
		}
		printf("total: %zu process%s, %llu bytes mapped, %llu bytes resident, "
		       "%zu secretmem file%s\n", sc.n, sc.n == 1 ? "" : "es", mapped, resident,
		       sc.all.n, sc.all.n == 1 ? "" : "s");
		if (sc.uninspected)
			printf("not inspected: %u process%s (permission denied%s)\n", sc.uninspected,
			       sc.uninspected == 1 ? "" : "es",
			       geteuid() == 0 ? " even to root: another namespace or a security module" :
						"; run as root to see all");
		if (h == CLI_HIBERNATION_UNSUPPORTED)
			printf("hibernation: not supported on this machine (/sys/power/state: \"%s\")\n",
			       state);
		else if (h == CLI_HIBERNATION_AVAILABLE)
			printf("hibernation: available\n");
		else if (sc.n)
			printf("hibernation: blocked by %zu process%s\n", sc.n, sc.n == 1 ? "" : "es");
		else
			printf("hibernation: unavailable, but not because of secret memory this tool could "
			       "inspect (nohibernate, lockdown%s)\n",
			       sc.uninspected ? ", or a process it could not inspect" : "");
	}
	free(sc.h);
	free(sc.all.v);
	return CLI_EXIT_OK;
}
