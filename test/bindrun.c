/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* bindrun.c - the Rust and Go bindings' test runner; see bindrun.h. */
#ifndef _GNU_SOURCE /* the Makefile also passes -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bindrun.h"
#include "tlib.h"

static char outdir[PATH_MAX]; /* a temporary directory to remove, or "" */

static void remove_outdir(void)
{
	char cmd[PATH_MAX + 16];

	if (outdir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", outdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", outdir);
	}
}

/* The first tool in PATH, in path; 0, or -1 when there is none. */
static int find_tool(const char *tool, char *path, size_t len)
{
	const char *p = getenv("PATH");

	if (!p)
		p = "/usr/bin:/bin";
	while (*p) {
		size_t n = strcspn(p, ":");

		snprintf(path, len, "%.*s/%s", (int)n, p, tool);
		if (n && access(path, X_OK) == 0)
			return 0;
		p += n + (p[n] == ':');
	}
	return -1;
}

/* Run a shell command, echo its output; the exit status (raw), the number
 * of lines containing mark in *marked, and the first such line in first. */
static int run_echo(const char *cmd, const char *mark, int *marked, char *first, size_t firstlen)
{
	char line[4096];
	FILE *p;

	fflush(stdout);
	p = popen(cmd, "r");
	TL_CHECK(p != NULL, "popen %s", cmd);
	*marked = 0;
	if (first)
		first[0] = '\0';
	while (fgets(line, sizeof(line), p)) {
		fputs(line, stdout);
		if (mark && strstr(line, mark)) {
			if (*marked == 0 && first) {
				snprintf(first, firstlen, "%s", strstr(line, mark));
				first[strcspn(first, "\n")] = '\0';
			}
			(*marked)++;
		}
	}
	fflush(stdout);
	return pclose(p);
}

/*
 * What both need: not a sanitizer build, the tool runs, the library is
 * built; the absolute build directory into build and the output directory
 * into out (BUILD/<lang> when the build directory is writable, else a
 * temporary directory removed at exit).  name: the language, for messages.
 */
static void prepare(const char *lang, const char *name, const char *tool, const char *version_arg, char *build,
		    char *out, size_t len)
{
	char path[PATH_MAX], cmd[PATH_MAX + 64], msg[PATH_MAX + 512];
	const char *b = getenv("SECRETMEM_BUILD");
	int n;

	if (b && strstr(b, "san-")) {
		snprintf(msg, sizeof(msg), "a sanitizer build: its libsecretmem cannot be linked into a %s "
			 "program without the sanitizer's runtime; the binding is tested in the normal build", name);
		tl_skip(msg);
	}
	if (access("include/secretmem.h", R_OK) != 0)
		TL_FAIL("include/secretmem.h not found: run from the top of the tree");
	if (find_tool(tool, path, sizeof(path)) != 0) {
		snprintf(msg, sizeof(msg), "no %s in PATH (sh scripts/deps.sh test installs Debian's)", tool);
		tl_skip(msg);
	}
	snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", path, version_arg);
	if (run_echo(cmd, NULL, &n, NULL, 0) != 0) {
		snprintf(msg, sizeof(msg), "%s does not run as uid %d (output above)", path, (int)getuid());
		tl_skip(msg);
	}
	if (!realpath(b ? b : "build", build) || access(tl_build_path("libsecretmem.a"), R_OK) != 0) {
		snprintf(msg, sizeof(msg), "the library is not built (%s): run make first",
			 tl_build_path("libsecretmem.a"));
		tl_skip(msg);
	}
	if (access(build, W_OK) == 0) {
		snprintf(out, len, "%s/%s", build, lang);
	} else {
		snprintf(outdir, sizeof(outdir), "/tmp/secretmem-%s-XXXXXX", lang);
		TL_CHECK(mkdtemp(outdir) != NULL, "mkdtemp: %s", strerror(errno));
		atexit(remove_outdir);
		snprintf(out, len, "%s", outdir);
		printf("%s is not writable by uid %d: building in %s\n", build, (int)getuid(), out);
	}
	mkdir(out, 0755);
}

/* Set HOME-relative tool directories to dir/name when HOME's is unusable
 * (an ordinary user running a test of a root checkout, HOME=/root). */
static void home_fallback(const char *var, const char *sub, const char *out)
{
	char path[PATH_MAX + 64];
	const char *home = getenv("HOME");

	if (getenv(var) || (home && access(home, R_OK | W_OK | X_OK) == 0))
		return;
	snprintf(path, sizeof(path), "%s/%s", out, sub);
	mkdir(path, 0700);
	setenv(var, path, 1);
}

