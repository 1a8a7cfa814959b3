/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* scan_rig.c - the processes of the preload tests; see scan.h. */
#ifndef _GNU_SOURCE /* the Makefile also passes -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "scan.h"
#include "tlib.h"

extern char **environ;

#define RIG_MAX_PROCS 32

static pid_t procs[RIG_MAX_PROCS];
static int nprocs;
static char tmpdir[128];
static pid_t owner; /* the test process (children must not clean up) */
static long spawn_memlock = -1; /* rig_spawn_limited() */

static void cleanup(void)
{
	if (getpid() != owner)
		return;
	for (int i = 0; i < nprocs; i++)
		if (procs[i] > 0) {
			kill(-procs[i], SIGKILL);
			waitpid(procs[i], NULL, 0);
			procs[i] = 0;
		}
	if (tmpdir[0] && !getenv("SECRETMEM_TEST_KEEP")) {
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "rig: could not remove %s\n", tmpdir);
		tmpdir[0] = '\0';
	}
}

static void on_signal(int sig)
{
	/* Not async-signal-safe (system()), but the test is ending anyway and
	 * leaving servers behind would be worse. */
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void rig_init(void)
{
	if (owner)
		return;
	owner = getpid();
	atexit(cleanup);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
}

const char *rig_tmpdir(void)
{
	rig_init();
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/secretmem-test.XXXXXX");
		if (!mkdtemp(tmpdir))
			TL_FAIL("mkdtemp: %s", strerror(errno));
		chmod(tmpdir, 0755);
	}
	return tmpdir;
}

void rig_need(const char *prog)
{
	char msg[300];

	if (rig_sh("command -v '%s' >/dev/null 2>&1", prog) == 0)
		return;
	snprintf(msg, sizeof(msg), "%s not installed (sh scripts/deps.sh test)", prog);
	tl_skip(msg);
}

const char *rig_preload(void)
{
	static char path[PATH_MAX];

	if (!realpath(tl_build_path("libsecretmem-preload.so"), path))
		tl_skip("libsecretmem-preload.so not built");
	return path;
}

int rig_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fflush(stderr);
	st = system(cmd);
	if (st == -1)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int rig_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		TL_FAIL("free port: %s", strerror(errno));
	close(fd);
	return ntohs(a.sin_port);
}

static char **make_env(const char *const extra[])
{
	size_t n = 0, m = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	while (extra && extra[m])
		m++;
	env = calloc(n + m + 1, sizeof(*env));
	if (!env)
		TL_FAIL("calloc");
	for (size_t i = 0; i < n; i++) {
		size_t nl = strcspn(environ[i], "=");
		int replaced = 0;

		for (size_t j = 0; j < m; j++)
			if (strncmp(environ[i], extra[j], nl + 1) == 0)
				replaced = 1;
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		env[k++] = (char *)(uintptr_t)extra[j];
	env[k] = NULL;
	return env;
}

pid_t rig_spawn(char *const argv[], const char *const env[], const char *logpath, const char *cwd, int core)
{
	char **envp;
	pid_t pid;
	int slot = 0;

	rig_init();
	while (slot < nprocs && procs[slot] > 0) /* rig_stop() frees a slot */
		slot++;
	if (slot == RIG_MAX_PROCS)
		TL_FAIL("too many processes");
	envp = make_env(env);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int out = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);

		setpgid(0, 0);
		if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(126);
		if (cwd && chdir(cwd) != 0)
			_exit(126);
		if (core) {
			struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
			setrlimit(RLIMIT_CORE, &rl);
		}
		if (spawn_memlock >= 0 &&
		    (tl_drop_cap_ipc_lock() != 0 || tl_set_memlock((size_t)spawn_memlock) != 0)) {
			fprintf(stderr, "rig: cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK\n");
			_exit(126);
		}
		signal(SIGPIPE, SIG_DFL);
		execvpe(argv[0], argv, envp);
		fprintf(stderr, "rig: cannot execute %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	free(envp);
	procs[slot] = pid;
	if (slot == nprocs)
		nprocs++;
	return pid;
}

pid_t rig_spawn_limited(char *const argv[], const char *const env[], const char *logpath, size_t memlock)
{
	pid_t pid;

	spawn_memlock = (long)memlock;
	pid = rig_spawn(argv, env, logpath, rig_tmpdir(), 0);
	spawn_memlock = -1;
	return pid;
}

pid_t rig_spawn_ready(char *const argv[], const char *const env[], const char *logpath)
{
	static char text[65536];

	unlink(logpath);
	pid_t pid = rig_spawn(argv, env, logpath, NULL, 0);
	for (int waited = 0; waited < 30000; waited += 20) {
		int fd = open(logpath, O_RDONLY | O_CLOEXEC), st;
		ssize_t n = fd < 0 ? 0 : read(fd, text, sizeof(text) - 1);

		if (fd >= 0)
			close(fd);
		text[n > 0 ? n : 0] = '\0';
		if (tl_has_line(text, "ready"))
			return pid;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			rig_cat(logpath);
			TL_FAIL("%s ended before it was ready: %s", argv[0], tl_status_str(st));
		}
		usleep(20 * 1000);
	}
	rig_cat(logpath);
	TL_FAIL("%s was not ready in 30 s", argv[0]);
}

