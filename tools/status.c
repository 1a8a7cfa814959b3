/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * status.c - `secretmem status`: which processes hold secret memory, and
 * does it keep this machine from hibernating?  The command: its options,
 * the atomic write of the --prometheus file, and the exit status.
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
#include <unistd.h>
#include "cli.h"
#include "status.h"

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
	status_render_prometheus(r, f);
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
	rc = status_gather(&r);
	if (rc < 0) {
		if (r.error)
			fprintf(stderr, "secretmem status: cannot scan /proc: %s\n", r.error);
		else
			fprintf(stderr, "secretmem status: cannot scan /proc: %s\n", cli_strerror(-rc));
		status_free(&r);
		return CLI_EXIT_OSERR;
	}
	if (prom) {
		rc = write_prometheus(&r, prom);
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
