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
 * $SECRETMEM_BUILD/fuzz/last-run.log.  Pass: the fuzzer exits 0 and ran at
 * least FLOOR_PER_S executions per second of the run (SECRETMEM_FUZZ_MIN_EXECS
 * overrides the total); prints the number of executions and the rate.
 *
 * The floor: 1,000 per second (60,000 in CI's 60 s).  With the allocator's
 * large blocks as own secret mappings (up to commit 97d45a5) the target -
 * which now also makes aligned blocks and large ones up to 2 MiB - ran
 * 130-300 executions per second on one core of a 2-core VM at load 6-10;
 * with large blocks served from chunk pages 1,950-4,400 at load 7 and 3,900
 * on average over a 10^7-execution campaign, which meets issue 9's 100,000
 * in 60 s (printed as met / NOT met).  The floor leaves room for a busy CI
 * machine and still fails a target that went back to the slow large path
 * (SECRETMEM_FUZZ_MIN_EXECS overrides it per run).
 *
 * The history file: the run keeps SECRETMEM_FUZZ_HISTORY in the artifact
 * directory (the last inputs, replayable as one input, see fuzz_alloc.c);
 * after a crash it stays there, for a failure that needs earlier inputs.
 *
 * Then the reproduction check: the target with an injected failure
 * (SECRETMEM_FUZZ_INJECT, see fuzz_alloc.c) runs the seeds plus one input
 * that sets it off, after the seeds have left their state in the allocator.
 * With INJECT=1 (a failure made by that input) the input the fuzzer saves
 * must fail the same way alone with -runs=1, as every crash found by a
 * long campaign must; with INJECT=2 (a failure that needs an earlier input,
 * as one that depends on what earlier inputs left in the allocator's caches
 * would) the saved input must not, and in both the history file must fail
 * the same way alone.
 *
 * Skips when the target was not built, and under valgrind (which would not
 * follow the fuzzer anyway).
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

#define FLOOR_PER_S 1000

static void remove_dir(const char *dir)
{
	tl_empty_dir(dir);
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

/* The first line of path that contains what, without its newline, or "". */
static void find_line(const char *path, const char *what, char *out, size_t len)
{
	FILE *f = fopen(path, "re");
	char line[1024];

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, what)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, len, "%s", line);
			break;
		}
	}
	fclose(f);
}

/* Run the fuzzer with args (NULL-terminated), output to logpath, the
 * history file (SECRETMEM_FUZZ_HISTORY) at history if not NULL; wait status. */
static int run_fuzzer(char *fuzzer, const char *logpath, const char *inject, const char *history,
		      char *const *args)
{
	char *argv[16];
	int n = 0;

	argv[n++] = fuzzer;
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		unsetenv("LD_PRELOAD");
		if (inject)
			setenv("SECRETMEM_FUZZ_INJECT", inject, 1);
		else
			unsetenv("SECRETMEM_FUZZ_INJECT");
		if (history)
			setenv("SECRETMEM_FUZZ_HISTORY", history, 1);
		else
			unsetenv("SECRETMEM_FUZZ_HISTORY");
		execv(fuzzer, argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));
	return st;
}

/* The path of the first crash-* file in dir, into out; 0 if none. */
static int find_crash(const char *dir, char *out, size_t len)
{
	DIR *d = opendir(dir);
	int found = 0;

	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (strncmp(e->d_name, "crash-", 6) == 0) {
			snprintf(out, len, "%s/%s", dir, e->d_name);
			found = 1;
			break;
		}
	}
	closedir(d);
	return found;
}

static void put_op(unsigned char *p, unsigned code, unsigned slot, unsigned value, unsigned mode)
{
	p[0] = (unsigned char)(code | mode << 4);
	p[1] = (unsigned char)slot;
	p[2] = (unsigned char)(value & 255);
	p[3] = (unsigned char)(value >> 8);
}

/*
 * The reproduction check (see the top of this file).  The trigger input:
 * 40 operations that allocate, free and trim (small and large blocks), then
 * OP_STATS with the injected value, then padding that makes it the largest
 * seed, so the fuzzer runs it after every other seed.  The history file of
 * the run must fail the same way alone in both modes; the saved input must
 * (inject "1", a failure made by the input alone) or must not (inject "2",
 * a failure that needs the inputs before it).
 */
