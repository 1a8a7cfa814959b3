/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * status.c - `secretmem status`: which processes hold secret memory, and
 * does it keep this machine from hibernating?  The command: its options,
 * how the --prometheus file is written, and the exit status.
 *
 * status_gather() (status_gather.c) walks /proc into one struct
 * status_report (status.h); one renderer per format (status_render.c:
 * text, JSON, Prometheus text exposition) reads that report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "status.h"

/*
 * How the --prometheus file is written.  A regular file, or none yet, is
 * replaced atomically: a temporary file in the same directory, fsync,
 * rename, so node_exporter never reads half a file.  A character device, a
 * FIFO, or a symbolic link to one of them or to a regular file
 * (/dev/stdout) is written through, as the shell's > would: renaming over
 * it would replace the node or the link with a regular file (as root,
 * /dev/full or /dev/stdout in the shared /dev).  Anything else (a
 * directory, a block device, a socket, a link to nothing) is refused.
 */
struct prom_file {
	const char *path;
	int fd;                      /* written through; -1: replaced */
	int fifo;                    /* path is (a link to) a FIFO */
};

/* Decides how path is written, before the scan: 0, -errno (a system
 * error), or 1 with *refused saying what path is. */
static int prom_open(struct prom_file *p, const char *path, const char **refused)
{
	struct stat st;
	int fd, flags;

	p->path = path;
	p->fd = -1;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISREG(st.st_mode))
		return 0;
	/* another user's link is never followed (root would write where that
	 * user points it: a file of root's, /dev/mem): replaced, as a file */
	if (S_ISLNK(st.st_mode) && st.st_uid != 0 && st.st_uid != geteuid())
		return 0;
	if (S_ISLNK(st.st_mode) && stat(path, &st) != 0) {
		if (errno != ENOENT)
			return -errno;
		*refused = "a symbolic link to nothing";
		return 1;
	}
	if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISREG(st.st_mode)) {
		*refused = S_ISDIR(st.st_mode) ? "a directory" : S_ISBLK(st.st_mode) ? "a block device" :
			   S_ISSOCK(st.st_mode) ? "a socket" : "neither a file, a character device nor a FIFO";
		return 1;
	}
	/* O_NONBLOCK: a FIFO nobody reads is ENXIO, not a timer hung forever */
	p->fifo = S_ISFIFO(st.st_mode);
	fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* what was opened, in case path changed since it was looked at */
	if (fstat(fd, &st) != 0 || (flags = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISREG(st.st_mode)) {
		close(fd);
		*refused = "neither a file, a character device nor a FIFO";
		return 1;
	}
	p->fd = fd;
	return 0;
}

/* Writes the file through p->fd (closed): 0 or -errno. */
static int prom_write_through(const struct status_report *r, struct prom_file *p)
{
	struct stat st;
	int fd = p->fd, rc = 0;
	FILE *f;

	p->fd = -1;
	/* a regular file behind a link is truncated first, as by > */
	if (fstat(fd, &st) != 0 || (S_ISREG(st.st_mode) && ftruncate(fd, 0) != 0)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	f = fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		close(fd);
		return rc;
	}
	status_render_prometheus(r, f);
	if (fflush(f) != 0 || ferror(f))
		rc = -(errno ? errno : EIO);
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	return rc;
}

/* Replaces p->path atomically (see above): 0 or -errno. */
static int prom_replace(const struct status_report *r, const struct prom_file *p)
{
	char tmp[4096];
	int fd, rc = 0;
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", p->path, (int)getpid()) >= (int)sizeof(tmp))
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
	status_render_prometheus(r, f);
	if (fflush(f) != 0 || ferror(f))
		rc = -(errno ? errno : EIO);
	if (!rc && fsync(fd) != 0)
		rc = -errno;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, p->path) != 0)
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
	      "figures for node_exporter's textfile collector (a regular file atomically;\n"
	      "a device, FIFO or link to one written through).  Exit with\n"
	      "--quiet: 0 nothing holds secret memory, 1 something does, 2 could not see or\n"
	      "inspect every process; otherwise 0.  64 usage error, 71 system error.\n",
	      out);
	return rc;
}

int cmd_status(int argc, char **argv)
{
	struct status_report r;
	struct prom_file pf = { NULL, -1, 0 };
	const char *prom = NULL, *refused = NULL;
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
	if (prom) {
		rc = prom_open(&pf, prom, &refused);
		if (rc > 0) {
			fprintf(stderr, "secretmem status: --prometheus %s: %s: give a regular file or a new "
				"one (replaced atomically), or a character device, a FIFO or a link to one "
				"(written through)\n", prom, refused);
			return CLI_EXIT_USAGE;
		}
		if (rc < 0) {
			fprintf(stderr, "secretmem status: cannot write %s: %s%s\n", prom, cli_strerror(-rc),
				rc == -ENXIO && pf.fifo ? ": a FIFO that no process reads" : "");
			return CLI_EXIT_OSERR;
		}
	}
	rc = status_gather(&r);
	if (rc < 0) {
		if (pf.fd >= 0)
			close(pf.fd);
		if (r.error)
			fprintf(stderr, "secretmem status: cannot scan /proc: %s\n", r.error);
		else
			fprintf(stderr, "secretmem status: cannot scan /proc: %s\n", cli_strerror(-rc));
		status_free(&r);
		return CLI_EXIT_OSERR;
	}
	if (prom) {
		rc = pf.fd >= 0 ? prom_write_through(&r, &pf) : prom_replace(&r, &pf);
		if (rc < 0) {
			fprintf(stderr, "secretmem status: cannot write %s: %s\n", prom, cli_strerror(-rc));
			status_free(&r);
			return CLI_EXIT_OSERR;
		}
	}
	if (json)
		status_render_json(&r, stdout);
	else if (!quiet)
		status_render_text(&r, stdout);
	rc = quiet ? r.quiet_exit : CLI_EXIT_OK;
	status_free(&r);
	return rc;
}
