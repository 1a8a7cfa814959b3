/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_status_fields.c - what `secretmem status` says of a holder: a holder
 * started like a service (its own program run with arguments, in a cgroup
 * named like a systemd unit, with the preload module and SECRETMEM_*
 * variables) is listed with its command line, its unit, "preload module
 * (SECRETMEM_OPENSSL=all)" and its environment, in text and JSON; the
 * verdict line comes first; `--quiet` prints nothing and exits 1 while it
 * holds secret memory; `--prometheus FILE` replaces FILE atomically (no
 * temporary file left) with a valid exposition (test/cli_prom.py) that has
 * the holder's bytes and unit; `--json --quiet` is a usage error.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include "secretmem.h"
#include "cli_run.h"

#define PAGES 3

static pid_t holder = -1;
static char cgdir[1400];

/* Also on a failed check (TL_FAIL exits): no holder, no cgroup left behind. */
static void cleanup(void)
{
	int st;

	if (holder > 0) {
		kill(holder, SIGKILL);
		waitpid(holder, &st, 0);
		holder = -1;
	}
	for (int i = 0; cgdir[0] && i < 50 && rmdir(cgdir) != 0; i++)
		usleep(20000);
	cgdir[0] = '\0';
}

/* "hold" mode: the holder program. */
static int hold(void)
{
	size_t size = PAGES * (size_t)sysconf(_SC_PAGESIZE);
	struct secretmem_region *r = secretmem_region_create(size, SECRETMEM_REGION_REQUIRE_SECRET);
	char c = r ? 'r' : 'x';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (write(3, &c, 1) != 1)
		return 1;
	for (;;)
		pause();
}

