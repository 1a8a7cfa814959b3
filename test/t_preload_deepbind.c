/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_preload_deepbind - libcrypto opened with dlopen(RTLD_DEEPBIND) under
 * the preload module (secretmem-preload(7), RTLD_DEEPBIND): deep binding
 * bound libcrypto's calls of CRYPTO_secure_zalloc to its own secure heap
 * (without CRYPTO_secure_malloc_init: plain malloc), so a BN_secure_new()
 * number lived in ordinary memory, silently.  Now the module binds them to
 * itself, says so once, and the number's limbs are secret memory in modes
 * secure and all; libcrypto still computes (a modular exponentiation
 * checked against its known result).  Without the module the limbs are
 * ordinary memory (the control of the check).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heaprig.h"
#include "scan.h"
#include "tlib.h"

typedef void *(*bn_new_fn)(void);
typedef int (*bn_set_fn)(void *, unsigned long);
typedef void *(*ctx_new_fn)(void);
typedef int (*bn_modexp_fn)(void *, const void *, const void *, const void *, void *);
typedef unsigned long (*bn_get_fn)(const void *);

static int child(void)
{
	void *h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_DEEPBIND);
	if (!h) {
		printf("dlopen: %s\n", dlerror());
		return 2;
	}
	bn_new_fn secure_new = (bn_new_fn)dlsym(h, "BN_secure_new"), plain_new = (bn_new_fn)dlsym(h, "BN_new");
	bn_set_fn set = (bn_set_fn)dlsym(h, "BN_set_word");
	ctx_new_fn ctx_new = (ctx_new_fn)dlsym(h, "BN_CTX_new");
	bn_modexp_fn modexp = (bn_modexp_fn)dlsym(h, "BN_mod_exp");
	bn_get_fn get = (bn_get_fn)dlsym(h, "BN_get_word");
	if (!secure_new || !plain_new || !set || !ctx_new || !modexp || !get)
		return 2;
	void *k = secure_new(), *b = plain_new(), *e = plain_new(), *m = plain_new(), *r = plain_new();
	if (!k || !b || !e || !m || !r || !set(k, 0x5ec2e7) || !set(b, 7) || !set(e, 560) || !set(m, 561))
		return 2;
	/* struct bignum_st starts with its limbs pointer (OpenSSL 1.1 and 3) */
	void *limbs = *(void **)k;
	int where = hr_where(limbs);
	if (!modexp(r, b, e, m, ctx_new()) || get(r) != 1) /* Fermat: 7^560 = 1 mod 561 (Carmichael) */
		return 3;
	printf("limbs %c\n", where);
	return where == 's' ? 0 : 1;
}

int main(int argc, char **argv)
{
	static char out[8192];
	char pre[PATH_MAX + 16], want[256];

	if (argc > 1)
		return child();
	tl_need_secretmem();
	rig_skip_if_tsan();
	const char *module = rig_preload();
	if (rig_preload_sanitizer())
		tl_skip("a sanitizer build: the module needs its runtime first in LD_PRELOAD");
	void *probe = dlopen("libcrypto.so.3", RTLD_LAZY);
	if (!probe)
		tl_skip("needs libcrypto.so.3 (Debian package libssl3)");
	dlclose(probe);

	const char *none[] = { NULL };
	int st = tl_run_self(argv[0], "child", none, out, sizeof(out));
	printf("without the module: %s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(out, "limbs o"), "control: %s", tl_status_str(st));
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", module);
	static const char *const modes[] = { "SECRETMEM_OPENSSL=secure", "SECRETMEM_OPENSSL=all" };
	for (int i = 0; i < 2; i++) {
		const char *env[] = { pre, modes[i], NULL };
		st = tl_run_self(argv[0], "child", env, out, sizeof(out));
		printf("%s: %s", modes[i], out);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s", modes[i], tl_status_str(st));
		snprintf(want, sizeof(want), "secretmem-preload: warning: libcrypto.so.3 was opened with RTLD_DEEPBIND: its "
			 "calls of the module's functions are bound to the module (");
		char *hit = strstr(out, want);
		TL_CHECK(hit && !strstr(hit + 1, want), "%s: want one line %s", modes[i], want);
	}
	printf("pass\n");
	return 0;
}