int rig_wait_port(int port, pid_t pid, int timeout_ms)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	for (int waited = 0; waited < timeout_ms; waited += 20) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
			close(fd);
			return 0;
		}
		close(fd);
		if (pid > 0 && waitpid(pid, NULL, WNOHANG) == pid) {
			for (int i = 0; i < nprocs; i++)
				if (procs[i] == pid)
					procs[i] = 0;
			return -1;
		}
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return -1;
}

void rig_stop(pid_t pid)
{
	int i;

	for (i = 0; i < nprocs; i++)
		if (procs[i] == pid)
			break;
	if (i == nprocs || pid <= 0)
		return;
	kill(-pid, SIGTERM);
	for (int t = 0; t < 100; t++) {
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			kill(-pid, SIGKILL); /* stragglers of the group */
			procs[i] = 0;
			return;
		}
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
	procs[i] = 0;
}

int rig_children(pid_t parent, pid_t *out, int max)
{
	char path[64];
	FILE *f;
	int n = 0, v;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)parent, (int)parent);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (n < max && fscanf(f, "%d", &v) == 1)
		out[n++] = v;
	fclose(f);
	return n;
}

void rig_cat(const char *path)
{
	char line[1024];
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "    | %s", line);
	fclose(f);
}

int rig_file_count(const char *path, const char *text)
{
	char line[4096];
	FILE *f = fopen(path, "re");
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, text))
			n++;
	fclose(f);
	return n;
}

int rig_file_has(const char *path, const char *text)
{
	return rig_file_count(path, text) > 0;
}

long rig_secret_rss_kb(pid_t pid)
{
	char path[64], line[512];
	long total = 0, v;
	int in_secret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, ' '))
			in_secret = strstr(line, " /secretmem (deleted)") != NULL;
		else if (in_secret && sscanf(line, "Rss: %ld kB", &v) == 1)
			total += v;
	}
	fclose(f);
	return total;
}

/* ---- OpenSSL helpers ---------------------------------------------------- */

static char key_paths[2][2][300];

static int type_index(const char *type)
{
	if (strcmp(type, "rsa") == 0)
		return 0;
	if (strcmp(type, "ed25519") == 0)
		return 1;
	TL_FAIL("unknown key type %s", type);
}

const char *rig_make_key(const char *type)
{
	int i = type_index(type);
	const char *dir = rig_tmpdir();
	char *key = key_paths[i][0], *crt = key_paths[i][1];

	if (key[0])
		return key; /* one key per type and test */
	snprintf(key, sizeof(key_paths[i][0]), "%s/%s.key", dir, type);
	snprintf(crt, sizeof(key_paths[i][1]), "%s/%s.crt", dir, type);
	if (rig_sh("openssl genpkey -algorithm %s %s -out '%s' 2>>'%s/openssl.log'", i ? "ED25519" : "RSA",
		   i ? "" : "-pkeyopt rsa_keygen_bits:2048", key, dir) != 0 ||
	    rig_sh("openssl req -x509 -new -key '%s' -out '%s' -days 2 -subj /CN=127.0.0.1 "
		   "2>>'%s/openssl.log'", key, crt, dir) != 0) {
		char log[200];

		snprintf(log, sizeof(log), "%s/openssl.log", dir);
		rig_cat(log);
		TL_FAIL("could not make the %s key and certificate", type);
	}
	return key;
}

const char *rig_cert(const char *type)
{
	return key_paths[type_index(type)][1];
}

static char asan_runtime[PATH_MAX];
static int asan_checked;

