/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_status.c - `secretmem status` lists a process that holds a secret
 * region (by PID, with the region's size mapped and resident, guard pages
 * not counted) and one that holds only an fd; after they exit it no longer
 * lists them.  Checked in the text output and in --json (test/cli_json.py),
 * with a process name that needs JSON escaping.
 *
 * Secret memory held by threads other than the leader, which /proc/PID
 * does not show, is seen too (it was missed): a process whose main thread
 * made a region and called pthread_exit() while another thread lives (the
 * leader a zombie: its smaps and fd read empty) is listed with the region;
 * a process with a thread that called unshare(CLONE_FILES) and then made a
 * secretmem fd, and a second fd in the leader's table (shared by a third
 * thread), is listed with both fds, each counted once.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include "secretmem.h"
#include "cli_run.h"

#define REGION_PAGES 5
/* quote, backslash, a control character, a tab and a byte that is not UTF-8 */
#define ODD_NAME "a\"b\\c\x01\t\xff"

static pid_t start_holder(int region, size_t size)
{
	int p[2];
	char c = 0;

	if (pipe(p) != 0)
		TL_FAIL("pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (region) {
			struct secretmem_region *r = secretmem_region_create(size, SECRETMEM_REGION_REQUIRE_SECRET);
			c = r ? 'r' : 'x';
		} else {
			prctl(PR_SET_NAME, ODD_NAME);
			c = secretmem_memfd(0) >= 0 ? 'f' : 'x';
		}
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || c == 'x')
		TL_FAIL("the holder process could not create its secret memory");
	close(p[0]);
	return pid;
}

/* The threads of the threaded holders: keep the process alive. */
static void *linger(void *arg)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;)
		pause();
	return arg;
}

static pthread_barrier_t unshared;
static int own_fd = -1;

/* A thread with an fd table of its own, and a secretmem fd in it. */
static void *own_table(void *arg)
{
	if (unshare(CLONE_FILES) == 0)
		own_fd = secretmem_memfd(0);
	pthread_barrier_wait(&unshared);
	return linger(arg);
}

/*
 * A process whose secret memory only another thread than the leader shows:
 * exited, the leader made a region of size and called pthread_exit();
 * else a thread has its own fd table with a secretmem fd, the leader
 * another that a third thread shares.
 */
static pid_t start_threaded(int exited, size_t size)
{
	int p[2];
	char c = 'x';
	pthread_t t;

	if (pipe(p) != 0)
		TL_FAIL("pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (exited) {
			if (secretmem_region_create(size, SECRETMEM_REGION_REQUIRE_SECRET) &&
			    pthread_create(&t, NULL, linger, NULL) == 0)
				c = 'r';
		} else {
			pthread_barrier_init(&unshared, NULL, 2);
			if (pthread_create(&t, NULL, own_table, NULL) == 0) {
				pthread_barrier_wait(&unshared);
				if (own_fd >= 0 && secretmem_memfd(0) >= 0 &&
				    pthread_create(&t, NULL, linger, NULL) == 0)
					c = 'f';
			}
		}
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		if (exited)
			pthread_exit(NULL);
		for (;;)
			pause();
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || c == 'x')
		TL_FAIL("the threaded holder could not create its secret memory");
	close(p[0]);
	return pid;
}

