/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * status.h - the report of `secretmem status`, shared by the command
 * (status.c), the gathering (status_gather.c) and the renderers
 * (status_render.c).
 *
 * status_gather() fills one struct status_report from /proc (and the user
 * database, for the names); the renderers only read it and look at nothing
 * else, so that every format shows the same scan.
 */
#ifndef SECRETMEM_STATUS_H
#define SECRETMEM_STATUS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include "../heap/heapstats.h"
#include "../preload/plstats.h"

/* libsecretmem as seen from outside a process: what its maps show. */
enum status_lib {
	STATUS_LIB_NONE,        /* nothing: static library, or the raw call */
	STATUS_LIB_SHARED,      /* libsecretmem.so                          */
	STATUS_LIB_PRELOAD,     /* libsecretmem-preload.so                  */
	STATUS_LIB_HEAP,        /* libsecretmem-heap.so                     */
};

/* The most of /proc/PID/environ and of /proc/PID/cmdline that is read:
 * the kernel's limit for the argument and environment strings of execve(2)
 * (3/4 of its 8 MiB stack limit, _STK_LIM).  Only a process that moved
 * them with prctl(PR_SET_MM) can have more; what is cut is said. */
#ifndef STATUS_STRINGS_MAX /* a smaller one only to try the cut out */
#define STATUS_STRINGS_MAX (6u << 20)
#endif

/* The modules mapped (status_holder.mods). */
#define STATUS_MOD_HEAP 1
#define STATUS_MOD_PRELOAD 2

/* One process that holds secret memory, runs the heap module, or is
 * outside a module it asked for (unprotected). */
struct status_holder {
	pid_t pid;
	uid_t uid;                   /* (uid_t)-1 if unknown                    */
	char user[64];               /* name of uid, else the number, else "?"  */
	char comm[64];
	char *cmdline;               /* arguments joined by spaces, raw bytes;
				      * each entry of a list owns its copy   */
	int cmdline_cut;             /* longer than STATUS_STRINGS_MAX       */
	char unit[256];              /* systemd unit from the cgroup, "" if none */
	char container[160];         /* container/namespace, "" if none         */
	int lib;                     /* enum status_lib                         */
	char lib_env[256];           /* SECRETMEM_* of the initial environment  */
	int env_readable;
	int env_cut;                 /* environ longer than STATUS_STRINGS_MAX */
	unsigned long long mapped;   /* bytes: smaps Size of secretmem mappings */
	unsigned long long resident; /* bytes: smaps Rss of those mappings      */
	unsigned mappings;
	unsigned fds;
	unsigned files;              /* distinct secretmem files (by inode)    */
	/* the heap module (secretmem-heap(7)): its figures page */
	unsigned long heap_page;     /* address of the page, 0 if none          */
	int heap_read;               /* 0 read, else -errno (ptrace access)     */
	struct sm_heap_stats heap;
	/* the preload module's page (preload/plstats.h), when it has one */
	unsigned long preload_page;  /* address of the page, 0 if none          */
	int preload_read;            /* 0 read, else -errno                     */
	struct sm_preload_stats preload;
	unsigned mods;               /* STATUS_MOD_*: the module files mapped  */
	/* why the process is (partly) outside a module: another allocator,
	 * an OpenSSL out of reach, a module asked for in LD_PRELOAD and not
	 * loaded; "" when nothing is known to be outside */
	char unprotected[640];
};

/* What this scan cannot see: the /proc mount and the PID namespace. */
struct status_visibility {
	char hidepid[32];     /* the /proc mount's hidepid= value, "" if none */
	char subset[32];      /* subset= value, "" if none                     */
	long gid;             /* gid= value, -1 if none                        */
	int exempt;           /* we see everything anyway (CAP_SYS_PTRACE, gid) */
	int hidden;           /* other users' processes may be invisible       */
	int pidns;            /* we are in a PID namespace below the initial one */
};

/* The uninspected processes listed by PID; more are only counted. */
#define STATUS_MAX_UNINSPECTED 64

struct status_report {
	struct status_holder *holders; /* hold secret memory, by PID       */
	size_t n;
	struct status_holder *heap_only; /* heap module, no secret memory  */
	size_t heap_n;
	struct status_holder *unprot;    /* unprotected != "", by PID      */
	size_t unprot_n;
	size_t files;             /* distinct secretmem files of all holders */
	unsigned long long mapped, resident; /* sums over the holders */
	unsigned fds;
	unsigned scanned;         /* processes looked at                    */
	unsigned uninspected;     /* processes we could not read            */
	pid_t uninspected_pid[STATUS_MAX_UNINSPECTED];
	unsigned env_cut;         /* processes whose environment was cut    */
	pid_t env_cut_pid[STATUS_MAX_UNINSPECTED];
	struct status_visibility vis;
	int hib;                  /* enum cli_hibernation */
	char power_state[256];
	int root;                 /* this process runs as root (euid 0)      */
	int complete;             /* every process seen and inspected */
	int quiet_exit;           /* the exit status of --quiet (CLI_EXIT_STATUS_*) */
	long long time;           /* when the scan ended (Unix time)   */
	const char *error;        /* why status_gather() failed, if it says */
};

/* ---- status_gather.c --------------------------------------------------- */
/* Fills r (free it with status_free() even on failure): 0, or -errno when
 * /proc cannot be read (r->error says why, when it is more than the errno:
 * /proc is no proc file system, or does not show this process) or memory
 * runs out. */
int status_gather(struct status_report *r);
void status_free(struct status_report *r);

/* ---- status_render.c --------------------------------------------------- */
void status_render_text(const struct status_report *r, FILE *out);
void status_render_json(const struct status_report *r, FILE *out);
/* The Prometheus text exposition (node_exporter's textfile collector). */
void status_render_prometheus(const struct status_report *r, FILE *out);

#endif
