/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * nginx (Debian's) over HTTPS under `secretmem exec --mode heap`: the
 * master forks 2 workers, each worker runs a thread pool (`aio threads`
 * serves a static file from its threads), and a binary upgrade (SIGUSR2)
 * makes the master fork and exec a new master, which forks its own
 * workers.  Every process serves requests and has secret memory, and a scan
 * of every one of them (old and new master, all workers) finds no key
 * material outside the stack.  Control: the same without the module finds
 * the key in every process.
 *
 * nginx clears its environment before exec'ing the new binary; the
 * configuration keeps LD_PRELOAD and PYTHONMALLOC with `env` (without, the
 * new master would run unprotected: the test checks it has secret memory).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heapscan.h"
#include "tlib.h"

static const char *nginx_bin(void)
{
	return access("/usr/sbin/nginx", X_OK) == 0 ? "/usr/sbin/nginx" : "nginx";
}

static void write_conf(const char *conf, const char *prefix, int port)
{
	FILE *f = fopen(conf, "we");

	if (!f)
		TL_FAIL("%s: %s", conf, strerror(errno));
	fprintf(f,
		"daemon off;\nmaster_process on;\nworker_processes 2;\n"
		"pid %s/nginx.pid;\nerror_log %s/error.log info;\n"
		"env LD_PRELOAD;\nenv PYTHONMALLOC;\n"
		"thread_pool default threads=2;\n"
		"events { worker_connections 64; }\n"
		"http {\n  access_log off;\n"
		"  client_body_temp_path %s/body;\n  proxy_temp_path %s/proxy;\n"
		"  fastcgi_temp_path %s/fastcgi;\n  uwsgi_temp_path %s/uwsgi;\n  scgi_temp_path %s/scgi;\n"
		"  server {\n    listen 127.0.0.1:%d ssl;\n"
		"    ssl_certificate %s;\n    ssl_certificate_key %s;\n"
		"    location = /small { return 200 \"secretmem nginx test\\n\"; }\n"
		"    location / { root %s/www; aio threads; }\n  }\n}\n",
		prefix, prefix, prefix, prefix, prefix, prefix, prefix, port, rig_cert("rsa"), rig_make_key("rsa"),
		prefix);
	fclose(f);
}

static void requests(int port, const char *log, int n)
{
	for (int i = 0; i < n; i++)
		if (rig_sh("curl -sk --max-time 10 https://127.0.0.1:%d/small >> '%s' 2>&1 && "
			   "curl -sk --max-time 10 https://127.0.0.1:%d/file.txt >> '%s' 2>&1", port, log, port, log) != 0) {
			rig_cat(log);
			TL_FAIL("curl https://127.0.0.1:%d/ failed", port);
		}
}

static int threads_of(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	return rig_sh("test $(ls '%s' | wc -l) -gt 1", path) == 0 ? 2 : 1;
}

static pid_t read_pid(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static int run(int heap)
{
	const char *m = heap ? "heap" : "plain";
	char prefix[300], conf[350], log[350], label[120], secretmem[PATH_MAX], pidfile[350];
	struct scan_key key;
	int port = 0, found = 0;
	pid_t master = 0;

	snprintf(prefix, sizeof(prefix), "%s/nginx-%s", rig_tmpdir(), m);
	snprintf(conf, sizeof(conf), "%s/nginx.conf", prefix);
	snprintf(log, sizeof(log), "%s/out.log", prefix);
	snprintf(pidfile, sizeof(pidfile), "%s/nginx.pid", prefix);
	if (rig_sh("mkdir -p '%s/www' && echo 'static file from a thread' > '%s/www/file.txt' && chmod -R a+rX '%s'",
		   prefix, prefix, rig_tmpdir()) != 0)
		TL_FAIL("mkdir %s", prefix);
	if (!realpath(tl_build_path("secretmem"), secretmem))
		TL_FAIL("the secretmem tool is not built");
	/*
	 * nginx ignores SIGUSR2 while its parent is the process that started
	 * it (daemon off): a shell starts it in the background and exits a
	 * moment later, so the master is re-parented; it stays in the shell's
	 * process group, which rig_stop() ends.
	 */
	pid_t group = -1;
	for (int attempt = 0; attempt < 3 && master <= 0; attempt++) {
		char cmd[2 * PATH_MAX];

		port = rig_free_port();
		write_conf(conf, prefix, port);
		snprintf(cmd, sizeof(cmd), "%s%s%s -p '%s' -c '%s' & sleep 0.3", heap ? secretmem : "",
			 heap ? " exec --mode heap -- " : "", nginx_bin(), prefix, conf);
		char *argv[] = { "sh", "-c", cmd, NULL };
		group = rig_spawn(argv, NULL, log, prefix, 0);
		if (rig_wait_port(port, 0, 10000) != 0) {
			rig_stop(group);
			continue;
		}
		for (int i = 0; i < 500 && master <= 0; i++) {
			master = read_pid(pidfile);
			usleep(10000);
		}
	}
	if (master <= 0) {
		rig_cat(log);
		snprintf(log, sizeof(log), "%s/error.log", prefix);
		rig_cat(log);
		TL_FAIL("nginx (%s) did not start", m);
	}
	requests(port, log, 4);

	/* Binary upgrade: the master forks and execs a new master. */
	waitpid(group, NULL, 0); /* the shell is gone: the master's parent changed */
	kill(master, SIGUSR2);
	pid_t newmaster = 0;
	for (int i = 0; i < 1000; i++) {
		newmaster = read_pid(pidfile);
		if (newmaster > 0 && newmaster != master) {
			pid_t kids[8];
			if (rig_children(newmaster, kids, 8) >= 2)
				break;
		}
		usleep(10000);
	}
	if (newmaster <= 0 || newmaster == master) {
		rig_cat(log);
		snprintf(log, sizeof(log), "%s/error.log", prefix);
		rig_cat(log);
		TL_FAIL("nginx (%s): no new master after SIGUSR2", m);
	}
	usleep(200000);
	requests(port, log, 6);
	TL_CHECK(rig_file_count(log, "secretmem nginx test") == 10 && rig_file_count(log, "static file from a thread") == 10,
		 "nginx (%s) did not answer every request", m);
	TL_CHECK(!rig_file_has(log, "secretmem-heap:"), "nginx (%s): the heap module warned", m);

	TL_CHECK(scan_key_load(&key, rig_make_key("rsa")) == 0, "cannot read the key material");
	pid_t procs[24];
	int np = 0, threaded = 0;
	procs[np++] = master;
	np += rig_children(master, procs + np, 10); /* old workers and the new master */
	np += rig_children(newmaster, procs + np, 10);
	TL_CHECK(np >= 6, "nginx (%s) has %d processes, expected 2 masters and 4 workers", m, np);
	for (int i = 0; i < np; i++) {
		struct heap_hits h;
		const char *role = procs[i] == master ? "master" : procs[i] == newmaster ? "new master (exec'd)" : "worker";

		if (threads_of(procs[i]) > 1)
			threaded++;
		snprintf(label, sizeof(label), "nginx %s %s %d", m, role, (int)procs[i]);
		h = heap_scan_pid(&key, procs[i], label, heap ? NULL : "d,p,q", heap);
		found += h.other;
		if (heap) {
			struct heap_mem mem = heap_mem_of(procs[i]);

			fprintf(stderr, "%s: secret %ld KiB, [heap] %ld KiB, other anonymous %ld KiB\n", label,
				mem.secret_kb, mem.heap_kb, mem.anon_kb);
		}
	}
	TL_CHECK(threaded >= 2, "nginx (%s): %d processes with threads, expected the workers' thread pools", m,
		 threaded);
	scan_key_free(&key);
	rig_stop(group);
	fprintf(stderr, "nginx %s: %d processes (%d threaded), %d copies outside the stack\n", m, np, threaded, found);
	return found;
}

int main(void)
{
	rig_need("openssl");
	rig_need("curl");
	rig_need(nginx_bin());
	if (access(tl_build_path("secretmem"), X_OK) != 0)
		tl_skip("the secretmem tool is not built");
	rig_make_key("rsa");
	run(0);
	heap_need_module("t_heap_nginx");
	int found = run(1);
	TL_CHECK(found == 0, "heap mode: %d copies of key material found in nginx processes (listed above)", found);
	printf("nginx under heap mode: master, threaded workers, exec'd new master and its workers served HTTPS; "
	       "no key material in any\n");
	return 0;
}
