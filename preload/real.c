/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * real.c - find the OpenSSL definitions that the module's exports hide.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include "preload.h"

static const char *const real_names[PL_REAL_COUNT] = {
	[PL_REAL_SECURE_MALLOC] = "CRYPTO_secure_malloc",
	[PL_REAL_SECURE_ZALLOC] = "CRYPTO_secure_zalloc",
	[PL_REAL_SECURE_FREE] = "CRYPTO_secure_free",
	[PL_REAL_SECURE_CLEAR_FREE] = "CRYPTO_secure_clear_free",
	[PL_REAL_SECURE_ALLOCATED] = "CRYPTO_secure_allocated",
	[PL_REAL_SECURE_ACTUAL_SIZE] = "CRYPTO_secure_actual_size",
	[PL_REAL_SECURE_USED] = "CRYPTO_secure_used",
	[PL_REAL_SECURE_INITIALIZED] = "CRYPTO_secure_malloc_initialized",
	[PL_REAL_SECURE_INIT] = "CRYPTO_secure_malloc_init",
	[PL_REAL_SECURE_DONE] = "CRYPTO_secure_malloc_done",
	[PL_REAL_BN_MONT_CTX_SET_LOCKED] = "BN_MONT_CTX_set_locked",
	[PL_REAL_SET_MEM_FUNCTIONS] = "CRYPTO_set_mem_functions",
	[PL_REAL_PARAM_GET_BN] = "OSSL_PARAM_get_BN",
};

static void *real_cache[PL_REAL_COUNT];

/* 1 if addr lies in this module (a lookup that found our own export). */
static int in_this_module(void *addr)
{
	Dl_info self, other;

	if (!dladdr((void *)(uintptr_t)in_this_module, &self) || !dladdr(addr, &other))
		return 0;
	return self.dli_fbase == other.dli_fbase;
}

/*
 * Look name up in the scope of the object containing caller: that object and
 * its dependencies, where a libcrypto loaded with RTLD_LOCAL is found.
 */
static void *lookup_from_caller(const char *name, const void *caller)
{
	Dl_info info;
	void *handle, *sym = NULL;

	if (!caller || !dladdr(caller, &info) || !info.dli_fname || !info.dli_fname[0])
		return NULL;
	handle = pl_dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!handle)
		return NULL;
	sym = dlsym(handle, name);
	dlclose(handle);
	return sym;
}

void *pl_real(int fn, const void *caller)
{
	void *sym;

	if (fn < 0 || fn >= PL_REAL_COUNT)
		return NULL;
	sym = __atomic_load_n(&real_cache[fn], __ATOMIC_ACQUIRE);
	if (sym)
		return sym;
	sym = dlsym(RTLD_NEXT, real_names[fn]);
	if (!sym || in_this_module(sym))
		sym = lookup_from_caller(real_names[fn], caller);
	if (!sym || in_this_module(sym))
		return NULL;
	__atomic_store_n(&real_cache[fn], sym, __ATOMIC_RELEASE);
	return sym;
}
