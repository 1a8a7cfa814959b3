/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_scan - a second root process reads every readable mapping of a
 * process holding 1,000 32-byte secrets of random content (some of them
 * moved by realloc on the way) through /proc/PID/maps and /proc/PID/mem, and
 * finds none of them.  The scanner proves it works: the child keeps a copy of
 * one secret in an ordinary malloc buffer and the scan must find exactly that
 * one.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define N 1000
#define LEN 32
#define CANARY 500
#define HBITS 13

static unsigned char known[N][LEN];
static int hash_idx[1 << HBITS];

static uint64_t head(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static unsigned hslot(uint64_t v)
{
	return (unsigned)((v * 0x9e3779b97f4a7c15ull) >> (64 - HBITS));
}

static void hash_build(void)
{
	memset(hash_idx, 0xff, sizeof(hash_idx));
	for (int i = 0; i < N; i++) {
		unsigned h = hslot(head(known[i]));
		while (hash_idx[h] >= 0)
			h = (h + 1) & ((1u << HBITS) - 1);
		hash_idx[h] = i;
	}
}

/* Index of a secret whose 32 bytes start at p, or -1. */
static int hash_find(const unsigned char *p)
{
	uint64_t v = head(p);
	for (unsigned h = hslot(v); hash_idx[h] >= 0; h = (h + 1) & ((1u << HBITS) - 1))
		if (head(known[hash_idx[h]]) == v && memcmp(known[hash_idx[h]], p, LEN) == 0)
			return hash_idx[h];
	return -1;
}

static void child(int to_parent, int from_parent)
{
	static unsigned char *sec[N];
	unsigned char *copy = NULL;

	for (int i = 0; i < N; i++) {
		/* half start in another class and are moved by realloc */
		sec[i] = secretmem_malloc(i % 2 ? LEN : 200);
		if (!sec[i])
			_exit(2);
		/* random bytes straight into secret memory: no other copy */
		if (getrandom(sec[i], LEN, 0) != LEN)
			_exit(3);
		if (i % 2 == 0 && !(sec[i] = secretmem_realloc(sec[i], LEN)))
			_exit(4);
		/* the scanner's control: one secret also in ordinary memory,
		 * made before the parent has every secret and starts to scan
		 * (the library calls no malloc: this may create the heap) */
		if (i == CANARY) {
			copy = malloc(LEN);
			if (!copy)
				_exit(7);
			memcpy(copy, sec[CANARY], LEN);
		}
		if (write(to_parent, sec[i], LEN) != LEN)
			_exit(5);
	}
	char c;
	if (read(from_parent, &c, 1) != 1) /* wait until scanned */
		_exit(6);
	explicit_bzero(copy, LEN);
	free(copy);
	for (int i = 0; i < N; i++)
		secretmem_free(sec[i]);
	_exit(0);
}

struct scan {
	size_t regions, unreadable, secret_regions, secret_unreadable, bytes, skipped;
	int found[N];
};

static void scan_child(pid_t pid, struct scan *sc)
{
	char path[64], line[512];
	static unsigned char buf[(1 << 20) + LEN];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *maps = fopen(path, "r");
	TL_CHECK(maps, "open %s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int mem = open(path, O_RDONLY | O_CLOEXEC);
	TL_CHECK(mem >= 0, "open %s: %s", path, strerror(errno));
	memset(sc, 0, sizeof(*sc));
	while (fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		char perm[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 || perm[0] != 'r')
			continue;
		int secret = strstr(line, "/secretmem (deleted)") != NULL;
		if (hi - lo > (1ul << 30) && !secret) {
			/* a sanitizer's shadow: terabytes of never-touched zero
			 * pages, reading them would take minutes */
			sc->skipped++;
			continue;
		}
		sc->regions++;
		sc->secret_regions += secret;
		size_t carry = 0;
		int readable = 0;
		for (unsigned long at = lo; at < hi;) {
			size_t want = hi - at < (1 << 20) ? hi - at : (1 << 20);
			ssize_t n = pread(mem, buf + carry, want, (off_t)at);
			if (n <= 0) {
				/* unreadable page (secret memory, vvar): skip a page */
				at += 4096;
				carry = 0;
				continue;
			}
			readable = 1;
			sc->bytes += (size_t)n;
			size_t have = carry + (size_t)n;
			for (size_t i = 0; i + LEN <= have; i++) {
				int k = hash_find(buf + i);
				if (k >= 0)
					sc->found[k]++;
			}
			carry = have < LEN - 1 ? have : LEN - 1;
			memmove(buf, buf + have - carry, carry);
			at += (unsigned long)n;
		}
		if (!readable) {
			sc->unreadable++;
			sc->secret_unreadable += secret;
		}
	}
	fclose(maps);
	close(mem);
}

int main(void)
{
	int c2p[2], p2c[2], st;
	static struct scan sc;

	tl_need_secretmem();
	TL_CHECK(pipe(c2p) == 0 && pipe(p2c) == 0, "pipe");
	fflush(stdout);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(c2p[0]);
		close(p2c[1]);
		child(c2p[1], p2c[0]);
	}
	close(c2p[1]);
	close(p2c[0]);
	size_t got = 0;
	while (got < sizeof(known)) {
		ssize_t n = read(c2p[0], (unsigned char *)known + got, sizeof(known) - got);
		if (n < 0 && errno == EINTR)
			continue;
		TL_CHECK(n > 0, "child died before sending its secrets");
		got += (size_t)n;
	}
	hash_build();
	scan_child(pid, &sc);
	TL_CHECK(write(p2c[1], "x", 1) == 1, "write");
	close(p2c[1]);
	TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s", tl_status_str(st));

	int leaked = 0;
	for (int i = 0; i < N; i++) {
		if (i != CANARY && sc.found[i]) {
			fprintf(stderr, "secret %d found %d time(s) in the child's readable memory\n", i, sc.found[i]);
			leaked++;
		}
	}
	printf("scanned %zu readable mappings (%zu bytes; %zu mappings over 1 GiB skipped); %zu unreadable, of which "
	       "%zu of %zu secretmem mappings; control secret found %d time(s), others found: %d\n",
	       sc.regions, sc.bytes, sc.skipped, sc.unreadable, sc.secret_unreadable, sc.secret_regions,
	       sc.found[CANARY], leaked);
	TL_CHECK(sc.found[CANARY] >= 1, "the scanner did not find the copy in ordinary memory: it does not work");
	TL_CHECK(sc.bytes > 100000, "the scan read only %zu bytes", sc.bytes);
	TL_CHECK(leaked == 0, "%d of %d secrets readable by another root process", leaked, N - 1);
	TL_CHECK(sc.secret_regions >= 1 && sc.secret_unreadable == sc.secret_regions,
		 "secretmem mappings: %zu, unreadable through /proc/PID/mem: %zu", sc.secret_regions, sc.secret_unreadable);
	printf("ok: none of %d secrets found by a root scanner\n", N - 1);
	return TL_PASS;
}
