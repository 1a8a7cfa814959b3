/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_rel_fuzz_run.c - run the libFuzzer target for a bounded time.
 *
 * If $SECRETMEM_BUILD/fuzz/fuzz_alloc exists (`make fuzz`, needs clang), run
 * it for 60 s (SECRETMEM_FUZZ_SECONDS=n to change) on the seed corpus
 * fuzz/corpus plus the new inputs it finds.  New inputs go to a scratch
 * directory listed first (libFuzzer writes only to its first corpus
 * directory), so the repository's corpus is read, never changed.  A crash
 * input is kept in $SECRETMEM_BUILD/fuzz/artifacts/; the full output is in
 * $SECRETMEM_BUILD/fuzz/last-run.log.  Pass: the fuzzer exits 0.  Prints
 * the number of executions.  Skips when the target was not built, and under
 * valgrind (which would not follow the fuzzer anyway).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tlib.h"

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);

	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(dir);
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int main(void)
{
	char fuzzer[4096], scratch[4096], artifacts[4096], logpath[4096], tbuf[64], abuf[4200];
	const char *corpus = getenv("SECRETMEM_FUZZ_CORPUS");
	const char *secs = getenv("SECRETMEM_FUZZ_SECONDS");
	long seconds = secs && atol(secs) > 0 ? atol(secs) : 60;

	if (tl_under_valgrind())
		tl_skip("the fuzzer runs natively (valgrind does not follow it): nothing to add to the normal check");
	if (!corpus)
		corpus = "fuzz/corpus";
	snprintf(fuzzer, sizeof(fuzzer), "%s", tl_build_path("fuzz/fuzz_alloc"));
	if (access(fuzzer, X_OK) != 0)
		tl_skip("fuzz target not built (make fuzz needs clang with libFuzzer)");
	int seeds = count_files(corpus);
	if (seeds <= 0)
		TL_FAIL("seed corpus %s missing or empty (run from the source tree)", corpus);

	snprintf(scratch, sizeof(scratch), "%s", tl_build_path("fuzz/run-XXXXXX"));
	if (!mkdtemp(scratch))
		TL_FAIL("mkdtemp %s: %s", scratch, strerror(errno));
	snprintf(artifacts, sizeof(artifacts), "%s/", tl_build_path("fuzz/artifacts"));
	mkdir(artifacts, 0755);
	snprintf(logpath, sizeof(logpath), "%s", tl_build_path("fuzz/last-run.log"));
	snprintf(tbuf, sizeof(tbuf), "-max_total_time=%ld", seconds);
	snprintf(abuf, sizeof(abuf), "-artifact_prefix=%s", artifacts);

	printf("running %s for %ld s on %d seeds from %s\n", fuzzer, seconds, seeds, corpus);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		unsetenv("LD_PRELOAD");
		/* inputs of up to 64 operations: longer ones run slowly, and
		 * the seeds cover the long sequences */
		execl(fuzzer, fuzzer, tbuf, abuf, "-print_final_stats=1", "-timeout=20", "-max_len=256",
		      scratch, corpus, (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));

	long execs = -1, new_inputs = count_files(scratch);
	FILE *f = fopen(logpath, "re");
	char line[1024];
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (strncmp(line, "stat::number_of_executed_units:", 31) == 0)
				execs = atol(line + 31);
		fclose(f);
	}
	remove_dir(scratch);
	printf("fuzzer: %s, %ld executions in %ld s, %ld new inputs (log: %s)\n", tl_status_str(st), execs,
	       seconds, new_inputs, logpath);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		f = fopen(logpath, "re");
		if (f) {
			/* the invariant or fatal message, the report, the top of the stack */
			int frames = 0;
			while (fgets(line, sizeof(line), f)) {
				int frame = strstr(line, "    #") == line;
				if (frame && ++frames > 12)
					continue;
				if (frame || strstr(line, "invariant violated") || strstr(line, "secretmem: fatal") ||
				    strstr(line, "ERROR:") || strstr(line, "SUMMARY") || strstr(line, "Test unit written"))
					fputs(line, stderr);
			}
			fclose(f);
		}
		TL_FAIL("the fuzzer found a crash (input saved in %s)", artifacts);
	}
	TL_CHECK(execs > 0, "no executions reported");
	return 0;
}
