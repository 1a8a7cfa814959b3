/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_status_hidden.c - `secretmem status` says when it cannot see every
 * process, and `--quiet` then exits 2 instead of 0 "nothing holds secret
 * memory":
 *   - /proc mounted with hidepid=2 (a new proc instance in a private mount
 *     namespace) and the tool run as a user that owns no process: a root
 *     process holding secret memory is invisible; the text names hidepid=2,
 *     the JSON says
 *     hidden_processes_possible, --quiet exits 2;
 *   - the tool run in a new PID namespace with its own /proc: the holder
 *     outside is invisible; the text names the PID namespace, --quiet exits 2;
 *   - control: in a private mount namespace with an ordinary /proc, as root,
 *     the holder is seen and --quiet exits 1.
 */
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include "secretmem.h"
#include "cli_run.h"

static const char *proc_opts;
static int as_stranger;

static int new_proc(void)
{
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 3;
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, proc_opts) != 0)
		return 4;
	/* a uid no other process has (not nobody: nginx workers of a test or a
	 * service running as nobody may hold secret memory and would be seen) */
	uid_t id = (uid_t)(2000000000u + (unsigned)getpid() % 1000000u);
	if (as_stranger && (setgroups(0, NULL) != 0 || setgid(id) != 0 || setuid(id) != 0))
		return 5;
	return 0;
}

static int new_pidns(void)
{
	int st;

	if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0)
		return 3;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return 4;
	if (pid > 0) { /* the middle process: wait, pass the status on */
		while (waitpid(pid, &st, 0) < 0)
			;
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		_exit(5);
	return 0;
}

static int listed(const char *out, pid_t pid)
{
	char line[32];
	snprintf(line, sizeof(line), "\n%-8d ", (int)pid);
	return strstr(out, line) != NULL;
}

int main(void)
{
	static char out[1 << 20];
	char *text[] = { NULL, "status", NULL };
	char *quiet[] = { NULL, "status", "--quiet", NULL };
	char *json[] = { NULL, "status", "--json", NULL };
	int p[2], st;
	char c;

	tl_need_secretmem();
	if (geteuid() != 0)
		tl_skip("needs root (mount namespaces, a proc mount, setuid)");
	TL_CHECK(pipe(p) == 0, "pipe");
	pid_t holder = fork();
	if (holder == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		c = secretmem_region_create(4096, SECRETMEM_REGION_REQUIRE_SECRET) ? 'r' : 'x';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	TL_CHECK(read(p[0], &c, 1) == 1 && c == 'r', "the holder could not create its region");

	/* control: a fresh ordinary /proc, as root */
	proc_opts = NULL;
	as_stranger = 0;
	st = run_cli(text, out, sizeof(out), 0, new_proc);
	if (WIFEXITED(st) && (WEXITSTATUS(st) == 3 || WEXITSTATUS(st) == 4))
		tl_skip("cannot mount a new /proc in a private mount namespace here");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "control: %s", tl_status_str(st));
	TL_CHECK(listed(out, holder), "control: the holder is not listed:\n%s", out);
	TL_CHECK(strstr(out, "hidepid") == NULL, "control: hidepid mentioned:\n%s", out);
	st = run_cli(quiet, out, sizeof(out), 0, new_proc);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "control --quiet: %s, expected 1",
		 tl_status_str(st));

	/* hidepid=2, as a user with no process */
	proc_opts = "hidepid=2";
	as_stranger = 1;
	st = run_cli(text, out, sizeof(out), 0, new_proc);
	printf("--- hidepid=2 as a user with no process ---\n%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "hidepid: %s", tl_status_str(st));
	TL_CHECK(!listed(out, holder), "hidepid: the holder is listed");
	/* the kernel shows hidepid=2 as hidepid=invisible */
	TL_CHECK(strstr(out, "\nnot seen: /proc is mounted with hidepid=2") != NULL ||
		 strstr(out, "\nnot seen: /proc is mounted with hidepid=invisible") != NULL,
		 "hidepid: the output does not say that processes are hidden");
	char *nl = strchr(out, '\n');
	*nl = '\0';
	TL_CHECK(strstr(out, "could not see or inspect") != NULL, "hidepid: the verdict claims "
		 "certainty: %s", out);
	*nl = '\n';
	st = run_cli(quiet, out, sizeof(out), 0, new_proc);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "hidepid --quiet: %s, expected 2",
		 tl_status_str(st));
	st = run_cli(json, out, sizeof(out), 0, new_proc);
	char *file = save_tmp(out);
	char minus[32];
	snprintf(minus, sizeof(minus), "-%d", (int)holder);
	char *py[] = { "python3", "test/cli_json.py", "status", file, minus, NULL };
	int ok = json_ok(py);
	unlink(file);
	TL_CHECK(ok, "hidepid: JSON rejected:\n%s", out);
	TL_CHECK((strstr(out, "\"hidepid\": \"2\"") || strstr(out, "\"hidepid\": \"invisible\"")) &&
		 strstr(out, "\"hidden_processes_possible\": true"),
		 "hidepid: JSON does not say so:\n%s", out);

	/* a PID namespace of its own */
	st = run_cli(text, out, sizeof(out), 0, new_pidns);
	printf("--- new PID namespace ---\n%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pidns: %s", tl_status_str(st));
	TL_CHECK(strstr(out, "\nnot seen: this process runs in a PID namespace") != NULL,
		 "pidns: the output does not say that the host cannot be seen");
	st = run_cli(quiet, out, sizeof(out), 0, new_pidns);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "pidns --quiet: %s, expected 2",
		 tl_status_str(st));

	kill(holder, SIGKILL);
	waitpid(holder, &st, 0);
	return TL_PASS;
}
