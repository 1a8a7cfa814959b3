/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_openssl - OpenSSL under the heap module (test/helpers/heap_ossl):
 * OPENSSL_malloc and, while the program has not initialized OpenSSL's
 * secure heap (the default), OPENSSL_secure_malloc and a secure BIGNUM are
 * malloc() blocks, so they are in secret memory; after
 * CRYPTO_secure_malloc_init() OpenSSL serves its secure heap from its own
 * mmap()ed arena, which it locks (syscall(SYS_mlock2, ...)): the heap module
 * makes that arena secret memory too (secretmem-heap(7), LOCKED MEMORY).
 * Without the module everything is ordinary memory.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heaprig.h"
#include "scan.h"
#include "tlib.h"

int main(void)
{
	char helper[PATH_MAX], out[PATH_MAX];

	tl_need_secretmem();
	const char *mod = hr_module();
	if (!realpath(tl_build_path("test/helpers/heap_ossl"), helper))
		tl_skip("test/helpers/heap_ossl is not built");
	snprintf(out, sizeof(out), "%s/ossl.out", rig_tmpdir());
	TL_CHECK(rig_sh("LD_PRELOAD='%s' '%s' > '%s' 2>&1", mod, helper, out) == 0, "heap_ossl under the module");
	rig_cat(out);
	TL_CHECK(rig_file_has(out, "OPENSSL_malloc s") && rig_file_has(out, "OPENSSL_secure_malloc s") &&
		 rig_file_has(out, "BN_secure_new s"), "OpenSSL's malloc blocks not in secret memory");
	TL_CHECK(rig_file_has(out, "OPENSSL_secure_malloc-after-init s"),
		 "OpenSSL's own secure arena (locked by OpenSSL) is not secret memory");
	TL_CHECK(rig_sh("'%s' > '%s' 2>&1", helper, out) == 0 && rig_file_has(out, "OPENSSL_malloc o") &&
		 rig_file_has(out, "OPENSSL_secure_malloc o") && rig_file_has(out, "OPENSSL_secure_malloc-after-init o"),
		 "control without the module");
	printf("pass\n");
	return 0;
}