static void check_reproduction(char *fuzzer, char *corpus, const char *inject, int expect_alone)
{
	char dir[4096], seeds[4200], trig[4300], art[4300], logpath[4300], log1[4300], crash[4600];
	char abuf[4400], first[1024], alone[1024], hist[4300], hlog[4300], hfirst[1024];
	unsigned char in[4096];
	size_t n = 0;

	snprintf(dir, sizeof(dir), "%s", tl_build_path("fuzz/repro-XXXXXX"));
	if (!mkdtemp(dir))
		TL_FAIL("mkdtemp %s: %s", dir, strerror(errno));
	snprintf(seeds, sizeof(seeds), "%s/new", dir);
	snprintf(trig, sizeof(trig), "%s/trigger", dir);
	snprintf(art, sizeof(art), "%s/art", dir);
	snprintf(logpath, sizeof(logpath), "%s/run.log", dir);
	snprintf(log1, sizeof(log1), "%s/alone.log", dir);
	snprintf(hist, sizeof(hist), "%s/history", dir);
	snprintf(hlog, sizeof(hlog), "%s/history.log", dir);
	if (mkdir(seeds, 0755) || mkdir(trig, 0755) || mkdir(art, 0755))
		TL_FAIL("mkdir in %s: %s", dir, strerror(errno));
	for (unsigned i = 0; i < 40; i++, n += 4) {
		unsigned code = i % 5 == 4 ? 3 /* FREE */ : i == 21 ? 8 /* TRIM */ : 0 /* MALLOC */;
		put_op(in + n, code, i % 7, 97 * i + 5000 * (i % 3) + 40000 * (i % 4 == 1), 3);
	}
	put_op(in + n, 15 /* STATS */, 0, 0x1ec7, 0);
	n += 4;
	while (n + 4 <= sizeof(in)) { /* never reached: -max_len cuts it off */
		put_op(in + n, 9 /* USABLE */, 0, 0, 0);
		n += 4;
	}
	char tfile[4400];
	snprintf(tfile, sizeof(tfile), "%s/input", trig);
	int fd = open(tfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, in, n) != (ssize_t)n || close(fd) != 0)
		TL_FAIL("write %s: %s", tfile, strerror(errno));

	snprintf(abuf, sizeof(abuf), "-artifact_prefix=%s/", art);
	char *args[] = { abuf, "-seed=1", "-runs=200", "-max_len=256", "-timeout=20", seeds, corpus, trig, NULL };
	int st = run_fuzzer(fuzzer, logpath, inject, hist, args);
	find_line(logpath, "invariant violated", first, sizeof(first));
	if (!strstr(first, "injected failure") || !find_crash(art, crash, sizeof(crash)))
		TL_FAIL("with SECRETMEM_FUZZ_INJECT=%s the fuzzer did not stop at the injected failure "
			"(%s; log %s)", inject, tl_status_str(st), logpath);
	printf("inject %s, in a run: %s\n", inject, first);

	char *argsh[] = { "-runs=1", hist, NULL };
	st = run_fuzzer(fuzzer, hlog, inject, NULL, argsh);
	find_line(hlog, "invariant violated", hfirst, sizeof(hfirst));
	printf("  history file alone: %s (%s)\n", hfirst[0] ? hfirst : "no failure", tl_status_str(st));
	if (strcmp(first, hfirst) != 0 || (WIFEXITED(st) && WEXITSTATUS(st) == 0))
		TL_FAIL("the history file %s does not fail the same way alone with -runs=1 (log %s)", hist, hlog);

	char *args1[] = { "-runs=1", crash, NULL };
	st = run_fuzzer(fuzzer, log1, inject, NULL, args1);
	find_line(log1, "invariant violated", alone, sizeof(alone));
	printf("  saved input alone:  %s (%s)\n", alone[0] ? alone : "no failure", tl_status_str(st));
	int same = strcmp(first, alone) == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (expect_alone && !same)
		TL_FAIL("the saved input %s does not fail the same way alone with -runs=1 (log %s)", crash, log1);
	if (!expect_alone && same)
		TL_FAIL("the saved input %s of a failure that needs earlier inputs failed alone (log %s)", crash,
			log1);
	unlink(crash);
	unlink(hist);
	unlink(hlog);
	unlink(tfile);
	unlink(logpath);
	unlink(log1);
	remove_dir(seeds);
	rmdir(trig);
	rmdir(art);
	rmdir(dir);
}

