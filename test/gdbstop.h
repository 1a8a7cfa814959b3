/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * gdbstop.h - run a program under gdb until a stop point, for a scan of its
 * memory at that moment (t_preload_keyout, t_preload_curl).
 */
#ifndef SECRETMEM_GDBSTOP_H
#define SECRETMEM_GDBSTOP_H

#include <sys/types.h>

struct gdbstop {
	pid_t gdb;       /* the gdb process (rig_spawn)            */
	int pid;         /* the stopped program                    */
	char log[300];   /* gdb's output and the program's         */
	char go[300];    /* touched by gdbstop_end()               */
};

/*
 * Start prog (NULL-terminated argv) under gdb with the module in mode
 * (NULL: without), stop it at `stop` (a gdb command such as "catch syscall
 * exit_group" or "break SSL_free") and wait until it is there.  name makes
 * the file names unique.  Fails the test when it does not stop.
 */
void gdbstop_start(struct gdbstop *g, const char *name, const char *mode, const char *stop, char *const prog[]);
/*
 * The same with any environment: env (NULL-terminated "NAME=value", or
 * NULL) set for prog; tag names the run in file names and messages; waits up
 * to wait_ms for the stop.
 */
void gdbstop_run(struct gdbstop *g, const char *name, const char *tag, const char *const *env, const char *stop,
		 char *const prog[], int wait_ms);
/* Let gdb kill the program and quit. */
void gdbstop_end(struct gdbstop *g);

#endif
