/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* gdbstop.c - a program stopped under gdb for a scan; see gdbstop.h. */
#ifndef _GNU_SOURCE /* the Makefile also passes -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gdbstop.h"
#include "scan.h"
#include "tlib.h"

void gdbstop_run(struct gdbstop *g, const char *name, const char *tag, const char *const *env, const char *stop,
		 char *const prog[], int wait_ms)
{
	const char *dir = rig_tmpdir();
	char cmds[300], ready[300];
	char *argv[40] = { "gdb", "-nx", "-batch", "-x", cmds, "--args" };
	FILE *f;
	int a = 6;

	memset(g, 0, sizeof(*g));
	snprintf(cmds, sizeof(cmds), "%s/gdb-%s-%s.cmd", dir, name, tag);
	snprintf(g->log, sizeof(g->log), "%s/gdb-%s-%s.log", dir, name, tag);
	snprintf(ready, sizeof(ready), "%s/ready-%s-%s", dir, name, tag);
	snprintf(g->go, sizeof(g->go), "%s/go-%s-%s", dir, name, tag);
	f = fopen(cmds, "we");
	if (!f)
		TL_FAIL("%s: %s", cmds, strerror(errno));
	fprintf(f, "set startup-with-shell off\nset breakpoint pending on\nset pagination off\nset confirm off\n");
	for (; env && *env; env++)
		fprintf(f, "set environment %s\n", *env);
	fprintf(f, "%s\nrun\ninfo proc\nshell touch '%s'\n"
		   "shell while [ ! -e '%s' ]; do sleep 0.05; done\nkill\nquit\n", stop, ready, g->go);
	fclose(f);
	for (int i = 0; prog[i] && a < 39; i++)
		argv[a++] = prog[i];
	argv[a] = NULL;
	g->gdb = rig_spawn(argv, NULL, g->log, dir, 0);
	for (int i = 0; i < wait_ms / 10 && access(ready, F_OK) != 0; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	f = fopen(g->log, "re");
	if (f) {
		char line[512];

		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "process %d", &g->pid) == 1)
				break;
		fclose(f);
	}
	if (access(ready, F_OK) != 0 || g->pid <= 0 ||
	    (!rig_file_has(g->log, "Breakpoint 1, ") && !rig_file_has(g->log, "Catchpoint 1 (call to syscall"))) {
		rig_cat(g->log);
		TL_FAIL("%s, %s: the program did not stop at '%s' under gdb", name, tag, stop);
	}
}

void gdbstop_start(struct gdbstop *g, const char *name, const char *mode, const char *stop, char *const prog[])
{
	char preload[4200], openssl[64];
	const char *env[] = { preload, openssl, "ASAN_OPTIONS=detect_leaks=0", NULL };

	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", mode ? rig_ld_preload() : "");
	snprintf(openssl, sizeof(openssl), "SECRETMEM_OPENSSL=%s", mode ? mode : "");
	gdbstop_run(g, name, mode ? mode : "none", mode ? env : NULL, stop, prog, 30000);
}

void gdbstop_end(struct gdbstop *g)
{
	rig_sh("touch '%s'", g->go);
	rig_stop(g->gdb);
}
