/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * check.c - `secretmem check`: is secret memory usable here, and does the
 * kernel's memfd_secret(2) behave as documented?
 *
 * The verdict comes from secretmem_supported() and the memory-lock limit;
 * the cases (cases*.c) then run one by one, each in its own child process
 * (in its own process group, under an alarm), and report PASS, FAIL, SKIP or
 * INFO (a fact, neither pass nor fail) with a one-line reason through a pipe;
 * a case that crashes or hangs is a FAIL with the signal as reason, and the
 * tool goes on.  gather_check() fills one struct check_report; the text and
 * JSON renderers only read it.
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

static const char *const verdict_names[] = { "PASS", "FAIL", "SKIP", "INFO" };

/* The memory-lock allowance below which `check` calls the limit the
 * problem: libsecretmem's first pool chunk (16 pages of 4 KiB). */
#define MEMLOCK_NEEDED (64u * 1024)

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
		cli_fake_reset();
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
	if (got == sizeof(*res) && res->verdict >= CASE_PASS && res->verdict <= CASE_INFO) {
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

/* ---- environment ---------------------------------------------------- */

struct env {
	struct utsname uts;
	char enable[16];          /* secretmem.enable, "" if unreadable */
	int seccomp;
	struct rlimit memlock;
	long long vmlck;          /* bytes locked by this process, -1 unknown */
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
	unsigned char *m;
	int locked;

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
	locked = cli_mapping_locked(m);
	if (locked >= 0) {
		if (locked) {
			e->regime = "mmap-time";
			e->regime_why = "VM_LOCKED mapping (smaps 'lo'); mmap fails with EAGAIN over the limit";
		} else {
			e->regime = "fault-time";
			e->regime_why = "no 'lo' in smaps; pages are charged when faulted in";
		}
	} else {
		e->regime_why = "the mapping is not in /proc/self/smaps";
	}
	cli_unmap(m, page);
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
	e->vmlck = cli_vmlck();
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
			 "(seccomp mode: %s) or a security module; under a filter libsecretmem makes the call "
			 "in a short-lived child, so a filter that refuses clone(2) or wait4(2) refuses it "
			 "too (secretmem_supported(3))", cli_strerror(err),
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

/* ---- gathering: one report, then a renderer per format --------------- */

struct check_report {
	int usable;               /* memfd_secret works here               */
	int err;                  /* why not (errno), 0 if usable          */
	int limited;              /* usable, but the memory-lock limit is too small */
	int backend;              /* libsecretmem's default backend        */
	int fake;                 /* enum cli_fake                          */
	char reason[900];         /* the verdict's explanation ("" if none) */
	char lib_probe[160];      /* a one-page libsecretmem region: outcome */
	const struct check_case **cases;
	struct case_result *results;
	size_t n;
	int npass, nfail, nskip, ninfo;
	int rc;                   /* exit status                             */
	struct env env;
};

static const char *verdict_key(const struct check_report *c)
{
	return c->limited ? "memlock limit too small" : c->usable ? "usable" : "not usable";
}

/* Bytes still lockable by this process, or -1 when there is no limit
 * (CAP_IPC_LOCK or RLIM_INFINITY). */
static long long memlock_left(const struct env *e)
{
	if (e->cap_ipc_lock || e->memlock.rlim_cur == RLIM_INFINITY)
		return -1;
	long long left = (long long)e->memlock.rlim_cur - (e->vmlck > 0 ? e->vmlck : 0);
	return left > 0 ? left : 0;
}

static void probe_library(struct check_report *c)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct secretmem_region *r = secretmem_region_create(page, SECRETMEM_REGION_REQUIRE_SECRET);

	if (r) {
		snprintf(c->lib_probe, sizeof(c->lib_probe), "a one-page libsecretmem region works");
		secretmem_region_destroy(r);
	} else {
		snprintf(c->lib_probe, sizeof(c->lib_probe), "a one-page libsecretmem region fails "
			 "with %s", cli_errno_name(errno));
	}
}

static void limited_reason(struct check_report *c)
{
	const struct env *e = &c->env;
	long long left = memlock_left(e), pages = left / (long long)sysconf(_SC_PAGESIZE);
	char fits[96];

	if (pages < 1)
		snprintf(fits, sizeof(fits), "so libsecretmem's allocations fail (NULL, ENOMEM)");
	else
		snprintf(fits, sizeof(fits), "so libsecretmem can hold at most %lld page%s of secrets",
			 pages, pages == 1 ? "" : "s");
	snprintf(c->reason, sizeof(c->reason),
		 "memfd_secret works (secretmem_supported() returns 0), but without CAP_IPC_LOCK "
		 "every secret page counts against RLIMIT_MEMLOCK, which allows %llu bytes here "
		 "(%lld locked already): %s, %s. "
		 "Needed: at least %u bytes (libsecretmem's first pool chunk) plus the secrets "
		 "themselves; raise the limit (ulimit -l, LimitMEMLOCK= in a systemd unit, memlock "
		 "in /etc/security/limits.conf)",
		 (unsigned long long)e->memlock.rlim_cur, e->vmlck > 0 ? e->vmlck : 0LL,
		 c->lib_probe, fits, MEMLOCK_NEEDED);
}

/* Runs the selected cases (all when sel is NULL) and fills c. */
static int gather_check(struct check_report *c, const char *const *sel, size_t nsel)
{
	memset(c, 0, sizeof(*c));
	c->fake = cli_fake_kernel();
	cli_cases_init();
	c->cases = calloc(cli_ncases, sizeof(*c->cases));
	c->results = calloc(cli_ncases, sizeof(*c->results));
	if (!c->cases || !c->results)
		return -ENOMEM;
	for (size_t i = 0; i < cli_ncases; i++) {
		int want = !sel;
		for (size_t k = 0; sel && k < nsel; k++)
			want |= strcmp(sel[k], cli_cases[i].name) == 0;
		if (want)
			c->cases[c->n++] = &cli_cases[i];
	}
	c->err = -secretmem_supported();
	c->usable = c->err == 0;
	c->backend = secretmem_default_backend();
	read_env(&c->env, c->usable);
	if (!c->usable) {
		not_usable_reason(c->err, &c->env, c->reason, sizeof(c->reason));
	} else {
		long long left = memlock_left(&c->env);
		probe_library(c);
		if (left >= 0 && left < (long long)MEMLOCK_NEEDED) {
			c->limited = 1;
			c->err = EAGAIN;
			limited_reason(c);
		}
	}
	for (size_t i = 0; i < c->n; i++) {
		struct case_result *res = &c->results[i];
		if (!c->usable || c->limited) {
			res->verdict = CASE_SKIP;
			if (c->limited)
				snprintf(res->reason, sizeof(res->reason), "the memory-lock limit is too small "
					 "to run the case (RLIMIT_MEMLOCK %llu bytes; see the verdict)",
					 (unsigned long long)c->env.memlock.rlim_cur);
			else
				snprintf(res->reason, sizeof(res->reason),
					 "memfd_secret is not usable here (%s)", cli_errno_name(c->err));
		} else {
			run_case(c->cases[i], res);
		}
		c->npass += res->verdict == CASE_PASS;
		c->nfail += res->verdict == CASE_FAIL;
		c->nskip += res->verdict == CASE_SKIP;
		c->ninfo += res->verdict == CASE_INFO;
	}
	c->rc = !c->usable  ? CLI_EXIT_NOT_USABLE :
		c->limited  ? CLI_EXIT_MEMLOCK :
		c->nfail    ? CLI_EXIT_CASE_FAILED : CLI_EXIT_OK;
	return 0;
}

static void free_check(struct check_report *c)
{
	free(c->cases);
	free(c->results);
}

static const char *fallback_text(int backend)
{
	return backend == SECRETMEM_BACKEND_FALLBACK ?
		"libsecretmem falls back to mlock()ed, MADV_DONTDUMP private memory "
		"(kept out of swap and core dumps, but readable by root); set "
		"SECRETMEM_REQUIRE=1 to refuse instead" :
	       backend == SECRETMEM_BACKEND_NONE ?
		"forbidden (SECRETMEM_REQUIRE=1): libsecretmem refuses to create secret memory" :
		"not needed";
}

static void render_check_json(const struct check_report *c, FILE *out)
{
	const struct env *e = &c->env;
	struct json j;

	json_init(&j, out);
	json_object_begin(&j, NULL);
	json_string(&j, "tool", "secretmem");
	json_string(&j, "version", SECRETMEM_VERSION_STRING);
	json_string(&j, "command", "check");
	json_string(&j, "verdict", verdict_key(c));
	json_bool(&j, "usable", c->usable && !c->limited);
	json_string(&j, "reason", c->reason[0] ? c->reason : NULL);
	json_string(&j, "error", c->err ? cli_errno_name(c->err) : NULL);
	json_string(&j, "backend", secretmem_backend_name(c->backend));
	json_bool(&j, "fallback", c->backend == SECRETMEM_BACKEND_FALLBACK);
	json_string(&j, "fake_kernel", c->fake != CLI_FAKE_NONE ? cli_fake_name(c->fake) : NULL);
	json_int(&j, "exit_status", c->rc);
	json_object_begin(&j, "summary");
	json_int(&j, "passed", c->npass);
	json_int(&j, "failed", c->nfail);
	json_int(&j, "skipped", c->nskip);
	json_int(&j, "info", c->ninfo);
	json_object_end(&j);
	json_array_begin(&j, "cases");
	for (size_t i = 0; i < c->n; i++) {
		json_object_begin(&j, NULL);
		json_string(&j, "name", c->cases[i]->name);
		json_string(&j, "checks", c->cases[i]->checks);
		json_string(&j, "result", verdict_names[c->results[i].verdict]);
		json_string(&j, "reason", c->results[i].reason);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_begin(&j, "environment");
	json_string(&j, "kernel_release", e->uts.release);
	json_string(&j, "architecture", e->uts.machine);
#ifdef CLI_NR_MEMFD_SECRET
	json_int(&j, "syscall_number", CLI_NR_MEMFD_SECRET);
#else
	json_null(&j, "syscall_number");
#endif
	json_string(&j, "secretmem_enable", e->enable[0] ? e->enable : NULL);
	if (e->seccomp >= 0)
		json_int(&j, "seccomp_mode", e->seccomp);
	else
		json_null(&j, "seccomp_mode");
	json_limit(&j, "memlock_soft", e->memlock.rlim_cur);
	json_limit(&j, "memlock_hard", e->memlock.rlim_max);
	if (e->vmlck >= 0)
		json_int(&j, "memlock_locked", e->vmlck);
	else
		json_null(&j, "memlock_locked");
	json_uint(&j, "memlock_needed", MEMLOCK_NEEDED);
	json_bool(&j, "cap_ipc_lock", e->cap_ipc_lock);
	json_string(&j, "memlock_regime", e->regime);
	json_string(&j, "hibernation", cli_hibernation_name(e->hibernation));
	json_string(&j, "power_state", e->power_state);
	json_string(&j, "power_disk", e->power_disk_present ? e->power_disk : NULL);
	static const char *const dmkeys[] = { "directmap_4k_kb", "directmap_2m_kb",
					      "directmap_1g_kb" };
	for (int i = 0; i < 3; i++) {
		if (e->directmap[i] >= 0)
			json_int(&j, dmkeys[i], e->directmap[i]);
		else
			json_null(&j, dmkeys[i]);
	}
	json_object_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

static void render_verdict(const struct check_report *c, FILE *out)
{
	if (c->fake != CLI_FAKE_NONE)
		fprintf(out, "verdict: FAKE KERNEL (SECRETMEM_CHECK_FAKE_KERNEL=%s), results are not "
			"about this machine - ", cli_fake_name(c->fake));
	else
		fputs("verdict: ", out);
	if (c->limited)
		fprintf(out, "memory-lock limit too small - %s\n", c->reason);
	else if (!c->usable)
		fprintf(out, "not usable - %s\n", c->reason);
	else if (c->nfail == 0)
		fputs("usable - memfd_secret works here and the kernel behaves as documented\n", out);
	else
		fprintf(out, "usable, but %d case%s FAILED - the kernel does not behave as documented\n",
			c->nfail, c->nfail == 1 ? "" : "s");
}

static void render_check_text(const struct check_report *c, FILE *out)
{
	const struct env *e = &c->env;

	render_verdict(c, out);
	fprintf(out, "fallback: %s\n", fallback_text(c->backend));
	fprintf(out, "result: %d passed, %d failed, %d skipped, %d info\n\n", c->npass, c->nfail,
		c->nskip, c->ninfo);
	fprintf(out, "%-17s %-6s %s\n", "CASE", "RESULT", "DETAIL");
	for (size_t i = 0; i < c->n; i++)
		fprintf(out, "%-17s %-6s %s\n", c->cases[i]->name,
			verdict_names[c->results[i].verdict], c->results[i].reason);
	fprintf(out, "\nenvironment:\n");
	fprintf(out, "  %-20s %s\n", "kernel release", e->uts.release);
#ifdef CLI_NR_MEMFD_SECRET
	fprintf(out, "  %-20s %s (memfd_secret is system call %d)\n", "architecture", e->uts.machine,
		(int)CLI_NR_MEMFD_SECRET);
#else
	fprintf(out, "  %-20s %s (no memfd_secret system call)\n", "architecture", e->uts.machine);
#endif
	fprintf(out, "  %-20s %s\n", "secretmem.enable", e->enable[0] ? e->enable : "(not readable)");
	fprintf(out, "  %-20s %d (%s)\n", "seccomp mode", e->seccomp, seccomp_text(e->seccomp));
	fprintf(out, "  %-20s soft ", "RLIMIT_MEMLOCK");
	print_limit(out, e->memlock.rlim_cur);
	fprintf(out, ", hard ");
	print_limit(out, e->memlock.rlim_max);
	fprintf(out, " bytes; %lld locked; libsecretmem needs %u\n", e->vmlck, MEMLOCK_NEEDED);
	fprintf(out, "  %-20s %s\n", "CAP_IPC_LOCK",
		e->cap_ipc_lock ? "held (the limit does not apply in the mmap-time regime)" :
				  "not held");
	fprintf(out, "  %-20s %s (%s%s)\n", "memory-lock regime", e->regime, e->regime_why,
		c->fake != CLI_FAKE_NONE ? "; FAKE KERNEL" : "");
	fprintf(out, "  %-20s %s\n", "hibernation", hibernation_text(e));
	fprintf(out, "  %-20s", "DirectMap4k/2M/1G");
	for (int i = 0; i < 3; i++) {
		if (e->directmap[i] >= 0)
			fprintf(out, "%s%lld kB", i ? " / " : " ", e->directmap[i]);
		else
			fprintf(out, "%s?", i ? " / " : " ");
	}
	fprintf(out, " (system-wide; the direct map split by secret pages never merges back)\n");
	fprintf(out, "  %-20s %s%s%s\n", "libsecretmem backend", secretmem_backend_name(c->backend),
		c->lib_probe[0] ? "; " : "", c->lib_probe);
	fflush(out);
}

/* ---- the command ----------------------------------------------------- */

static int usage_check(FILE *out, int rc)
{
	fputs("usage: secretmem check [--json] [--case NAME]...\n"
	      "Runs the memfd_secret conformance cases (or only the named ones) and prints a\n"
	      "verdict, a table of cases and the environment.  Exit: 0 usable and no case\n"
	      "failed, 1 a case failed, 2 secret memory not usable here, 3 the memory-lock\n"
	      "limit is too small, 64 usage error.\n",
	      out);
	return rc;
}

int cmd_check(int argc, char **argv)
{
	struct check_report c;
	const char **sel = NULL;
	size_t nsel = 0;
	int json = 0, rc;

	sel = calloc((size_t)argc + 1, sizeof(*sel));
	if (!sel) {
		fprintf(stderr, "secretmem check: out of memory\n");
		return CLI_EXIT_OSERR;
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			free(sel);
			return usage_check(stdout, CLI_EXIT_OK);
		} else if (strcmp(argv[i], "--case") == 0 && i + 1 == argc) {
			fputs("secretmem check: --case needs a case name\n", stderr);
			free(sel);
			return usage_check(stderr, CLI_EXIT_USAGE);
		} else if (strcmp(argv[i], "--case") == 0) {
			size_t k;
			for (k = 0; k < cli_ncases && strcmp(cli_cases[k].name, argv[i + 1]); k++)
				;
			if (k == cli_ncases) {
				fprintf(stderr, "secretmem check: no case named '%s'\n", argv[i + 1]);
				free(sel);
				return usage_check(stderr, CLI_EXIT_USAGE);
			}
			sel[nsel++] = argv[++i];
		} else {
			fprintf(stderr, "secretmem check: unknown argument '%s'\n", argv[i]);
			free(sel);
			return usage_check(stderr, CLI_EXIT_USAGE);
		}
	}
	if (cli_fake_kernel() == CLI_FAKE_INVALID) {
		fprintf(stderr, "secretmem check: SECRETMEM_CHECK_FAKE_KERNEL: unknown fake kernel\n");
		free(sel);
		return CLI_EXIT_USAGE;
	}
	rc = gather_check(&c, nsel ? sel : NULL, nsel);
	free(sel);
	if (rc < 0) {
		free_check(&c);
		fprintf(stderr, "secretmem check: out of memory\n");
		return CLI_EXIT_OSERR;
	}
	if (json)
		render_check_json(&c, stdout);
	else
		render_check_text(&c, stdout);
	rc = c.rc;
	free_check(&c);
	return rc;
}