const char *rig_preload_sanitizer(void)
{
	char cmd[PATH_MAX + 32], line[PATH_MAX + 64];
	FILE *p;

	if (asan_checked)
		return asan_runtime[0] ? asan_runtime : NULL;
	asan_checked = 1;
	snprintf(cmd, sizeof(cmd), "ldd '%s' 2>/dev/null", rig_preload());
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	while (fgets(line, sizeof(line), p)) {
		char *arrow = strstr(line, "=> ");

		if ((!strstr(line, "libasan") && !strstr(line, "libtsan")) || !arrow)
			continue;
		arrow += 3;
		arrow[strcspn(arrow, " \n")] = '\0';
		snprintf(asan_runtime, sizeof(asan_runtime), "%s", arrow);
	}
	pclose(p);
	return asan_runtime[0] ? asan_runtime : NULL;
}

void rig_skip_if_tsan(void)
{
	const char *rt = rig_preload_sanitizer();

	if (rt && strstr(rt, "libtsan"))
		tl_skip("module built with ThreadSanitizer: its preloaded runtime keeps hundreds of MB "
			"resident, too slow to scan; the scans run in normal and ASan builds");
}

const char *rig_ld_preload(void)
{
	static char value[2 * PATH_MAX + 2];
	const char *asan = rig_preload_sanitizer();

	snprintf(value, sizeof(value), "%s%s%s", asan ? asan : "", asan ? " " : "", rig_preload());
	return value;
}

const char *const *rig_env(const char *mode)
{
	static char preload[2 * PATH_MAX + 16], openssl[64];
	static const char *env[4];

	if (!mode)
		return NULL;
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", rig_ld_preload());
	snprintf(openssl, sizeof(openssl), "SECRETMEM_OPENSSL=%s", mode);
	env[0] = preload;
	env[1] = openssl;
	env[2] = rig_preload_sanitizer() ? "ASAN_OPTIONS=detect_leaks=0" : NULL; /* TSan: none needed */
	env[3] = NULL;
	return env;
}

/* rig_s_server; verify: also ask for a client certificate issued by the
 * key's own certificate (-Verify 1 -CAfile). */
static pid_t s_server(const char *type, const char *mode, int verify, int *port, const char *log, int core)
{
	char accept[64], *keyp = key_paths[type_index(type)][0], *crtp = key_paths[type_index(type)][1];
	pid_t pid;

	for (int attempt = 0; attempt < 3; attempt++) {
		*port = rig_free_port();
		snprintf(accept, sizeof(accept), "127.0.0.1:%d", *port);
		char *argv[] = { "openssl", "s_server", "-www", "-accept", accept, "-key", keyp, "-cert", crtp,
				 verify ? "-Verify" : NULL /* ends argv here */, "1", "-CAfile", crtp, NULL };
		pid = rig_spawn(argv, rig_env(mode), log, rig_tmpdir(), core);
		if (rig_wait_port(*port, pid, 10000) == 0)
			return pid;
		rig_stop(pid);
	}
	rig_cat(log);
	TL_FAIL("openssl s_server did not start");
}

pid_t rig_s_server(const char *type, const char *mode, int *port, const char *log, int core)
{
	return s_server(type, mode, 0, port, log, core);
}

pid_t rig_s_server_verify(const char *type, int *port, const char *log)
{
	return s_server(type, NULL, 1, port, log, 0);
}

int rig_s_client(int port, const char *log)
{
	if (rig_sh("printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 20 openssl s_client -connect 127.0.0.1:%d "
		   "-servername localhost -ign_eof >>'%s' 2>&1", port, log) != 0)
		return -1;
	/* -www answers with an HTML page naming the cipher in use. */
	return rig_file_has(log, "Ciphers supported in s_server binary") &&
	       rig_file_has(log, "SSL-Session:") ? 0 : -1;
}

int rig_gcore(pid_t pid, const char *path, char *out, size_t outlen)
{
	char log[400];

	snprintf(log, sizeof(log), "%s.log", path);
	if (rig_sh("timeout 60 gcore -o '%s' %d >'%s' 2>&1", path, (int)pid, log) != 0) {
		rig_cat(log);
		return -1;
	}
	snprintf(out, outlen, "%s.%d", path, (int)pid);
	return access(out, R_OK) == 0 ? 0 : -1;
}