/* The mount point of the hierarchy systemd names units in; 0 or -1. */
static int unit_hierarchy(char *mnt, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[2048], v2[512] = "";
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char point[512], fstype[64], src[256], opts[1024] = "";
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %511s", point) != 1 ||
		    sscanf(dash + 3, "%63s %255s %1023s", fstype, src, opts) < 2)
			continue;
		if (strcmp(fstype, "cgroup") == 0 && strstr(opts, "name=systemd")) {
			snprintf(mnt, size, "%s", point);
			found = 0;
		} else if (strcmp(fstype, "cgroup2") == 0 && !v2[0]) {
			snprintf(v2, sizeof(v2), "%s", point);
		}
	}
	fclose(f);
	if (found && v2[0]) {
		snprintf(mnt, size, "%s", v2);
		found = 0;
	}
	return found;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	static char out[1 << 20];
	char self[1024], preload[4096], unit[64], path[1200], dir[64], prom[128];
	size_t size = PAGES * (size_t)sysconf(_SC_PAGESIZE);
	int p[2], st, have_unit = 0;
	char c;

	if (argc > 1 && strcmp(argv[1], "hold") == 0)
		return hold();
	tl_need_secretmem();
	if (geteuid() != 0)
		tl_skip("needs root (cgroup for the unit, other processes' environment)");
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	TL_CHECK(n < (ssize_t)sizeof(self) - 1, "path too long");
	TL_CHECK(n > 0, "readlink /proc/self/exe");
	self[n] = '\0';
	TL_CHECK(realpath(tl_build_path("libsecretmem-preload.so"), preload) != NULL,
		 "no %s (make builds it)", tl_build_path("libsecretmem-preload.so"));

	/* the holder: its own program, with arguments, the preload module and
	 * SECRETMEM_* variables, as a service would be started */
	TL_CHECK(pipe(p) == 0, "pipe");
	fflush(NULL);
	atexit(cleanup);
	holder = fork();
	TL_CHECK(holder >= 0, "fork");
	if (holder == 0) {
		char env_pre[4200];
		snprintf(env_pre, sizeof(env_pre), "LD_PRELOAD=%s", preload);
		/* under ASan the preload module comes before the runtime */
		char *env[] = { env_pre, "SECRETMEM_OPENSSL=all", "SECRETMEM_RELEASE_IDLE=1",
				"ASAN_OPTIONS=verify_asan_link_order=0", NULL };
		char *args[] = { self, "hold", "--key file with spaces", NULL };
		dup2(p[1], 3);
		execve(self, args, env);
		_exit(127);
	}
	close(p[1]);
	TL_CHECK(read(p[0], &c, 1) == 1 && c == 'r', "the holder could not create its region");
	close(p[0]);

	/* a cgroup named like a systemd unit */
	snprintf(unit, sizeof(unit), "secretmem-test-%d.service", (int)getpid());
	if (unit_hierarchy(path, sizeof(path)) == 0) {
		snprintf(cgdir, sizeof(cgdir), "%s/%s", path, unit);
		char procs[1500], pid[32];
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgdir);
		snprintf(pid, sizeof(pid), "%d", (int)holder);
		have_unit = mkdir(cgdir, 0755) == 0 && write_file(procs, pid) == 0;
	}
	if (!have_unit)
		printf("note: cannot put the holder into a unit cgroup (%s); unit not checked\n", cgdir);

	char *text[] = { NULL, "status", NULL };
	st = run_cli(text, out, sizeof(out), 0, NULL);
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status: %s", tl_status_str(st));
	TL_CHECK(strncmp(out, "verdict: ", 9) == 0, "the verdict is not the first line");
	char want[1400];
	snprintf(want, sizeof(want), "\n%-8d ", (int)holder);
	char *at = strstr(out, want);
	TL_CHECK(at != NULL, "the holder %d is not listed", (int)holder);
	snprintf(want, sizeof(want), "\n         command line: %s hold --key file with spaces\n", self);
	TL_CHECK(strstr(at, want) != NULL, "the holder's command line is not shown");
	TL_CHECK(strstr(at, "\n         libsecretmem: preload module (SECRETMEM_OPENSSL=all)\n") != NULL,
		 "the preload module and its mode are not shown");
	TL_CHECK(strstr(at, "\n         environment: SECRETMEM_OPENSSL=all SECRETMEM_RELEASE_IDLE=1\n"),
		 "the SECRETMEM_* environment is not shown");
	if (have_unit) {
		snprintf(want, sizeof(want), "\n         unit: %s\n", unit);
		TL_CHECK(strstr(at, want) != NULL, "the holder's unit is not shown");
	}

	char *json[] = { NULL, "status", "--json", NULL };
	st = run_cli(json, out, sizeof(out), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status --json: %s", tl_status_str(st));
	char spec[2048];
	snprintf(spec, sizeof(spec), "+%d:%zu:%zu:1:0:1:*@cmdline~=hold --key file with spaces"
		 "@seen=preload@mode~=SECRETMEM_OPENSSL=all%s%s", (int)holder, size, size,
		 have_unit ? "@unit=" : "", have_unit ? unit : "");
	char *file = save_tmp(out);
	char *py[] = { "python3", "test/cli_json.py", "status", file, spec, NULL };
	int ok = json_ok(py);
	unlink(file);
	TL_CHECK(ok, "status --json rejected:\n%s", out);

	/* --quiet: nothing on stdout, exit 1 while something holds secret memory */
	char *quiet[] = { NULL, "status", "--quiet", NULL };
	st = run_cli(quiet, out, sizeof(out), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status --quiet with a holder: %s, expected 1",
		 tl_status_str(st));
	TL_CHECK(out[0] == '\0', "status --quiet printed: %s", out);

	/* --prometheus: replaces an existing file atomically */
	snprintf(dir, sizeof(dir), "/tmp/t_cli_prom-XXXXXX");
	TL_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(prom, sizeof(prom), "%s/secretmem.prom", dir);
	int fd = open(prom, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	TL_CHECK(fd >= 0 && write(fd, "old\n", 4) == 4, "pre-existing file");
	close(fd);
	struct stat before, after;
	TL_CHECK(stat(prom, &before) == 0, "stat");
	char *promargs[] = { NULL, "status", "--quiet", "--prometheus", prom, NULL };
	st = run_cli(promargs, out, sizeof(out), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status --prometheus: %s", tl_status_str(st));
	char sample[512];
	if (have_unit)
		snprintf(sample, sizeof(sample), "secretmem_process_mapped_bytes{pid=\"%d\",unit=\"%s\"}=%zu",
			 (int)holder, unit, size);
	else
		snprintf(sample, sizeof(sample), "secretmem_process_mapped_bytes{pid=\"%d\"}=%zu",
			 (int)holder, size);
	char *pp[] = { "python3", "test/cli_prom.py", prom, sample, NULL };
	ok = json_ok(pp);
	TL_CHECK(ok, "the Prometheus file was rejected");
	/* replaced by rename(2), not rewritten in place: a new inode */
	TL_CHECK(stat(prom, &after) == 0 && after.st_ino != before.st_ino,
		 "the file was rewritten in place, not replaced atomically");
	DIR *d = opendir(dir);
	int entries = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		entries += e->d_name[0] != '.';
	if (d)
		closedir(d);
	TL_CHECK(entries == 1, "%d files in %s: a temporary file was left behind", entries, dir);
	unlink(prom);
	/* an unwritable place is an error with its own code, and leaves nothing */
	snprintf(prom, sizeof(prom), "%s/no-such-dir/secretmem.prom", dir);
	promargs[4] = prom;
	st = run_cli(promargs, out, sizeof(out), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 71, "unwritable --prometheus: %s, expected 71",
		 tl_status_str(st));
	rmdir(dir);

	char *both[] = { NULL, "status", "--json", "--quiet", NULL };
	st = run_cli(both, out, sizeof(out), 1, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 64, "--json --quiet: %s", tl_status_str(st));

	cleanup();
	return TL_PASS;
}
