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

void gdbstop_start(struct gdbstop *g, const char *name, const char *mode, const char *stop, char *const prog[])
{
	const char *dir = rig_tmpdir(), *m = mode ? mode : "none";
	char cmds[300], ready[300];
	char *argv[32] = { "gdb", "-nx", "-batch", "-x", cmds, "--args" };
	FILE *f;
	int a = 6;

	memset(g, 0, sizeof(*g));
	snprintf(cmds, sizeof(cmds), "%s/gdb-%s-%s.cmd", dir, name, m);
	snprintf(g->log, sizeof(g->log), "%s/gdb-%s-%s.log", dir, name, m);
	snprintf(ready, sizeof(ready), "%s/ready-%s-%s", dir, name, m);
	snprintf(g->go, sizeof(g->go), "%s/go-%s-%s", dir, name, m);
	f = fopen(cmds, "we");
	if (!f)
		TL_FAIL("%s: %s", cmds, strerror(errno));
	fprintf(f, "set startup-with-shell off\nset breakpoint pending on\nset pagination off\nset confirm off\n");
	if (mode)
		fprintf(f, "set environment LD_PRELOAD=%s\nset environment SECRETMEM_OPENSSL=%s\n"
			   "set environment ASAN_OPTIONS=detect_leaks=0\n", rig_ld_preload(), mode);
	fprintf(f, "%s\nrun\ninfo proc\nshell touch '%s'\n"
		   "shell while [ ! -e '%s' ]; do sleep 0.05; done\nkill\nquit\n", stop, ready, g->go);
	fclose(f);
	for (int i = 0; prog[i] && a < 31; i++)
		argv[a++] = prog[i];
	argv[a] = NULL;
	g->gdb = rig_spawn(argv, NULL, g->log, dir, 0);
	for (int i = 0; i < 3000 && access(ready, F_OK) != 0; i++) {
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
		TL_FAIL("%s, mode %s: the program did not stop at '%s' under gdb", name, m, stop);
	}
}

void gdbstop_end(struct gdbstop *g)
{
	rig_sh("touch '%s'", g->go);
	rig_stop(g->gdb);
}
