/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_thread_exit - glibc frees (and allocates) after a thread's TSD
 * destructors ran: the strerror buffer of an unknown error, the dlerror
 * buffer of a failed dlopen, resolver state.  Under the heap module those
 * calls must not recreate a thread cache that nobody frees: 3000 short
 * threads doing all of that leave the process's address space and its
 * secret memory where 300 left them (within a small margin).
 */
#include <dlfcn.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "heaprig.h"
#include "tlib.h"

static void *work(void *arg)
{
	long i = (long)arg;
	struct addrinfo *ai = NULL;
	void *v[16];

	for (int k = 0; k < 16; k++) /* fill this thread's cache */
		v[k] = malloc((size_t)(k * 91 + 1));
	for (int k = 0; k < 16; k++)
		free(v[k]);
	if (strlen(strerror(100000 + (int)i)) == 0) /* malloc'ed per thread */
		return (void *)1;
	if (dlopen("/nonexistent/libsecretmem-none.so", RTLD_NOW)) /* dlerror buffer */
		return (void *)1;
	if (i % 8 == 0 && getaddrinfo("localhost", "22", NULL, &ai) == 0)
		freeaddrinfo(ai);
	return NULL;
}

static void threads(int n)
{
	for (int i = 0; i < n; i += 4) {
		pthread_t t[4];
		for (int k = 0; k < 4; k++)
			TL_CHECK(pthread_create(&t[k], NULL, work, (void *)(long)(i + k)) == 0, "pthread_create");
		for (int k = 0; k < 4; k++)
			pthread_join(t[k], NULL);
	}
}

static long vm_kb(void)
{
	char buf[8192];
	FILE *f = fopen("/proc/self/status", "re");
	long kb = -1;

	TL_CHECK(f, "status");
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "VmSize: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int child(void)
{
	struct sm_heap_stats a, b;

	TL_CHECK(hr_active(), "the heap module is not active");
	threads(300);
	long vm0 = vm_kb();
	TL_CHECK(hr_stats(0, &a) == 0, "figures");
	threads(3000);
	long vm1 = vm_kb();
	TL_CHECK(hr_stats(0, &b) == 0, "figures");
	printf("VmSize %ld -> %ld kB; secret %llu -> %llu bytes; early %llu bytes\n", vm0, vm1,
	       (unsigned long long)a.secret_bytes, (unsigned long long)b.secret_bytes,
	       (unsigned long long)b.early_bytes);
	TL_CHECK(vm1 - vm0 < 2048, "address space grew by %ld kB over 3000 threads", vm1 - vm0);
	TL_CHECK(b.secret_bytes <= a.secret_bytes + (1 << 20), "secret memory grew");
	TL_CHECK(b.early_bytes == 0 && b.plain_blocks == 0, "blocks outside secret memory");
	printf("child ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	char out[8192];

	if (argc > 1)
		return child();
	tl_need_secretmem();
	hr_module();
	int st = hr_run(argv[0], "run", 1, NULL, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "child: %s", tl_status_str(st));
	printf("pass\n");
	return 0;
}