void bindrun_cargo(const char *const args[], int clippy)
{
	char build[PATH_MAX], out[PATH_MAX], cmd[2 * PATH_MAX], skipline[512], target[PATH_MAX + 16];
	int status, skips = 0, n;
	size_t len;

	prepare("rust", "Rust", "cargo", "--version", build, out, sizeof(out));
	snprintf(target, sizeof(target), "%s/target", out);
	setenv("CARGO_TARGET_DIR", target, 1);
	setenv("SECRETMEM_LIB_DIR", build, 1); /* libsecretmem.a: linked statically */
	setenv("CARGO_TERM_COLOR", "never", 1);
	home_fallback("CARGO_HOME", "cargo-home", out);
	if (chdir("bindings/rust") != 0)
		TL_FAIL("bindings/rust: %s", strerror(errno));
	len = (size_t)snprintf(cmd, sizeof(cmd), "exec cargo test --offline");
	for (int i = 0; args[i]; i++)
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, " %s", args[i]);
	TL_CHECK(len < sizeof(cmd) - 8, "command too long");
	strcat(cmd, " 2>&1");
	printf("$ %s  (CARGO_TARGET_DIR=%s SECRETMEM_LIB_DIR=%s)\n", cmd, target, build);
	status = run_echo(cmd, "secretmem-skip: ", &skips, skipline, sizeof(skipline));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		TL_FAIL("cargo test: %s", tl_status_str(status));
	if (clippy) {
		if (system("cargo clippy --version >/dev/null 2>&1") != 0) {
			printf("clippy is not installed: cargo clippy not run\n");
		} else {
			snprintf(cmd, sizeof(cmd), "exec cargo clippy --offline --all-targets -- -D warnings 2>&1");
			printf("$ %s\n", cmd);
			status = run_echo(cmd, NULL, &n, NULL, 0);
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				TL_FAIL("cargo clippy: %s", tl_status_str(status));
		}
	}
	if (skips)
		printf("cargo test passed; %d note(s), the first: %s\n", skips, skipline);
	else
		printf("cargo test passed\n");
	exit(TL_PASS);
}

void bindrun_go(const char *pkg)
{
	char build[PATH_MAX], out[PATH_MAX], cmd[PATH_MAX], val[2 * PATH_MAX + 64], top[PATH_MAX], skipline[512];
	int status, skips = 0;

	prepare("go", "Go", "go", "version", build, out, sizeof(out));
	TL_CHECK(getcwd(top, sizeof(top)) != NULL, "getcwd: %s", strerror(errno));
	/* no network, no module download, nothing outside the build directory */
	snprintf(val, sizeof(val), "%s/path", out);
	setenv("GOPATH", val, 1);
	snprintf(val, sizeof(val), "%s/cache", out);
	setenv("GOCACHE", val, 1);
	setenv("GOFLAGS", "-mod=mod", 1);
	setenv("GOPROXY", "off", 1);
	setenv("GOTOOLCHAIN", "local", 1);
	setenv("GOWORK", "off", 1);
	setenv("GOENV", "off", 1);
	setenv("GO111MODULE", "on", 1);
	setenv("CGO_ENABLED", "1", 1);
	snprintf(val, sizeof(val), "-I%s/include", top);
	setenv("CGO_CFLAGS", val, 1);
	/* the shared library of the build directory, found again at run time */
	snprintf(val, sizeof(val), "-L%s -Wl,-rpath,%s", build, build);
	setenv("CGO_LDFLAGS", val, 1);
	if (chdir("bindings/go") != 0)
		TL_FAIL("bindings/go: %s", strerror(errno));
	snprintf(cmd, sizeof(cmd), "exec go test -count=1 -v %s 2>&1", pkg);
	printf("$ %s  (GOPATH, GOCACHE under %s; CGO_LDFLAGS=%s)\n", cmd, out, val);
	status = run_echo(cmd, "--- SKIP: ", &skips, skipline, sizeof(skipline));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		TL_FAIL("go test %s: %s", pkg, tl_status_str(status));
	if (skips)
		printf("go test %s passed; %d test(s) skipped, the first: %s\n", pkg, skips, skipline);
	else
		printf("go test %s passed\n", pkg);
	exit(TL_PASS);
}
