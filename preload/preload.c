/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * preload.c - mode selection and the exit report of libsecretmem-preload.so.
 *
 * SECRETMEM_OPENSSL=secure (default): the exported CRYPTO_secure_* family
 * (secure.c) serves OpenSSL's secure heap - where it keeps private keys -
 * from secret memory, and OpenSSL's ordinary allocations stay in malloc()
 * but are cleared when freed.  =all: in addition every OPENSSL_malloc()
 * comes from secret memory.  The memory functions of both are installed in
 * every libcrypto of the process (libs.c, memfn.c).  =off: the module does
 * nothing (the exports forward to OpenSSL's own functions).
 *
 * SECRETMEM_REPORT=1: at exit, a few lines on stderr saying what the module
 * actually protected.  Off by default, so that outputs stay byte-identical.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"
#include "secretmem.h"
#include "preload.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int requested_mode = PL_MODE_SECURE;
int pl_report_wanted;
static int reported;
static pid_t init_pid;
static void preload_report(void);
extern unsigned long pl_count[4];

void pl_warn(const char *msg)
{
	char line[640];
	int n = snprintf(line, sizeof(line), "secretmem-preload: warning: %s\n", msg);

	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	/* One write, so that the line is not interleaved with other output. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

static void init(void)
{
	const char *v = getenv("SECRETMEM_OPENSSL");

	if (!v || !*v || strcmp(v, "secure") == 0) {
		requested_mode = PL_MODE_SECURE;
	} else if (strcmp(v, "all") == 0) {
		requested_mode = PL_MODE_ALL;
	} else if (strcmp(v, "off") == 0) {
		requested_mode = PL_MODE_OFF;
	} else {
		requested_mode = PL_MODE_SECURE;
		pl_warn("invalid value of SECRETMEM_OPENSSL (secure, all or off), using secure");
	}
	pl_report_wanted = sm_env_switch("SECRETMEM_REPORT");
	init_pid = getpid();
	/* a refusal gets the module's one warning (fallback.c), not the
	 * library's hint besides */
	if (requested_mode != PL_MODE_OFF)
		sm_failure_hint_off();
	/* another object holds the secure heap: stay out of its way (reach.c) */
	if (requested_mode != PL_MODE_OFF && pl_reach_winner())
		requested_mode = PL_MODE_OFF;
}

/*
 * Shells (dash) and many daemons leave with _exit(), which runs no
 * destructor: report there too - only in the process that loaded the
 * module, not in a forked child that never called exec.
 */
PL_EXPORT void _exit(int status);
PL_EXPORT void _Exit(int status);

__attribute__((noreturn)) static void leave(int status)
{
	if (pl_report_wanted && getpid() == init_pid)
		preload_report();
	syscall(SYS_exit_group, status);
	for (;;)
		;
}

void _exit(int status)
{
	leave(status);
}

void _Exit(int status)
{
	leave(status);
}

int pl_mode(void)
{
	pthread_once(&init_once, init);
	return requested_mode;
}

static const char *const mode_names[] = { "off", "secure", "all" };

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[400];
	va_list ap;
	int n = snprintf(line, sizeof(line), "secretmem-preload: report: ");

	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	if (write(STDERR_FILENO, line, strlen(line)) < 0)
		return;
}

/* SECRETMEM_REPORT=1: what was protected, at exit() (and _exit()). */
__attribute__((destructor)) static void preload_report(void)
{
	struct secretmem_stats st;

	if (!pl_report_wanted || __atomic_exchange_n(&reported, 1, __ATOMIC_ACQ_REL))
		return;
	say("mode %s (pid %d)", mode_names[pl_mode()], (int)getpid());
	pl_reach_report();
	if (!pl_libs_any()) {
		say("no libcrypto was loaded: nothing was protected");
		return;
	}
	pl_libs_report();
	if (pl_mode() == PL_MODE_OFF)
		return;
	/* the library's memory: secret memory, or its locked fallback where
	 * memfd_secret(2) was not usable (the backend line says which) */
	int got = secretmem_stats(&st) == 0;
	const char *lib = got && st.backend == SECRETMEM_BACKEND_FALLBACK ? "libsecretmem's locked fallback memory"
									  : "secret memory";
	say("secure heap: %lu blocks in %s, %lu in ordinary memory", __atomic_load_n(&pl_count[0], __ATOMIC_RELAXED),
	    lib, __atomic_load_n(&pl_count[1], __ATOMIC_RELAXED));
	if (pl_mode() == PL_MODE_ALL)
		say("OPENSSL_malloc: %lu blocks in %s, %lu in ordinary memory",
		    __atomic_load_n(&pl_count[2], __ATOMIC_RELAXED), lib, __atomic_load_n(&pl_count[3], __ATOMIC_RELAXED));
	if (got)
		say("secret memory: backend %s, %zu bytes mapped, %zu pages faulted in over the run",
		    secretmem_backend_name(st.backend), st.bytes_mapped, st.pages_faulted);
}

/*
 * Runs before main() and, when the program is linked with libcrypto, after
 * libcrypto is loaded but before OpenSSL's first allocation.
 */
__attribute__((constructor)) static void preload_constructor(void)
{
	pthread_once(&init_once, init);
	pl_libs_scan();
}
