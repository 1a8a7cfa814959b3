/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heapscan.h - the proofs of heap mode (test/t_heap_*): real programs run
 * plain (the control: the scan must find their keys, which proves the scan
 * works) and with libsecretmem-heap.so preloaded (the scan must find
 * nothing outside the stack).  Builds on scan.h (the scanner and the process
 * rig) and gdbstop.h.
 *
 * Hits are counted by where they are: on the main thread's stack
 * ("[stack]"), in a core file's notes (the registers) - neither of which
 * heap mode covers, so both are reported apart - and everywhere else (the
 * heap, anonymous mappings, files), which must hold nothing in heap mode.
 */
#ifndef SECRETMEM_HEAPSCAN_H
#define SECRETMEM_HEAPSCAN_H

#include <sys/types.h>
#include "gdbstop.h"
#include "scan.h"

/* Absolute path of build/libsecretmem-heap.so, or NULL when it is not built. */
const char *heap_module(void);
/*
 * Called after the control part of a test: skips the test (77) when the
 * heap module is not built (saying that the control passed) or was built
 * with a sanitizer, and tl_need_secretmem() otherwise.
 */
void heap_need_module(const char *test);
/* Environment entries for rig_spawn() in heap mode: LD_PRELOAD of the
 * module and G_SLICE=always-malloc (as `secretmem exec --mode heap` sets
 * them; Python keeps pymalloc, whose arenas the module gives). */
const char *const *heap_env(void);

/* A random 32-byte key and its hex text (64 characters, NUL-ended) as the
 * needles "key" and "hex" (required), the key written to keyfile
 * (rig_tmpdir()/key.bin, len bytes of room) for the program to read. */
void heap_key_random(struct scan_key *needles, unsigned char key[32], char hex[65], char *keyfile, size_t len);

/* The system call thread tid of pid is in (/proc/PID/task/TID/syscall),
 * or -1 (it runs, or is gone). */
long heap_in_syscall(pid_t pid, long tid);
/* The stack tests' set-up (t_heap_stack*): heap_need_module(test), the
 * path of test/helpers/heap_stackkey in helper (PATH_MAX bytes; skips the
 * test when it is not built), a random key in key and keyfile (PATH_MAX
 * bytes), readable by uid 65534. */
void heap_stackkey_setup(const char *test, struct scan_key *key, char *helper, char *keyfile);

/* Copies found, by place. */
struct heap_hits {
	int stack;  /* in the main thread's stack ("[stack]") */
	int other;  /* anywhere else: heap, anonymous memory, files */
	int regs;   /* a core file's notes: the registers of its threads */
};
void heap_hits_count(const struct scan_result *res, struct heap_hits *h);

/*
 * Scan pid, print every copy and one summary line "<label>: N copies
 * (heap/other N, stack N), secret memory N KiB in N mappings".
 * require (a control scan): the groups (scan_needle.group, comma-separated;
 * "*": every group's required numbers) that must be found outside the
 * stack, in either byte order, else the test fails (the scanner or the
 * scenario is broken); NULL: nothing required.  heap: the process must have secret
 * memory mappings.  Returns the hits.
 */
struct heap_hits heap_scan_pid(const struct scan_key *key, pid_t pid, const char *label, const char *require,
			       int heap);
/* The same for a core file (no secret memory check).  pid > 0: the process
 * still runs, and a copy whose address (from the core's program headers)
 * lies in its [stack] counts as a stack copy.  A copy outside the dumped
 * memory is in the notes (the registers, SIMD ones included). */
struct heap_hits heap_scan_file(const struct scan_key *key, const char *path, pid_t pid, const char *label,
				const char *require);

/*
 * gdbstop_start() for heap mode: heap = 0 runs prog plainly, 1 with the
 * heap module's environment.  Stop with gdbstop_end().
 */
void heap_gdbstop_start(struct gdbstop *g, const char *name, int heap, const char *stop, char *const prog[]);

/* ---- key material of non-OpenSSL formats -------------------------------- */

/*
 * An OpenSSH private key file (unencrypted "openssh-key-v1", ssh-ed25519):
 * adds the 32-byte Ed25519 seed (required) and the file's text.  0 or -1.
 */
int heap_key_openssh_ed25519(struct scan_key *key, const char *path);
/*
 * A gpg-agent key file (private-keys-v1.d/KEYGRIP.key, extended format,
 * unprotected): adds RSA d, p, q (required) and u, or the ECC secret d
 * (required), each in both byte orders, and the file's text.  0 or -1.
 */
int heap_key_gpg(struct scan_key *key, const char *path);
/* Move the needles of src into dst (src is left empty).  0 or -1. */
int heap_key_merge(struct scan_key *dst, struct scan_key *src);

/*
 * Memory of a process from /proc/PID/smaps, in KiB of Rss: secret memory
 * mappings, the [heap], other private anonymous memory (thread stacks and
 * the like included, the main [stack] not).  -1 each when unreadable.
 */
struct heap_mem {
	long secret_kb, heap_kb, anon_kb;
};
struct heap_mem heap_mem_of(pid_t pid);

#endif
