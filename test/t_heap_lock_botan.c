/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_lock_botan - issue 29's proof for Botan 2's locking allocator:
 * its pool is memory Botan mmap()s between guard pages and mlock()s
 * itself, which heap mode must cover.  test/helpers/lock_botan (C++) keeps
 * a random key in a Botan::secure_vector<uint8_t>, prints "VmLck > 0: yes"
 * (the pool is active; the figure itself goes to its stderr, since heap
 * mode's secret memory counts as locked too) and the key's checksum, forks
 * (the child reads it back and overwrites its copy; the parent's stays
 * intact), then frees it.  Control (no module): exactly the expected
 * output, and a root scan through /proc/PID/mem (of the program and of a fork child
 * that kept its copy) finds the key outside the
 * stack.  Heap mode: the same output and no copy outside the stack.  Each
 * is run as root and as uid 65534 under `ulimit -l 8192` (without root only
 * the output checks run).  In a sanitizer build the helper is built with
 * the sanitizer too, whose runtime makes mlock() a no-op: VmLck is then 0,
 * and only the control runs (the module is not tested there).  Shared rig:
 * lockrig.c.
 */
#include "lockrig.h"
#include "tlib.h"

int main(void)
{
	static const struct lr_case c = {
		.test = "t_heap_lock_botan",
		.helper = "lock_botan",
		.nkeys = 1,
		.name = { "vector" },
#ifdef TL_SANITIZED
		/* the sanitizers' runtime turns mlock() into a no-op that
		 * returns 0: the pool is there, but nothing is locked */
		.loaded = "Botan 2\nVmLck > 0: no\n",
#else
		.loaded = "Botan 2\nVmLck > 0: yes\n",
#endif
		.finished = "released\n",
	};

	lr_prove(&c);
	return 0;
}