int main(void)
{
	char fuzzer[4096], scratch[4096], artifacts[4096], logpath[4096], tbuf[64], abuf[4200];
	char corpus[4096];
	const char *corpus_env = getenv("SECRETMEM_FUZZ_CORPUS");
	const char *secs = getenv("SECRETMEM_FUZZ_SECONDS");
	const char *min = getenv("SECRETMEM_FUZZ_MIN_EXECS");
	long seconds = secs && atol(secs) > 0 ? atol(secs) : 60;
	long floor_execs = min && atol(min) >= 0 ? atol(min) : FLOOR_PER_S * seconds;

	if (tl_under_valgrind())
		tl_skip("the fuzzer runs natively (valgrind does not follow it): nothing to add to the normal check");
	snprintf(corpus, sizeof(corpus), "%s", corpus_env ? corpus_env : "fuzz/corpus");
	snprintf(fuzzer, sizeof(fuzzer), "%s", tl_build_path("fuzz/fuzz_alloc"));
	if (access(fuzzer, X_OK) != 0) {
		/* make puts its command line's FUZZ=0 in the environment */
		const char *fuzz = getenv("FUZZ");
		if (fuzz && strcmp(fuzz, "0") == 0)
			tl_skip("fuzz target left out (make check FUZZ=0)");
		tl_skip("fuzz target not built (make fuzz needs clang with libFuzzer)");
	}
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

	/* each seed alone in a fresh process: the state at a process's first
	 * allocator call is not the fuzzing run's (an aligned first call read
	 * the class tables before the allocator's start-up) */
	DIR *d = opendir(corpus);
	struct dirent *e;
	int replayed = 0;
	snprintf(logpath, sizeof(logpath), "%s", tl_build_path("fuzz/seed-replay.log"));
	while (d && (e = readdir(d))) {
		char seed[8192];
		if (e->d_name[0] == '.')
			continue;
		snprintf(seed, sizeof(seed), "%s/%s", corpus, e->d_name);
		char *one[] = { "-runs=1", seed, NULL };
		int rst = run_fuzzer(fuzzer, logpath, NULL, NULL, one);
		if (!WIFEXITED(rst) || WEXITSTATUS(rst) != 0)
			TL_FAIL("seed %s alone in a fresh process: %s (log: %s)", seed, tl_status_str(rst), logpath);
		replayed++;
	}
	if (d)
		closedir(d);
	TL_CHECK(replayed == seeds, "%d of %d seeds replayed", replayed, seeds);
	printf("each of the %d seeds alone in a fresh process (-runs=1): ok\n", replayed);
	snprintf(logpath, sizeof(logpath), "%s", tl_build_path("fuzz/last-run.log"));

	printf("running %s for %ld s on %d seeds from %s\n", fuzzer, seconds, seeds, corpus);
	fflush(stdout);
	/* inputs of up to 64 operations: longer ones run slowly, and the
	 * seeds cover the long sequences */
	char *args[] = { tbuf, abuf, "-print_final_stats=1", "-timeout=20", "-max_len=256",
			 scratch, corpus, NULL };
	char history[4300];
	snprintf(history, sizeof(history), "%shistory", artifacts);
	int st = run_fuzzer(fuzzer, logpath, NULL, history, args);

	long execs = -1, rate = -1, new_inputs = count_files(scratch);
	FILE *f = fopen(logpath, "re");
	char line[1024], done[1024] = "";
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, "stat::number_of_executed_units:", 31) == 0)
				execs = atol(line + 31);
			else if (strncmp(line, "stat::average_exec_per_sec:", 27) == 0)
				rate = atol(line + 27);
			else if (strstr(line, "DONE ") || strstr(line, "pulse "))
				snprintf(done, sizeof(done), "%s", line); /* the last one */
		}
		fclose(f);
	}
	remove_dir(scratch);
	/* libFuzzer's own figures: its last status line and final stats */
	if (done[0])
		printf("libFuzzer: %s", done);
	printf("fuzzer: %s, %ld executions in %ld s (libFuzzer: %ld exec/s; floor %ld executions; "
	       "issue 9's target of 100000 in 60 s %s), %ld new inputs (log: %s)\n",
	       tl_status_str(st), execs, seconds, rate, floor_execs,
	       execs * 60 >= 100000L * seconds ? "met" : "NOT met", new_inputs, logpath);
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
		TL_FAIL("the fuzzer found a crash (input saved in %s; reproduce it with %s -runs=1 FILE; "
			"if it needs the inputs before it: %s -runs=1 %s)",
			artifacts, fuzzer, fuzzer, history);
	}
	unlink(history); /* kept only after a crash */
	TL_CHECK(execs > 0, "no executions reported");
	TL_CHECK(execs >= floor_execs, "%ld executions in %ld s, fewer than the floor %ld (%d per second)", execs,
		 seconds, floor_execs, FLOOR_PER_S);
	fflush(stdout);
	check_reproduction(fuzzer, corpus, "1", 1);
	check_reproduction(fuzzer, corpus, "2", 0);
	return 0;
}
