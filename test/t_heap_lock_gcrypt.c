/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_lock_gcrypt - issue 29's proof for libgcrypt's secure memory:
 * GCRYCTL_INIT_SECMEM makes one pool that libgcrypt mmap()s and mlock()s
 * itself, not malloc; heap mode must cover it.  test/helpers/lock_gcrypt
 * keeps one random key in gcry_malloc_secure() memory and another as a
 * secret MPI (gcry_mpi_snew, in the pool's limbs: searched in both byte
 * orders); it prints what the calls returned (the MPI is secure, 256 bits)
 * and each key's checksum, forks (the child reads them back and overwrites
 * its copies; the parent's stay intact), then frees them.  Control (no
 * module): exactly the expected output, and a root scan through
 * /proc/PID/mem (of the program and of a fork child
 * that kept its copy) finds both keys outside the stack.  Heap mode: the same
 * output and no copy outside the stack.  Each is run as root and as uid
 * 65534 under `ulimit -l 8192` (without root only the output checks run).
 * gpg's own use of the pool: t_heap_lock_gpg.  Shared rig: lockrig.c.
 */
#include "lockrig.h"
#include "tlib.h"

int main(void)
{
	static const struct lr_case c = {
		.test = "t_heap_lock_gcrypt",
		.helper = "lock_gcrypt",
		.nkeys = 2,
		.name = { "buffer", "mpi" },
		.bignum = { 0, 1 },
		.loaded = "GCRYCTL_INIT_SECMEM: 0\nGCRYCTL_INITIALIZATION_FINISHED: 0\n"
			  "gcry_malloc_secure: is_secure 1\ngcry_mpi_snew: secure 1, 256 bits\n",
		.finished = "released\n",
	};

	lr_prove(&c);
	return 0;
}
