/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_status - `secretmem status` shows, per process, the heap module and
 * its figures: a program run by `secretmem exec --mode heap` holding small
 * blocks and a 2 MiB block (above the huge threshold) is listed with
 * libsecretmem "heap", secret bytes > 0 and plain bytes >= 2 MiB, in the
 * text, --json (schema checked by test/cli_json.py) and --prometheus
 * outputs; a program with both modules in LD_PRELOAD has the heap module
 * stood down (one allocator, one set of fork handlers): no secret memory of
 * its own, listed under "heap mode without secret memory" with its blocks
 * in ordinary memory.  The stacks: 0 bytes secret and the clearings of
 * dead frames counted (the program waits in pause()), or "not cleared"
 * for one run with SECRETMEM_HEAP_STACKS=0.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "heaprig.h"
#include "scan.h"
#include "tlib.h"

static int hold(void)
{
	void *volatile keep[100];

	for (int i = 0; i < 100; i++)
		keep[i] = malloc(100);
	void *volatile big = malloc((size_t)2 << 20);
	memset(big, 1, (size_t)2 << 20);
	int secret = hr_where(keep[0]) == 's';
	printf("ready %c\n", secret ? 's' : 'o');
	fflush(stdout);
	pause();
	return 0;
}

/* Start argv with env (NULL-terminated "NAME=value" list); wait for its
 * "ready" line; *where gets 's' or 'o' (where its blocks live). */
static pid_t start(char *const argv[], const char *const env[], int *where)
{
	int fds[2];
	char line[64] = "";

	TL_CHECK(pipe(fds) == 0, "pipe");
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		for (int i = 0; env[i]; i++)
			putenv(strdup(env[i]));
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	FILE *f = fdopen(fds[0], "r");
	TL_CHECK(f && fgets(line, sizeof(line), f) && strncmp(line, "ready ", 6) == 0, "no ready line from %s", argv[0]);
	*where = line[6];
	fclose(f);
	return pid;
}

int main(int argc, char **argv)
{
	char tool[PATH_MAX], self[PATH_MAX], pre[PATH_MAX + 40], json[PATH_MAX], text[PATH_MAX], prom[PATH_MAX];
	int wa, wb, wc;

	if (argc > 1)
		return hold();
	tl_need_secretmem();
	tl_need_root("reads the figures page of another process through /proc/PID/mem");
	const char *mod = hr_module();
	TL_CHECK(realpath(tl_build_path("secretmem"), tool) && realpath(argv[0], self), "paths");
	const char *preload = rig_preload();

	char *av[] = { tool, "exec", "--mode", "heap", "--", self, "hold", NULL };
	const char *noenv[] = { NULL };
	pid_t a = start(av, noenv, &wa);
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s:%s", mod, preload);
	char *bv[] = { self, "hold", NULL };
	const char *benv[] = { pre, NULL };
	pid_t b = start(bv, benv, &wb);
	const char *offenv[] = { "SECRETMEM_HEAP_STACKS=0", NULL };
	pid_t c = start(av, offenv, &wc);
	TL_CHECK(wa == 's' && wb == 'o' && wc == 's', "blocks: heap mode %c, both modules %c, stacks off %c", wa, wb, wc);
	struct timespec idle = { 0, 100000000 }; /* a waits in pause(): cleared */
	nanosleep(&idle, NULL);

	const char *dir = rig_tmpdir();
	snprintf(json, sizeof(json), "%s/status.json", dir);
	snprintf(text, sizeof(text), "%s/status.txt", dir);
	snprintf(prom, sizeof(prom), "%s/status.prom", dir);
	TL_CHECK(rig_sh("'%s' status > '%s' && '%s' status --json > '%s' && '%s' status --prometheus '%s' >/dev/null", tool,
			text, tool, json, tool, prom) == 0, "status failed");
	rig_cat(text);
	TL_CHECK(rig_sh("python3 test/cli_json.py status '%s'", json) == 0, "status --json rejected");
	TL_CHECK(rig_sh("python3 - '%s' %d %d %d <<'EOF'\n"
			"import json, sys\n"
			"d = json.load(open(sys.argv[1])); a, b, c = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])\n"
			"p = [x for x in d['processes'] if x['pid'] == a][0]\n"
			"h = p['heap']\n"
			"assert p['libsecretmem']['seen'] == 'heap', p['libsecretmem']\n"
			"assert h['readable'] and h['state'] == 'active', h\n"
			"assert 0 < h['secret_bytes'] <= p['mapped_bytes'], h\n"
			"assert h['plain_bytes'] >= 2 << 20 and h['huge_allocations'] >= 1, h\n"
			"assert h['huge_threshold'] == 1 << 20 and not h['require'] and h['early_bytes'] == 0, h\n"
			"assert h['stacks'] == 'cleared' and h['stack_clearings'] >= 1 and h['stack_secret_bytes'] == 0, h\n"
			"h = [x for x in d['processes'] if x['pid'] == c][0]['heap']\n"
			"assert h['stacks'] == 'not cleared' and h['stack_clearings'] == 0 and h['stack_secret_bytes'] == 0, h\n"
			"assert not [x for x in d['processes'] if x['pid'] == b], 'stood-down process holds secret memory'\n"
			"q = [x for x in d['heap_without_secret_memory'] if x['pid'] == b][0]['heap']\n"
			"assert q['state'] == 'stood down' and q['plain_bytes'] >= 2 << 20 and q['secret_bytes'] == 0, q\n"
			"EOF", json, (int)a, (int)b, (int)c) == 0,
		 "status --json figures wrong");
	char want[256];
	snprintf(want, sizeof(want), "heap mode without secret memory: %d ", (int)b);
	TL_CHECK(rig_file_has(text, want) && rig_file_has(text, "stood down (the OpenSSL preload module is loaded too)"),
		 "text: stood-down process");
	TL_CHECK(rig_file_has(text, "libsecretmem: heap module (secretmem exec --mode heap)") &&
		 rig_file_has(text, "         heap: secret "), "text: heap process");
	TL_CHECK(rig_file_has(text, ", stacks 0 bytes secret, ") && rig_file_has(text, " clearings of dead frames") &&
		 rig_file_has(text, ", stacks 0 bytes secret, dead frames not cleared"), "text: stacks");
	snprintf(want, sizeof(want), "secretmem_heap_plain_bytes{pid=\"%d\",", (int)a);
	TL_CHECK(rig_file_has(prom, want), "prometheus: %s", want);
	TL_CHECK(rig_sh("python3 test/cli_prom.py '%s'", prom) == 0, "prometheus file rejected");
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	kill(c, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	waitpid(c, NULL, 0);
	printf("pass\n");
	return 0;
}
