/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * chain.c - workload 6, the realloc chain 16 B -> 64 KiB by doubling, and
 * 6b, the 32-byte pair, each in a fresh process in five states: fresh,
 * after a warm-up chain, after the churn of 5, after that and the
 * allocator's trim, and in a child after fork.  The child side
 * (--child chain|pairstate NAME STATE) and one round of the parent side.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench.h"

static const char *chain_state[] = { "fresh", "warm", "churn", "trim", "fork" };

/* 6: one chain 16 B -> 64 KiB by doubling, each new part written. */
static void chain_body(const struct allocator *al)
{
	size_t n = 16;
	unsigned char *p = al->alloc(n);
	if (!p)
		oom(al->name);
	memset(p, 1, n);
	while (n < BIG_MAX) {
		unsigned char *q = al->realloc(p, n, 2 * n);
		if (!q)
			oom(al->name);
		memset(q + n, (int)n | 1, n);
		ESCAPE(q);
		p = q;
		n *= 2;
	}
	al->release(p, n);
}

/* k chains in one timed run; per chain. */
static void chains_timed(int a, double *out, int k)
{
	count_maps = a == A_SECRETMEM;
	timer_start();
	for (int i = 0; i < k; i++)
		chain_body(&allocs[a]);
	out[1] = timer_stop() / k;
	out[0] = last_cpu / k;
	out[2] = last_faults / k;
	out[3] = last_maps / k;
	count_maps = 0;
}

static void chain_once(int a, double *out)
{
	chains_timed(a, out, 1);
}

static void chain_steady(int a, double *out)
{
	chains_timed(a, out, CHAIN_STEADY);
}

/* The churn of 5 for n operations, then every block freed. */
static void churn_big(int a, long n)
{
	cur_name = allocs[a].name;
	allocs[a].big(n);
}

/* 6: STATE_PAIRS pairs of alloc(32) + write + free, per pair. */
static void pairs_once(int a, double *out)
{
	count_maps = a == A_SECRETMEM;
	double w = allocs[a].pairs(STATE_PAIRS);
	out[0] = last_cpu / STATE_PAIRS;
	out[1] = w / STATE_PAIRS;
	out[2] = last_faults / STATE_PAIRS;
	out[3] = last_maps / STATE_PAIRS;
	count_maps = 0;
}

/*
 * 6 in one state: the chain (what = chain_once) or the pairs (pairs_once),
 * after the state is set up in this fresh process; then once more (the
 * first run pays what the state left to do: first touch of pages, new
 * mappings), and with then (chains) CHAIN_STEADY more in one timed run (the
 * state's steady cost).  Prints 4 figures per run: 8, or 12 with then.
 */
static int child_state(int a, const char *state, void (*measure)(int, double *),
		       void (*then)(int, double *))
{
	double out[12];
	int nout = then ? 12 : 8;

	child_init(a, OSSL_ARENA);
	if (strcmp(state, "fresh") != 0)
		chain_once(a, out); /* the warm-up chain */
	if (strcmp(state, "churn") == 0 || strcmp(state, "trim") == 0)
		churn_big(a, CHAIN_CHURN_OPS);
	if (strcmp(state, "trim") == 0)
		allocs[a].trim();
	if (strcmp(state, "fork") == 0) {
		int fd[2];
		if (pipe(fd) != 0)
			die("pipe");
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			measure(a, out);
			measure(a, out + 4);
			if (then)
				then(a, out + 8);
			_exit(write(fd[1], out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : 1);
		}
		close(fd[1]);
		int st;
		ssize_t got = read(fd[0], out, sizeof(out));
		if (waitpid(pid, &st, 0) != pid || got != (ssize_t)sizeof(out) || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			fprintf(stderr, "bench: %s: the forked child failed\n", allocs[a].name);
			return 2;
		}
	} else {
		measure(a, out);
		measure(a, out + 4);
		if (then)
			then(a, out + 8);
	}
	for (int i = 0; i < nout; i++)
		printf(i % 4 < 2 ? "%s%.4f" : "%s%.6f", i ? " " : "", out[i]);
	printf("\n");
	return 0;
}

int child_chain(int a, const char *state)
{
	return child_state(a, state, chain_once, chain_steady);
}

int child_pairstate(int a, const char *state)
{
	return child_state(a, state, pairs_once, NULL);
}

/* 6 and 6b, one round: a fresh process per state and allocator. */
void chain_round(int r)
{
	double out[12];
	char st[48];

	for (int c = 0; c < 5; c++) {
		for (int i = 0; i < NALLOC; i++) {
			int a = (i + r) % NALLOC;
			if (!allocs[a].available)
				continue;
			struct sample s = { NAN, NAN, NAN, NAN, NAN, NAN }, s2 = s, s3 = s;
			if (run_child("chain", allocs[a].name, chain_state[c], out, 12, st, sizeof(st)) == 12) {
				s = (struct sample){ out[0], out[1], out[2], out[3], NAN, NAN };
				s2 = (struct sample){ out[4], out[5], out[6], out[7], NAN, NAN };
				s3 = (struct sample){ out[8], out[9], out[10], out[11], NAN, NAN };
			} else {
				note_child_fail("chain", a, st);
			}
			add_sample(W_CH_FRESH + c, a, s);
			add_sample(W_CH2_FRESH + c, a, s2);
			add_sample(W_CH3_FRESH + c, a, s3);
		}
		/* the pair in the same states: the four fastest allocators */
		for (int i = 0; i < NALLOC; i++) {
			int a = (i + r) % NALLOC;
			if (!allocs[a].available || a > A_JEMALLOC)
				continue;
			struct sample s = { NAN, NAN, NAN, NAN, NAN, NAN }, s2 = s;
			if (run_child("pairstate", allocs[a].name, chain_state[c], out, 8, st, sizeof(st)) == 8) {
				s = (struct sample){ out[0], out[1], out[2], out[3], NAN, NAN };
				s2 = (struct sample){ out[4], out[5], out[6], out[7], NAN, NAN };
			} else {
				note_child_fail("pairstate", a, st);
			}
			add_sample(W_PS_FRESH + c, a, s);
			add_sample(W_PS2_FRESH + c, a, s2);
		}
	}
}