/* Waits until the leader of pid is a zombie (its threads live on). */
static void wait_zombie(pid_t pid)
{
	char path[64], buf[4096] = "";

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	for (int i = 0; i < 500 && !strstr(buf, "\nState:\tZ"); i++) {
		FILE *f = fopen(path, "re");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		buf[n] = '\0';
		if (f)
			fclose(f);
		usleep(10000);
	}
	TL_CHECK(strstr(buf, "\nState:\tZ") != NULL, "the leader of %d did not exit", (int)pid);
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
	char *json[] = { NULL, "status", "--json", NULL };
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size = REGION_PAGES * page;
	char want_region[128], want_fd[128], gone_region[32], gone_fd[32], line[128];
	char want_exited[128], want_tables[128];
	int st;

	tl_need_secretmem();
	pid_t region = start_holder(1, size);
	pid_t fdonly = start_holder(0, 0);
	pid_t exited = start_threaded(1, size);
	pid_t tables = start_threaded(0, 0);
	wait_zombie(exited);

	st = run_cli(text, out, sizeof(out), 0, NULL);
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status: %s", tl_status_str(st));
	TL_CHECK(listed(out, region), "the region holder %d is not listed", (int)region);
	TL_CHECK(listed(out, fdonly), "the fd holder %d is not listed", (int)fdonly);
	TL_CHECK(listed(out, exited), "the holder %d whose leader exited is not listed", (int)exited);
	TL_CHECK(listed(out, tables), "the holder %d with a thread's own fd table is not listed", (int)tables);
	snprintf(line, sizeof(line), "\n%-8d %-12s %12zu %12zu %5u %4u ", (int)region, "root", size, size, 1u, 0u);
	if (geteuid() == 0)
		TL_CHECK(strstr(out, line) != NULL, "the region holder's line is wrong (want '%s')", line + 1);
	TL_CHECK(strstr(out, "\nhibernation: ") != NULL, "no hibernation line");
	/* control bytes of a process name never reach the terminal raw */
	TL_CHECK(strstr(out, " a\"b\\x5cc\\x01\\x09\\xff\n") != NULL,
		 "the odd process name is not shown escaped");
	TL_CHECK(strchr(out, '\x01') == NULL, "a control byte reached the output");

	st = run_cli(json, out, sizeof(out), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status --json: %s", tl_status_str(st));
	/* +PID:mapped:resident:mappings:fds:files[:command] */
	snprintf(want_region, sizeof(want_region), "+%d:%zu:%zu:1:0:1", (int)region, size, size);
	snprintf(want_fd, sizeof(want_fd), "+%d:0:0:0:1:1:%s", (int)fdonly, "a\"b\\\\c\\x01\\t\\ufffd");
	snprintf(want_exited, sizeof(want_exited), "+%d:%zu:%zu:1:0:1", (int)exited, size, size);
	snprintf(want_tables, sizeof(want_tables), "+%d:0:0:0:2:2", (int)tables);
	char *file = save_tmp(out);
	char *py[] = { "python3", "test/cli_json.py", "status", file, want_region, want_fd, want_exited,
		       want_tables, NULL };
	int ok = json_ok(py);
	unlink(file);
	TL_CHECK(ok, "status --json rejected:\n%s", out);

	/* the Prometheus file escapes the odd name in its labels */
	char prom[64], sample[256];
	snprintf(prom, sizeof(prom), "/tmp/t_cli_status-%d.prom", (int)getpid());
	char *promargs[] = { NULL, "status", "--prometheus", prom, "--quiet", NULL };
	st = run_cli(promargs, out, sizeof(out), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status --prometheus: %s", tl_status_str(st));
	snprintf(sample, sizeof(sample), "secretmem_process_mapped_bytes{pid=\"%d\","
		 "command=\"a\\\"b\\\\x5cc\\\\x01\\\\x09\\\\xff\"}=0", (int)fdonly);
	char *pp[] = { "python3", "test/cli_prom.py", prom, sample, NULL };
	ok = json_ok(pp);
	unlink(prom);
	TL_CHECK(ok, "status --prometheus rejected (want %s)", sample);

	kill(region, SIGKILL);
	kill(fdonly, SIGKILL);
	kill(exited, SIGKILL);
	kill(tables, SIGKILL);
	waitpid(region, &st, 0);
	waitpid(fdonly, &st, 0);
	waitpid(exited, &st, 0);
	waitpid(tables, &st, 0);

	st = run_cli(text, out, sizeof(out), 0, NULL);
	printf("after exit:\n%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status: %s", tl_status_str(st));
	TL_CHECK(!listed(out, region) && !listed(out, fdonly), "a holder is still listed after exit");
	st = run_cli(json, out, sizeof(out), 0, NULL);
	snprintf(gone_region, sizeof(gone_region), "-%d", (int)region);
	snprintf(gone_fd, sizeof(gone_fd), "-%d", (int)fdonly);
	file = save_tmp(out);
	char *py2[] = { "python3", "test/cli_json.py", "status", file, gone_region, gone_fd, NULL };
	ok = json_ok(py2);
	unlink(file);
	TL_CHECK(ok, "status --json after exit rejected:\n%s", out);
	return TL_PASS;
}
