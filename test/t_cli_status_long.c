/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_status_long.c - `secretmem status` reads a holder's environment and
 * command line whole (secretmem(1), SECRETMEM STATUS): a holder with the
 * preload module whose SECRETMEM_OPENSSL=off comes after 70 KB of other
 * variables is "preload module (SECRETMEM_OPENSSL=off)" with an
 * "environment:" line, and its command line of 5,000 bytes is shown whole,
 * in text and JSON (status read 64 KiB of the environment and 1,023 bytes
 * of the command line, silently).  As root, a holder that moved both past
 * the 6 MiB exec(2) allows (prctl PR_SET_MM) has them marked cut: "[cut:
 * ...]" on its lines, an "environment cut:" line with its PID, and
 * cmdline_cut, environment_cut and environment_cut_pids in JSON.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include "secretmem.h"
#include "cli_run.h"

#define PAD (70 * 1000)
#define ARG (5 * 1000)
#define MOVED (7u << 20) /* past STATUS_STRINGS_MAX, 6 MiB */

static pid_t holders[2];

static void cleanup(void)
{
	int st;

	for (size_t i = 0; i < 2; i++)
		if (holders[i] > 0) {
			kill(holders[i], SIGKILL);
			waitpid(holders[i], &st, 0);
			holders[i] = 0;
		}
}

/* size bytes of NUL-separated strings (name=xxx...) in a new mapping, the
 * first one first; its address, or NULL. */
