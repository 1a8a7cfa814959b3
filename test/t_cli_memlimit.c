/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_memlimit.c - `secretmem check` under a tiny memory-lock limit
 * (ulimit -l 0 and 4, without CAP_IPC_LOCK): the verdict is "memory-lock
 * limit too small", names the limit and the bytes needed, explains that
 * secretmem_supported() says yes while allocations fail, exits 3 (not 1:
 * the kernel is not at fault), and the JSON says the same.  Limits of
 * 1 MiB, 64 KiB (what the verdict says is needed) and 72 KiB are enough:
 * verdict usable, every case passes.
 */
#include <stdio.h>
#include <string.h>
#include "secretmem.h"
#include "cli_run.h"

static size_t limit;

static int pre_limit(void)
{
	if (tl_drop_cap_ipc_lock() != 0 || tl_set_memlock(limit) != 0)
		return 3;
	return 0;
}

int main(void)
{
	static char out[1 << 16];
	char *text[] = { NULL, "check", NULL };
	char *json[] = { NULL, "check", "--json", NULL };
	static const size_t limits[] = { 0, 4096 };
	char want[64];
	int st;

	tl_need_secretmem();
	if (geteuid() != 0)
		tl_skip("needs root to drop CAP_IPC_LOCK from the bounding set");
	for (size_t i = 0; i < 2; i++) {
		limit = limits[i];
		st = run_cli(text, out, sizeof(out), 0, pre_limit);
		printf("--- RLIMIT_MEMLOCK %zu ---\n%s", limit, out);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3, "limit %zu: %s, expected exit 3", limit,
			 tl_status_str(st));
		TL_CHECK(strncmp(out, "verdict: memory-lock limit too small - ", 39) == 0,
			 "limit %zu: wrong verdict line", limit);
		char *nl = strchr(out, '\n');
		*nl = '\0';
		snprintf(want, sizeof(want), "allows %zu bytes", limit);
		TL_CHECK(strstr(out, want) != NULL, "limit %zu: the verdict does not name the limit", limit);
		TL_CHECK(strstr(out, "at least 65536 bytes") != NULL, "the verdict does not say what is needed");
		TL_CHECK(strstr(out, "secretmem_supported() returns 0") != NULL,
			 "the verdict does not explain secretmem_supported()");
		if (limit == 0)
			TL_CHECK(strstr(out, "a one-page libsecretmem region fails with") &&
				 strstr(out, "allocations fail"),
				 "limit 0: the verdict does not show the library failing");
		else
			TL_CHECK(strstr(out, "at most 1 page of secrets") != NULL,
				 "limit 4096: the verdict does not say how much fits");
		*nl = '\n';
		TL_CHECK(strstr(out, "kernel does not behave") == NULL, "blames the kernel");

		st = run_cli(json, out, sizeof(out), 0, pre_limit);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3, "limit %zu --json: %s", limit,
			 tl_status_str(st));
		char *file = save_tmp(out);
		char *py[] = { "python3", "test/cli_json.py", "check", file, "memlock limit too small", NULL };
		int ok = json_ok(py);
		unlink(file);
		TL_CHECK(ok, "limit %zu: JSON rejected:\n%s", limit, out);
	}
	/* a sufficient limit without CAP_IPC_LOCK is fine: 1 MiB, and the
	 * 64 KiB the verdict names (every case passed 64-88 KiB when the no-fd
	 * case's blocks needed more than that: "the kernel does not behave") */
	static const size_t enough[] = { 1u << 20, 64u << 10, 72u << 10 };
	for (size_t i = 0; i < 3; i++) {
		limit = enough[i];
		st = run_cli(text, out, sizeof(out), 0, pre_limit);
		printf("--- RLIMIT_MEMLOCK %zu ---\n%.300s\n", limit, out);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "limit %zu: %s, expected 0", limit, tl_status_str(st));
		TL_CHECK(strncmp(out, "verdict: usable", 15) == 0, "limit %zu: verdict not usable", limit);
	}
	return TL_PASS;
}
