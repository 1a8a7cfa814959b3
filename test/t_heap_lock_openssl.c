/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_lock_openssl - issue 29's proof for OpenSSL 3's secure heap, set
 * up by the program itself: CRYPTO_secure_malloc_init() mmap()s an arena
 * between guard pages and locks it (mlock2 MLOCK_ONFAULT, or mlock), which
 * heap mode must cover.  test/helpers/lock_openssl keeps one random key in
 * OPENSSL_secure_malloc() memory and another in a BN_secure_new() number
 * (limbs: searched in both byte orders); it prints what the calls returned
 * (CRYPTO_secure_allocated of both buffers, the BIGNUM's BN_FLG_SECURE,
 * CRYPTO_secure_used) and each key's checksum, forks (the child reads them
 * back and overwrites its copies; the parent's stay intact), then frees
 * them and ends the secure heap (CRYPTO_secure_malloc_done).  Control (no
 * module): exactly the expected output, and a root scan through
 * /proc/PID/mem (of the program and of a fork child
 * that kept its copy) finds both keys outside the stack.  Heap mode: the same
 * output and no copy outside the stack.  Each is run as root and as uid
 * 65534 under `ulimit -l 8192` (without root only the output checks run).
 * Shared rig: lockrig.c.
 */
#include "lockrig.h"
#include "tlib.h"

int main(void)
{
	static const struct lr_case c = {
		.test = "t_heap_lock_openssl",
		.helper = "lock_openssl",
		.nkeys = 2,
		.name = { "secure", "bn" },
		.bignum = { 0, 1 },
		.loaded = "CRYPTO_secure_malloc_init: 1\nCRYPTO_secure_malloc_initialized: 1\n"
			  "OPENSSL_secure_malloc: CRYPTO_secure_allocated 1\ntemporary: CRYPTO_secure_allocated 1\n"
			  "BN_secure_new: BN_FLG_SECURE 1, 256 bits\nCRYPTO_secure_used: 64\n",
		.finished = "CRYPTO_secure_used after freeing: 0\nCRYPTO_secure_malloc_done: 1\n",
	};

	lr_prove(&c);
	return 0;
}
