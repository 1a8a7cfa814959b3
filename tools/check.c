/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * check.c - `secretmem check`: is secret memory usable here, and does the
 * kernel's memfd_secret(2) behave as documented?
 *
 * The verdict comes from secretmem_supported(); the cases (cases.c) then run
 * one by one, each in its own child process (in its own process group, under
 * an alarm), and report PASS, FAIL or SKIP with a one-line reason through a
 * pipe; a case that crashes or hangs is a FAIL with the signal as reason, and
 * the tool goes on.  Then the environment is printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "cli.h"

#define CASE_TIMEOUT 20         /* seconds a case may take */

static const char *const verdict_names[] = { "PASS", "FAIL", "SKIP" };

__attribute__((format(printf, 2, 3)))
static void runner_fail(struct case_result *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r->verdict = CASE_FAIL;
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
}

/* ---- the runner ------------------------------------------------------ */

static void run_case(const struct check_case *c, struct case_result *res)
{
	int p[2], st, timed_out = 0;
	pid_t pid;
	size_t got = 0;

	memset(res, 0, sizeof(*res));
	if (pipe2(p, O_CLOEXEC) != 0) {
		runner_fail(res, "cannot run the case: pipe: %s", cli_errno_name(errno));
		return;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		runner_fail(res, "cannot run the case: fork: %s", cli_errno_name(errno));
		return;
	}
	if (pid == 0) {
		struct case_result out;
		struct rlimit rl;
		close(p[0]);
		setpgid(0, 0);
		if (getrlimit(RLIMIT_CORE, &rl) == 0) {
			rl.rlim_cur = 0; /* a crashing case leaves no core behind */
			setrlimit(RLIMIT_CORE, &rl);
		}
		signal(SIGPIPE, SIG_DFL);
		signal(SIGALRM, SIG_DFL); /* an inherited SIG_IGN would disarm the alarm */
		alarm(CASE_TIMEOUT);
		memset(&out, 0, sizeof(out));
		out.verdict = c->fn(&out);
		if (write(p[1], &out, sizeof(out)) != (ssize_t)sizeof(out))
			_exit(3);
		_exit(0);
	}
	setpgid(pid, pid); /* also here: no window before the child's own call */
	close(p[1]);
	for (;;) {
		struct pollfd pfd = { p[0], POLLIN, 0 };
		int n = poll(&pfd, 1, (CASE_TIMEOUT + 5) * 1000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			kill(pid, SIGKILL);
			timed_out = 1;
			break;
		}
		ssize_t k = read(p[0], (char *)res + got, sizeof(*res) - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
		if (got == sizeof(*res))
			break;
	}
	close(p[0]);
	kill(-pid, SIGKILL); /* whatever the case left behind in its group */
	st = cli_wait(pid);
	if (got == sizeof(*res) && res->verdict >= CASE_PASS && res->verdict <= CASE_SKIP) {
		res->reason[sizeof(res->reason) - 1] = '\0';
		return;
	}
	memset(res, 0, sizeof(*res));
	if (timed_out || (st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM))
		runner_fail(res, "timed out after %d s", CASE_TIMEOUT);
	else if (st != -1 && WIFSIGNALED(st))
		runner_fail(res, "the case crashed: %s", cli_status_text(st));
	else
		runner_fail(res, "the case ended without a result (%s)", cli_status_text(st));
}

/* ---- environment ----------------------------------------------------- */

struct env {
	struct utsname uts;
	char enable[16];          /* secretmem.enable, "" if unreadable */
	int seccomp;
	struct rlimit memlock;
	int cap_ipc_lock;
	const char *regime;
	const char *regime_why;
	int hibernation;
	char power_state[256];
	char power_disk[256];     /* "" if absent */
	int power_disk_present;
	long long directmap[3];   /* kB; -1 unknown */
};

static void detect_regime(struct env *e, int usable)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char flags[256];
	unsigned char *m;

	e->regime = "unknown";
	e->regime_why = "memfd_secret is not usable here";
	if (!usable)
		return;
	m = cli_secret_map(page);
	if (!m) {
		if (errno == EAGAIN) {
			e->regime = "mmap-time";
			e->regime_why = "mmap of one page is EAGAIN: the limit is checked at mmap";
		} else {
			e->regime_why = "a one-page secret mapping failed";
		}
		return;
	}
	if (cli_vmflags_of(m, flags, sizeof(flags)) == 0) {
		if (cli_has_word(flags, "lo")) {
			e->regime = "mmap-time";
			e->regime_why = "VM_LOCKED mapping (smaps 'lo'); mmap fails with EAGAIN over the limit";
		} else {
			e->regime = "fault-time";
			e->regime_why = "no 'lo' in smaps; pages are charged when faulted in";
		}
	} else {
		e->regime_why = "the mapping is not in /proc/self/smaps";
	}
	munmap(m, page);
}

