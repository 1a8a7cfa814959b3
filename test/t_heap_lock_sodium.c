/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_lock_sodium - issue 29's proof for libsodium: heap mode covers the
 * memory libsodium locks itself, and keeps libsodium working as it does
 * plainly.  test/helpers/lock_sodium keeps one random key in
 * sodium_malloc() memory made read-only with sodium_mprotect_readonly(),
 * another in a malloc()ed buffer locked with sodium_mlock(); it prints what
 * each call returned and a checksum of each key, forks (the child reads
 * both keys back and overwrites them in its copy; the parent's stay
 * intact), then releases them (sodium_munlock, sodium_free's canary check).
 * Control (no module): the output is exactly as expected, and a root scan
 * through /proc/PID/mem (of the program and of a fork child
 * that kept its copy) finds both keys outside the stack.  Heap mode: the
 * same output - sodium_mlock() of a heap block returns 0, not -1 with
 * ENOMEM - and no copy of either key outside the stack.  Each is run as
 * root and as uid 65534 under `ulimit -l 8192`, the limit an ordinary user
 * has (without root only the output checks run).  Shared rig: lockrig.c.
 */
#include "lockrig.h"
#include "tlib.h"

int main(void)
{
	static const struct lr_case c = {
		.test = "t_heap_lock_sodium",
		.helper = "lock_sodium",
		.nkeys = 2,
		.name = { "guarded", "mlocked" },
		.loaded = "sodium_init: 0\nsodium_malloc: ok\nsodium_mprotect_readonly: 0\nsodium_mlock: 0\n",
		.finished = "sodium_munlock: 0\nsodium_mprotect_readwrite: 0\nsodium_free: done\n",
	};

	lr_prove(&c);
	return 0;
}
