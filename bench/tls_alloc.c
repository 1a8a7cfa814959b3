/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * bench/tls_alloc.c - the OpenSSL allocations of one keep-alive HTTPS
 * request of nginx serving a 4 KiB file, replayed in a loop (run by
 * bench/tls_alloc.sh without the module and under its modes).
 *
 * The sequence was recorded with uprobes on the preload module's memory
 * functions (nginx 1.22, OpenSSL 3.0, SSL_MODE_RELEASE_BUFFERS): per
 * request two 16712-byte read buffers (the request, then an empty read),
 * one 16492-byte write buffer, two 40-byte blocks, and about 70
 * OPENSSL_free(NULL) calls.  The program writes what the kernel and the
 * record layer would write into them (150 and 4200 bytes).
 *
 *   tls_alloc REQUESTS   prints the process CPU time per request in ns
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int request(void)
{
	unsigned char *r, *w, *a, *b;

	if (!(r = OPENSSL_malloc(16712)))
		return -1;
	memset(r, 0x17, 150);
	OPENSSL_free(r);
	if (!(r = OPENSSL_malloc(16712)))
		return -1;
	OPENSSL_free(r);
	w = OPENSSL_malloc(16492);
	a = OPENSSL_malloc(40);
	b = OPENSSL_malloc(40);
	if (!w || !a || !b)
		return -1;
	memset(w, 0x17, 4200);
	memset(a, 1, 40);
	memset(b, 2, 40);
	OPENSSL_free(b);
	OPENSSL_free(a);
	OPENSSL_free(w);
	for (int i = 0; i < 70; i++)
		OPENSSL_free(NULL);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;

	if (n < 1 || n > 100000000) {
		fprintf(stderr, "usage: tls_alloc REQUESTS (1..1e8)\n");
		return 64;
	}
	for (int i = 0; i < 1000; i++) /* warm-up: the buffers' runs exist */
		if (request())
			return 1;
	double t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		if (request())
			return 1;
	printf("%.1f\n", (cpu_ns() - t0) / (double)n);
	return 0;
}