static void read_env(struct env *e, int usable)
{
	char buf[8192];

	memset(e, 0, sizeof(*e));
	uname(&e->uts);
	if (cli_read_file("/sys/module/secretmem/parameters/enable", e->enable, sizeof(e->enable)) < 0)
		e->enable[0] = '\0';
	e->seccomp = cli_seccomp_mode();
	getrlimit(RLIMIT_MEMLOCK, &e->memlock);
	e->cap_ipc_lock = cli_has_cap_ipc_lock() == 1;
	detect_regime(e, usable);
	e->hibernation = cli_hibernation(e->power_state, sizeof(e->power_state));
	e->power_disk_present = cli_read_file("/sys/power/disk", e->power_disk,
					      sizeof(e->power_disk)) >= 0;
	if (!e->power_disk_present)
		e->power_disk[0] = '\0';
	e->directmap[0] = e->directmap[1] = e->directmap[2] = -1;
	if (cli_read_file("/proc/meminfo", buf, sizeof(buf)) >= 0) {
		static const char *const keys[] = { "DirectMap4k:", "DirectMap2M:", "DirectMap1G:" };
		for (int i = 0; i < 3; i++) {
			const char *p = strstr(buf, keys[i]);
			if (p)
				e->directmap[i] = strtoll(p + strlen(keys[i]), NULL, 10);
		}
	}
}

static const char *seccomp_text(int mode)
{
	switch (mode) {
	case 0:
		return "disabled";
	case 1:
		return "strict";
	case 2:
		return "filter";
	default:
		return "unknown";
	}
}

static void not_usable_reason(int err, const struct env *e, char *buf, size_t size)
{
#ifndef CLI_NR_MEMFD_SECRET
	(void)err;
	(void)e;
	snprintf(buf, size, "this architecture has no memfd_secret system call (%s)",
		 cli_strerror(ENOSYS));
#else
	if (err == ENOSYS && e->enable[0] == 'N')
		snprintf(buf, size, "memfd_secret fails with %s: disabled by secretmem.enable=0 "
			 "(boot with secretmem.enable=1)", cli_strerror(err));
	else if (err == ENOSYS && e->seccomp == 2)
		snprintf(buf, size, "memfd_secret fails with %s: a seccomp filter of this process "
			 "refuses it%s", cli_strerror(err),
			 e->enable[0] == 'Y' ? " (the kernel has it: secretmem.enable=Y)" :
			 ", or the kernel lacks it");
	else if (err == ENOSYS)
		snprintf(buf, size, "memfd_secret fails with %s: the kernel lacks it (before 5.14, "
			 "built without CONFIG_SECRETMEM, disabled by secretmem.enable=0 - the default "
			 "before 6.5 - or an architecture that cannot change its direct map)",
			 cli_strerror(err));
	else if (err == EPERM)
		snprintf(buf, size, "memfd_secret fails with %s: refused by a seccomp filter "
			 "(seccomp mode: %s) or a security module", cli_strerror(err),
			 seccomp_text(e->seccomp));
	else
		snprintf(buf, size, "memfd_secret fails with %s", cli_strerror(err));
#endif
}

static void print_limit(FILE *out, rlim_t v)
{
	if (v == RLIM_INFINITY)
		fputs("unlimited", out);
	else
		fprintf(out, "%llu", (unsigned long long)v);
}

static void json_limit(struct json *j, const char *key, rlim_t v)
{
	if (v == RLIM_INFINITY)
		json_null(j, key);
	else
		json_uint(j, key, (unsigned long long)v);
}