int rig_crash_core(pid_t pid, char *out, size_t outlen)
{
	char pattern[256] = "";
	FILE *f = fopen("/proc/sys/kernel/core_pattern", "re");
	int st;

	if (f) {
		if (!fgets(pattern, sizeof(pattern), f))
			pattern[0] = '\0';
		fclose(f);
	}
	pattern[strcspn(pattern, "\n")] = '\0';
	if (!pattern[0] || pattern[0] == '|' || strchr(pattern, '/') || strchr(pattern, '%')) {
		fprintf(stderr, "core_pattern is '%s', not a plain file name: crash dump not checked\n",
			pattern);
		return -1;
	}
	kill(pid, SIGSEGV);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	for (int i = 0; i < nprocs; i++)
		if (procs[i] == pid)
			procs[i] = 0;
	if (!WIFSIGNALED(st) || !WCOREDUMP(st)) {
		fprintf(stderr, "the crash did not dump core: %s\n", tl_status_str(st));
		return -1;
	}
	snprintf(out, outlen, "%s/%s.%d", rig_tmpdir(), pattern, (int)pid);
	if (access(out, R_OK) != 0)
		snprintf(out, outlen, "%s/%s", rig_tmpdir(), pattern);
	if (access(out, R_OK) != 0) {
		fprintf(stderr, "core file not found (%s)\n", out);
		return -1;
	}
	return 0;
}

/* One scan stage: returns copies found; in a control, all must be found. */
static int stage(const struct scan_key *key, int n, struct scan_result *res, const char *label, int control)
{
	scan_report(key, res, label);
	if (n < 0)
		TL_FAIL("%s: scan failed", label);
	if (control && scan_all_required_found(key, res) != 0)
		TL_FAIL("%s: the scanner did not find the key without protection", label);
	scan_result_free(res);
	return n;
}

int rig_server_scan(const char *type, const char *mode, int control)
{
	char log[300], label[80], core[400], corefile[450];
	struct scan_key key;
	struct scan_result res;
	int port, found = 0;
	const char *m = mode ? mode : "none";

	rig_skip_if_tsan();
	const char *keyp = rig_make_key(type);
	if (scan_key_load(&key, keyp) != 0)
		TL_FAIL("cannot read the key material of %s", keyp);
	snprintf(log, sizeof(log), "%s/%s-%s.log", rig_tmpdir(), type, m);
	pid_t pid = rig_s_server(type, mode, &port, log, 1);
	if (rig_s_client(port, log) != 0) {
		rig_cat(log);
		TL_FAIL("%s, mode %s: TLS handshake with s_server failed", type, m);
	}
	if (rig_file_has(log, "secretmem-preload:")) {
		rig_cat(log);
		TL_FAIL("%s, mode %s: the preload module complained", type, m);
	}

	snprintf(label, sizeof(label), "%s mode %s memory", type, m);
	int n = scan_pid(&key, pid, &res, label);
	size_t secret = res.secret_regions;
	found += stage(&key, n, &res, label, control);
	if (!control && mode && strcmp(mode, "off") != 0 && secret == 0)
		TL_FAIL("%s, mode %s: s_server has no secret memory mapping", type, m);
	if (mode && strcmp(mode, "off") == 0 && secret != 0)
		TL_FAIL("%s, mode off: s_server has secret memory mappings", type);
	fprintf(stderr, "%s: secret memory of s_server: %ld KiB in %zu mappings\n", label,
		rig_secret_rss_kb(pid), secret);

	if (mode && rig_preload_sanitizer()) {
		/* gcore would write the sanitizer's terabytes of shadow. */
		fprintf(stderr, "%s: module built with a sanitizer: core dumps not checked\n", label);
	} else {
		snprintf(core, sizeof(core), "%s/%s-%s.gcore", rig_tmpdir(), type, m);
		if (rig_gcore(pid, core, corefile, sizeof(corefile)) != 0)
			TL_FAIL("%s, mode %s: gcore failed", type, m);
		snprintf(label, sizeof(label), "%s mode %s gcore", type, m);
		found += stage(&key, scan_file(&key, corefile, &res, label), &res, label, control);
		remove(corefile);

		if (rig_crash_core(pid, corefile, sizeof(corefile)) == 0) {
			snprintf(label, sizeof(label), "%s mode %s crash core", type, m);
			found += stage(&key, scan_file(&key, corefile, &res, label), &res, label, control);
			remove(corefile);
		}
	}
	rig_stop(pid);
	scan_key_free(&key);
	return found;
}
