/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * inproc.c - workloads 1-5, timed in this process: the random tables of 3
 * and 5, the calibration of a run's length, the runs of one and two
 * threads of 4, and the interleaved rounds in which every allocator runs
 * each workload once, the order rotating from round to round.  The loops
 * themselves are in loops.h.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include "bench.h"
#include "loops.h"

uint32_t rnd_size[RND_N];
uint32_t rnd_slot[RND_N];
uint32_t big_size[RND_N];

void fill_random_tables(void)
{
	random_tables();
}

/*
 * The number of units (k) for which run(k) takes about opt.target_ns: runs
 * of growing k (which also warm the allocator up) for at least half that
 * time, and until one run took a sixteenth of it (so that the clock's own
 * cost does not set k); the allocator's first call is left out.
 */
static long calibrate(double (*run)(long, void *), void *arg)
{
	long k = 1;
	double spent = 0, per = INFINITY, t = 0;

	run(1, arg); /* the first call may set the allocator up: not timed */
	while (spent < opt.target_ns / 2 || t < opt.target_ns / 16) {
		t = run(k, arg);
		spent += t;
		if (t >= opt.target_ns / 64 && t / (double)k < per)
			per = t / (double)k;
		if (t < opt.target_ns / 16 && k < (1L << 40))
			k *= 4;
	}
	double want = opt.target_ns / per;
	return want < 1 ? 1 : (long)want;
}

static double run_single(long k, void *arg)
{
	double (*run)(long) = *(double (**)(long))arg;

	return run(k);
}

/* One timed single-thread run of k units of ops_per_unit operations. */
static struct sample sample_single(int a, double (*run)(long), long k, double ops_per_unit)
{
	count_maps = a == A_SECRETMEM;
	double w = run(k), c = last_cpu, ops = (double)k * ops_per_unit;
	struct sample s = { c / ops, w / ops, last_faults / ops, last_maps / ops, NAN, NAN };

	count_maps = 0;
	return s;
}

/*
 * 4: T threads each run work(k), started together on a barrier.  Wall time
 * from the first thread's start to the last one's end; CPU time: the sum
 * over the threads of each one's CPU time from its start to its end (the
 * process's CPU time for the work, without creating and ending the
 * threads), and the busiest thread's.
 */
struct thread_arg {
	void (*work)(long);
	long k;
	pthread_barrier_t *start;
	double t0, t1, cpu;
} __attribute__((aligned(64)));

static void *thread_main(void *p)
{
	struct thread_arg *a = p;

	pthread_barrier_wait(a->start);
	double c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	a->t0 = now_ns();
	a->work(a->k);
	a->t1 = now_ns();
	a->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	return NULL;
}

static struct sample run_threads(void (*work)(long), long k, int nthreads)
{
	pthread_t tid[2];
	struct thread_arg arg[2];
	pthread_barrier_t start;
	double busy = 0, t0 = INFINITY, t1 = 0, pcpu = 0;

	if (pthread_barrier_init(&start, NULL, (unsigned)nthreads) != 0)
		die("pthread_barrier_init");
	for (int i = 0; i < nthreads; i++) {
		arg[i] = (struct thread_arg){ .work = work, .k = k, .start = &start };
		if (pthread_create(&tid[i], NULL, thread_main, &arg[i]) != 0)
			die("pthread_create");
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(tid[i], NULL);
		t0 = arg[i].t0 < t0 ? arg[i].t0 : t0;
		t1 = arg[i].t1 > t1 ? arg[i].t1 : t1;
		busy = arg[i].cpu > busy ? arg[i].cpu : busy;
		pcpu += arg[i].cpu;
	}
	pthread_barrier_destroy(&start);
	double ops = (double)nthreads * (double)k * THREAD_BATCH;
	return (struct sample){ pcpu / ops, (t1 - t0) / ops, NAN, NAN, busy, t1 - t0 };
}

static double run_one_thread(long k, void *arg)
{
	void (*work)(long) = *(void (**)(long))arg;

	return run_threads(work, k, 1).aux_wall;
}

/* The in-process workloads, in interleaved rounds. */
void measure_in_process(void)
{
	static const int works[] = { W_PAIR, W_BATCH, W_RANDOM, W_BIG, W_THR1 };
	long k[NALLOC];

	for (size_t wi = 0; wi < sizeof(works) / sizeof(works[0]); wi++) {
		int w = works[wi];
		for (int a = 0; a < NALLOC; a++) {
			struct allocator *al = &allocs[a];
			if (!al->available)
				continue;
			cur_name = al->name;
			double (*run)(long) = w == W_PAIR ? al->pairs : w == W_BATCH ? al->batch
					    : w == W_RANDOM ? al->random : al->big;
			k[a] = w == W_THR1 ? calibrate(run_one_thread, &al->work) : calibrate(run_single, &run);
		}
		fprintf(stderr, "bench: workload %d, %d rounds\n", w, opt.rounds);
		for (int r = 0; r < opt.rounds; r++) {
			for (int i = 0; i < NALLOC; i++) {
				int a = (i + r) % NALLOC;
				struct allocator *al = &allocs[a];
				if (!al->available)
					continue;
				cur_name = al->name;
				switch (w) {
				case W_PAIR: add_sample(w, a, sample_single(a, al->pairs, k[a], 1)); break;
				case W_BATCH: add_sample(w, a, sample_single(a, al->batch, k[a], BATCH)); break;
				case W_RANDOM: add_sample(w, a, sample_single(a, al->random, k[a], 1)); break;
				case W_BIG: add_sample(w, a, sample_single(a, al->big, k[a], 1)); break;
				default:
					add_sample(W_THR1, a, run_threads(al->work, k[a], 1));
					add_sample(W_THR2, a, run_threads(al->work, k[a], 2));
				}
			}
		}
	}
}