static const char *hibernation_text(const struct env *e)
{
	static char buf[400];

	switch (e->hibernation) {
	case CLI_HIBERNATION_AVAILABLE:
		snprintf(buf, sizeof(buf), "available (/sys/power/state: \"%s\")", e->power_state);
		break;
	case CLI_HIBERNATION_UNAVAILABLE:
		snprintf(buf, sizeof(buf), "supported but unavailable now (/sys/power/state: \"%s\"; "
			 "see `secretmem status`)", e->power_state);
		break;
	default:
		snprintf(buf, sizeof(buf), "not supported on this machine (/sys/power/state: \"%s\", "
			 "no /sys/power/disk)", e->power_state);
	}
	return buf;
}

static int usage_check(FILE *out, int rc)
{
	fputs("usage: secretmem check [--json]\n"
	      "Runs the memfd_secret conformance cases and prints a verdict, a table of cases\n"
	      "and the environment.  Exit: 0 usable and every case passed, 1 a case failed,\n"
	      "2 secret memory not usable here, 64 usage error.\n",
	      out);
	return rc;
}

int cmd_check(int argc, char **argv)
{
	struct case_result *results;
	struct env env;
	char reason[512] = "";
	int json = 0, usable, err, backend, npass = 0, nfail = 0, nskip = 0, rc;

	rc = cli_parse_json_option(argc, argv, "check", usage_check, &json);
	if (rc >= 0)
		return rc;
	cli_cases_init();
	results = calloc(cli_ncases, sizeof(*results));
	if (!results) {
		fprintf(stderr, "secretmem check: out of memory\n");
		return CLI_EXIT_OSERR;
	}
	err = -secretmem_supported();
	usable = err == 0;
	backend = secretmem_default_backend();
	read_env(&env, usable);
	if (!usable)
		not_usable_reason(err, &env, reason, sizeof(reason));

	for (size_t i = 0; i < cli_ncases; i++) {
		if (!usable) {
			results[i].verdict = CASE_SKIP;
			snprintf(results[i].reason, sizeof(results[i].reason),
				 "memfd_secret is not usable here (%s)", cli_errno_name(err));
		} else {
			run_case(&cli_cases[i], &results[i]);
		}
		npass += results[i].verdict == CASE_PASS;
		nfail += results[i].verdict == CASE_FAIL;
		nskip += results[i].verdict == CASE_SKIP;
	}
	rc = !usable ? CLI_EXIT_NOT_USABLE : nfail ? CLI_EXIT_CASE_FAILED : CLI_EXIT_OK;

	const char *fallback_text =
		backend == SECRETMEM_BACKEND_FALLBACK ?
			"libsecretmem falls back to mlock()ed, MADV_DONTDUMP private memory "
			"(kept out of swap and core dumps, but readable by root); set "
			"SECRETMEM_REQUIRE=1 to refuse instead" :
		backend == SECRETMEM_BACKEND_NONE ?
			"forbidden (SECRETMEM_REQUIRE=1): libsecretmem refuses to create secret memory" :
			"not needed";

	if (json) {
		struct json j;
		json_init(&j, stdout);
		json_object_begin(&j, NULL);
		json_string(&j, "tool", "secretmem");
		json_string(&j, "version", SECRETMEM_VERSION_STRING);
		json_string(&j, "command", "check");
		json_string(&j, "verdict", usable ? "usable" : "not usable");
		json_bool(&j, "usable", usable);
		json_string(&j, "reason", usable ? NULL : reason);
		json_string(&j, "error", usable ? NULL : cli_errno_name(err));
		json_string(&j, "backend", secretmem_backend_name(backend));
		json_bool(&j, "fallback", backend == SECRETMEM_BACKEND_FALLBACK);
		json_int(&j, "exit_status", rc);
		json_object_begin(&j, "summary");
		json_int(&j, "passed", npass);
		json_int(&j, "failed", nfail);
		json_int(&j, "skipped", nskip);
		json_object_end(&j);
		json_array_begin(&j, "cases");
		for (size_t i = 0; i < cli_ncases; i++) {
			json_object_begin(&j, NULL);
			json_string(&j, "name", cli_cases[i].name);
			json_string(&j, "checks", cli_cases[i].checks);
			json_string(&j, "result", verdict_names[results[i].verdict]);
			json_string(&j, "reason", results[i].reason);
			json_object_end(&j);
		}
		json_array_end(&j);
		json_object_begin(&j, "environment");
		json_string(&j, "kernel_release", env.uts.release);
		json_string(&j, "architecture", env.uts.machine);
#ifdef CLI_NR_MEMFD_SECRET
		json_int(&j, "syscall_number", CLI_NR_MEMFD_SECRET);
#else
		json_null(&j, "syscall_number");
#endif
		json_string(&j, "secretmem_enable", env.enable[0] ? env.enable : NULL);
		if (env.seccomp >= 0)
			json_int(&j, "seccomp_mode", env.seccomp);
		else
			json_null(&j, "seccomp_mode");
		json_limit(&j, "memlock_soft", env.memlock.rlim_cur);
		json_limit(&j, "memlock_hard", env.memlock.rlim_max);
		json_bool(&j, "cap_ipc_lock", env.cap_ipc_lock);
		json_string(&j, "memlock_regime", env.regime);
		json_string(&j, "hibernation", cli_hibernation_name(env.hibernation));
		json_string(&j, "power_state", env.power_state);
		json_string(&j, "power_disk", env.power_disk_present ? env.power_disk : NULL);
		static const char *const dmkeys[] = { "directmap_4k_kb", "directmap_2m_kb",
						      "directmap_1g_kb" };
		for (int i = 0; i < 3; i++) {
			if (env.directmap[i] >= 0)
				json_int(&j, dmkeys[i], env.directmap[i]);
			else
				json_null(&j, dmkeys[i]);
		}
		json_object_end(&j);
		json_object_end(&j);
		json_finish(&j);
		free(results);
		return rc;
	}

	if (usable && nfail == 0)
		printf("verdict: usable - memfd_secret works here and the kernel behaves as documented\n");
	else if (usable)
		printf("verdict: usable, but %d case%s FAILED - the kernel does not behave as documented\n",
		       nfail, nfail == 1 ? "" : "s");
	else
		printf("verdict: not usable - %s\n", reason);
	printf("fallback: %s\n", fallback_text);
	printf("result: %d passed, %d failed, %d skipped\n\n", npass, nfail, nskip);
	printf("%-17s %-6s %s\n", "CASE", "RESULT", "DETAIL");
	for (size_t i = 0; i < cli_ncases; i++)
		printf("%-17s %-6s %s\n", cli_cases[i].name, verdict_names[results[i].verdict],
		       results[i].reason);
	printf("\nenvironment:\n");
	printf("  %-20s %s\n", "kernel release", env.uts.release);
#ifdef CLI_NR_MEMFD_SECRET
	printf("  %-20s %s (memfd_secret is system call %d)\n", "architecture", env.uts.machine,
	       (int)CLI_NR_MEMFD_SECRET);
#else
	printf("  %-20s %s (no memfd_secret system call)\n", "architecture", env.uts.machine);
#endif
	printf("  %-20s %s\n", "secretmem.enable", env.enable[0] ? env.enable : "(not readable)");
	printf("  %-20s %d (%s)\n", "seccomp mode", env.seccomp, seccomp_text(env.seccomp));
	printf("  %-20s soft ", "RLIMIT_MEMLOCK");
	print_limit(stdout, env.memlock.rlim_cur);
	printf(", hard ");
	print_limit(stdout, env.memlock.rlim_max);
	printf(" bytes\n");
	printf("  %-20s %s\n", "CAP_IPC_LOCK",
	       env.cap_ipc_lock ? "held (the memory-lock limit does not apply)" : "not held");
	printf("  %-20s %s (%s)\n", "memory-lock regime", env.regime, env.regime_why);
	printf("  %-20s %s\n", "hibernation", hibernation_text(&env));
	printf("  %-20s", "DirectMap4k/2M/1G");
	for (int i = 0; i < 3; i++) {
		if (env.directmap[i] >= 0)
			printf("%s%lld kB", i ? " / " : " ", env.directmap[i]);
		else
			printf("%s?", i ? " / " : " ");
	}
	printf("\n");
	printf("  %-20s %s\n", "libsecretmem backend", secretmem_backend_name(backend));
	fflush(stdout);
	free(results);
	return rc;
}
