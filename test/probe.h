/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * probe.h - run build/test/helpers/ossl_probe (an OpenSSL program of our
 * own, see its source) under the preload module, for the t_preload_* tests.
 */
#ifndef SECRETMEM_PROBE_H
#define SECRETMEM_PROBE_H

#include <stddef.h>

/* Absolute path of the helper; skips the test (77) when it is not built. */
const char *probe_path(void);
/*
 * Run the helper with args (NULL-terminated) and wait for it.  mode: NULL
 * (no module) or a SECRETMEM_OPENSSL value; extra: one more "NAME=value"
 * (or NULL).  memlock > 0: without CAP_IPC_LOCK, RLIMIT_MEMLOCK = memlock
 * (soft and hard).  stdout and stderr go to log.  Returns the exit status,
 * or -1 when it did not exit normally.
 */
int probe_run(const char *mode, const char *extra, size_t memlock, const char *log, const char *const args[]);

#endif