static char *strings(size_t size, const char *first, const char *name)
{
	char *m = mmap(NULL, size + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t used = strlen(first) + 1;

	if (m == MAP_FAILED)
		return NULL;
	memcpy(m, first, used);
	while (used + 4096 <= size) {
		size_t n = (size_t)snprintf(m + used, 4096, "%s%zu=", name, used);
		memset(m + used + n, 'x', 4096 - n - 1);
		m[used + 4095] = '\0';
		used += 4096;
	}
	return m;
}

/* The holders (this program re-executed): "hold" holds a region; "moved"
 * first moves its command line and environment past 6 MiB.  Each writes
 * one byte to fd 3: 'r' holding, 's' the move was refused, 'x' failed. */
static int hold(int moved)
{
	size_t size = (size_t)sysconf(_SC_PAGESIZE);
	char c = 'r';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (moved) {
		char *args = strings(MOVED, "moved-holder", "arg");
		char *env = strings(MOVED, "SECRETMEM_OPENSSL=off", "PAD");
		/* start first: the kernel wants start <= end at every step */
		if (!args || !env || prctl(PR_SET_MM, PR_SET_MM_ARG_START, (unsigned long)args, 0, 0) != 0 ||
		    prctl(PR_SET_MM, PR_SET_MM_ARG_END, (unsigned long)(args + MOVED), 0, 0) != 0 ||
		    prctl(PR_SET_MM, PR_SET_MM_ENV_START, (unsigned long)env, 0, 0) != 0 ||
		    prctl(PR_SET_MM, PR_SET_MM_ENV_END, (unsigned long)(env + MOVED), 0, 0) != 0)
			c = 's';
	}
	if (c == 'r' && !secretmem_region_create(size, SECRETMEM_REGION_REQUIRE_SECRET))
		c = 'x';
	if (write(3, &c, 1) != 1)
		return 1;
	for (;;)
		pause();
}

/* Starts this program as holder with argv av and environment env; 0 when
 * it holds, 's' or 'x' as hold() said. */
static int start(size_t i, char **av, char **env)
{
	int p[2];
	char c = 'x';

	if (pipe(p) != 0)
		TL_FAIL("pipe: %s", strerror(errno));
	fflush(NULL);
	holders[i] = fork();
	if (holders[i] < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (holders[i] == 0) {
		close(p[0]);
		if (dup2(p[1], 3) != 3)
			_exit(1);
		execve("/proc/self/exe", av, env);
		_exit(127);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		TL_FAIL("the holder did not start");
	close(p[0]);
	return c == 'r' ? 0 : c;
}

int main(int argc, char **argv)
{
	static char out[16 << 20], json[16 << 20];
	static char pad[PAD + 8], arg[ARG + 1], preload[PATH_MAX + 16], want[ARG + 256];
	char *text_args[] = { NULL, "status", NULL };
	char *json_args[] = { NULL, "status", "--json", NULL };
	char lib[PATH_MAX];
	int st;

	if (argc >= 2 && strcmp(argv[1], "hold") == 0)
		return hold(0);
	if (argc >= 2 && strcmp(argv[1], "moved") == 0)
		return hold(1);
	if (argc >= 2)
		return 2; /* never a test run of its own: no chain of holders */
	tl_need_secretmem();
	if (!realpath(tl_build_path("libsecretmem-preload.so"), lib))
		tl_skip("libsecretmem-preload.so is not built");
	atexit(cleanup);

	/* 70 KB of environment, then SECRETMEM_OPENSSL=off; a long argument */
	memcpy(pad, "PAD=", 4);
	memset(pad + 4, 'x', PAD);
	memset(arg, 'a', ARG - 3);
	memcpy(arg + ARG - 3, "END", 4);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", lib);
	/* (a sanitizer build: the module after the runtime linked in) */
	char *env[] = { pad, "SECRETMEM_OPENSSL=off", preload, "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0",
			NULL };
	char *holder_av[] = { argv[0], "hold", arg, NULL };
	if (start(0, holder_av, env) != 0)
		TL_FAIL("the holder could not create its region");

	st = run_cli(text_args, out, sizeof(out), 0, NULL);
	printf("%.4000s\n", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status: %s", tl_status_str(st));
	TL_CHECK(strstr(out, "libsecretmem: preload module (SECRETMEM_OPENSSL=off)\n") != NULL,
		 "SECRETMEM_OPENSSL=off after 70 KB of environment is not seen");
	TL_CHECK(strstr(out, "         environment: SECRETMEM_OPENSSL=off\n") != NULL, "no environment: line");
	snprintf(want, sizeof(want), "         command line: %s hold %s\n", argv[0], arg);
	TL_CHECK(strstr(out, want) != NULL, "the command line of %d bytes is not shown whole", ARG);
	TL_CHECK(strstr(out, "[cut:") == NULL && strstr(out, "environment cut:") == NULL,
		 "something is said to be cut");

	st = run_cli(json_args, json, sizeof(json), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status --json: %s", tl_status_str(st));
	char *file = save_tmp(json);
	char *py[] = { "python3", "test/cli_json.py", "status", file, NULL };
	int ok = json_ok(py);
	TL_CHECK(ok, "status --json rejected");
	snprintf(want, sizeof(want), "-c\nimport json,sys\nd=json.load(open('%s'))\n"
		 "p=[x for x in d['processes'] if x['pid']==%d][0]\n"
		 "assert p['cmdline'].endswith(' hold ' + 'a'*%d + 'END'), len(p['cmdline'])\n"
		 "assert p['cmdline_cut'] is False and p['libsecretmem']['environment_cut'] is False\n"
		 "assert p['libsecretmem']['environment'] == 'SECRETMEM_OPENSSL=off', p['libsecretmem']\n",
		 file, (int)holders[0], ARG - 3);
	char *py2[] = { "python3", want, NULL };
	ok = json_ok(py2);
	unlink(file);
	TL_CHECK(ok, "status --json: the holder's cmdline is not whole");
	cleanup();

	/* past what exec allows: marked cut */
	if (geteuid() != 0) {
		printf("pass (not root: the prctl(PR_SET_MM) case was not run)\n");
		return TL_PASS;
	}
	char *moved_av[] = { argv[0], "moved", NULL };
	char *moved_env[] = { NULL };
	int rc = start(1, moved_av, moved_env);
	if (rc == 's') {
		printf("pass (prctl(PR_SET_MM) refused here: the cut case was not run)\n");
		return TL_PASS;
	}
	TL_CHECK(rc == 0, "the moved holder could not create its region");
	st = run_cli(text_args, out, sizeof(out), 0, NULL);
	printf("%.2000s\n", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status: %s", tl_status_str(st));
	TL_CHECK(strstr(out, "x [cut: only its first 6291456 bytes were read]\n         ") != NULL,
		 "the command line is not marked cut");
	TL_CHECK(strstr(out, "         environment: SECRETMEM_OPENSSL=off [cut: only its first 6291456 bytes "
			     "were read]\n") != NULL, "the environment is not marked cut");
	snprintf(want, sizeof(want), "\nenvironment cut: 1 process has an environment larger than 6291456 bytes "
		 "(moved with prctl PR_SET_MM): only that much of it was read, a SECRETMEM_* or LD_PRELOAD after it "
		 "is not seen: %d\n", (int)holders[1]);
	TL_CHECK(strstr(out, want) != NULL, "no 'environment cut:' line for %d", (int)holders[1]);
	st = run_cli(json_args, json, sizeof(json), 0, NULL);
	file = save_tmp(json);
	char *py3[] = { "python3", "test/cli_json.py", "status", file, NULL };
	ok = json_ok(py3);
	TL_CHECK(ok, "status --json rejected");
	snprintf(want, sizeof(want), "-c\nimport json,sys\nd=json.load(open('%s'))\n"
		 "p=[x for x in d['processes'] if x['pid']==%d][0]\n"
		 "assert len(p['cmdline']) == 6291456, len(p['cmdline'])\n"
		 "assert p['cmdline_cut'] is True and p['libsecretmem']['environment_cut'] is True\n"
		 "assert d['environment_cut'] == 1 and d['environment_cut_pids'] == [%d]\n",
		 file, (int)holders[1], (int)holders[1]);
	char *py4[] = { "python3", want, NULL };
	ok = json_ok(py4);
	unlink(file);
	TL_CHECK(ok, "status --json: the cut is not said");
	return TL_PASS;
}
