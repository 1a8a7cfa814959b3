/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * bench.h - what the files of the allocator benchmark share: its
 * parameters, the options, the timer, the table of allocators, the
 * workload numbers, the samples, the results the report prints, and each
 * file's entry points.  main.c describes the benchmark and lists the files.
 */
#ifndef SECRETMEM_BENCH_H
#define SECRETMEM_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "secretmem.h"

#define SMALL 32                  /* the size of "a secret" in most cases  */
#define BATCH 1000                /* live blocks in the batch case          */
#define LIVE 1000                 /* live set of the random-size case       */
#define BIG_LIVE 64               /* live set of the 1 B-64 KiB churn       */
#define BIG_MAX 65536
#define RND_N 65536               /* length of the random tables (pow. of 2) */
#define THREAD_BATCH 100          /* blocks alive at once per thread        */
#define PAGES_N 10000             /* blocks in the secret-page case         */
#define MEMLOCK_LIMIT (8u << 20)  /* RLIMIT_MEMLOCK of the memory-lock case */
#define CHURN_OPS 1000000L        /* operations of the churn case           */
#define CHURN_LIVE 1000           /* at most this many live in the churn    */
#define CHAIN_CHURN_OPS 500       /* churn before the "after churn" chain   */
#define GROW_N 20000              /* secrets added in the growth case       */
#define GROW_N_SLOW 2000          /* ... for sodium and naive-memfd         */
#define GROW_PER_ROUND 3          /* growth processes per round and allocator */
#define FLOOR_PAGES 256           /* fresh secret pages touched for the floor */
#define SWEEP_PROCS 21         /* slot-offset sweep processes per allocator */
#define SWEEP_BAD 1.25          /* a sweep process's max/min counted as slow */
#define OSSL_ARENA (16u << 20)    /* OpenSSL secure heap for the timed cases */
#define MAXROUNDS 64
#define CLASS_SLOTS (512 / 4 + 1) /* usable sizes up to 512, by 4 bytes */
#define CHAIN_STEADY 10 /* chains timed together for the steady state */
#define CHAIN_STEADY_STR "10"
#define STATE_PAIRS 20000 /* pairs timed in each state of 6 */

/* Keep the compiler from dropping a write or an allocation: p escapes. */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

/* ---- main.c: the options and the page size ------------------------- */

struct options {
	int quick;
	const char *csv;
	double target_ns; /* length of one timed run */
	int rounds;       /* interleaved rounds of the in-process cases */
	int child_rounds; /* rounds of the cases run in fresh processes */
	long sweep_pairs; /* pairs per position in the slot-offset sweep */
};
extern struct options opt;
extern size_t page_size;

/* ---- harness.c: the timer, errors, samples, child processes -------- */

double clock_ns(clockid_t id);
double now_ns(void);

/* A timed run: timer_stop() returns the wall time, leaves the rest in last_* */
extern double last_cpu, last_faults, last_maps;
extern int count_maps;
void timer_start(void);
double timer_stop(void);

extern const char *cur_name; /* the allocator running, for oom() */
void die(const char *what) __attribute__((noreturn));
void oom(const char *who) __attribute__((noreturn));
int cmp_double(const void *a, const void *b);
void raise_nofile(void);

enum {
	W_PAIR, W_BATCH, W_RANDOM, W_THR1, W_THR2, W_BIG,
	W_CH_FRESH, W_CH_WARM, W_CH_CHURN, W_CH_TRIM, W_CH_FORK, W_GROW,
	W_PS_FRESH, W_PS_WARM, W_PS_CHURN, W_PS_TRIM, W_PS_FORK,
	/* the same, measured again right after (the state's steady cost) */
	W_CH2_FRESH, W_CH2_WARM, W_CH2_CHURN, W_CH2_TRIM, W_CH2_FORK,
	W_PS2_FRESH, W_PS2_WARM, W_PS2_CHURN, W_PS2_TRIM, W_PS2_FORK,
	/* chains: CHAIN_STEADY more after that, timed together */
	W_CH3_FRESH, W_CH3_WARM, W_CH3_CHURN, W_CH3_TRIM, W_CH3_FORK, NWORK
};

/* One run of one workload by one allocator: per operation, except aux. */
struct sample {
	double cpu, wall;   /* ns per operation                               */
	double faults;      /* minor page faults per operation                */
	double maps;        /* new secretmem mappings per operation (secretmem) */
	double aux_cpu, aux_wall; /* threads: busiest thread's CPU, total wall;
	                             growth: the page-fault floor per secret   */
};

struct series {
	int n;
	struct sample s[MAXROUNDS];
};

enum { A_SECRETMEM, A_GLIBC, A_MIMALLOC, A_JEMALLOC, A_OPENSSL, A_SODIUM, A_NAIVE, NALLOC };

extern struct series ser[NWORK][NALLOC];
extern char child_fail[256]; /* the first failure of a per-round child */
void add_sample(int w, int a, struct sample s);
int run_child(const char *what, const char *arg, const char *arg2, double *out, int nout,
	      char *status, size_t status_len);
int child_init(int a, size_t arena);
void note_child_fail(const char *what, int a, const char *status);
void measure_children(void);

/* ---- allocators.c: the allocators, with the timed loops of 1-5 ----- */

typedef void *(*alloc_fn)(size_t);
typedef void (*release_fn)(void *, size_t);

struct allocator {
	const char *name;
	alloc_fn alloc;
	release_fn release;
	void *(*realloc)(void *, size_t, size_t);
	void (*trim)(void);
	double (*pairs)(long);
	double (*batch)(long);
	double (*random)(long);
	double (*big)(long);
	void (*work)(long);
	int available;
	const char *why; /* when not available */
};

extern struct allocator allocs[NALLOC];
extern const char *const col_name[NALLOC];
int find_alloc(const char *name);
void load_general(void);
const char *process_malloc(void);

/* ---- inproc.c: workloads 1-5, timed in this process ---------------- */

extern uint32_t rnd_size[RND_N], rnd_slot[RND_N], big_size[RND_N];
void fill_random_tables(void);
void measure_in_process(void);

/* ---- chain.c: 6, the realloc chain, and 6b, the pair, in states ---- */

void chain_round(int r);
int child_chain(int a, const char *state);
int child_pairstate(int a, const char *state);

/* ---- growth.c: 7 growth, 9 pages, 10 memory-lock limit, 11 churn --- */

struct once {                       /* 9-11: one run each              */
	double pages, locked_kib;          /* 9                            */
	double distinct, mapped, regions;  /* 9, secretmem details          */
	double memlock, memlock_kib;       /* 10                           */
	int memlock_note;                  /* 10: 1 unlocked arena, 2 cap, 3 sodium */
	char pages_status[48], memlock_status[48];
};

extern struct once res[NALLOC];
extern double churn[2][8];
extern char churn_status[2][48];
void grow_round(int r);
void run_once_children(void);
int child_grow(int a);
int child_pages(int a);
int child_memlock(int a);
int child_churn(int mixed);

/* ---- sweep.c: 8, the slot-offset sweep ----------------------------- */

extern double sweep[NALLOC][SWEEP_PROCS]; /* max/min pair time over positions */
extern double sweep_npos[NALLOC], sweep_same[NALLOC];
void sweep_processes(void);
int child_sweep(int a, long pairs);

/* ---- report.c: the header, the table, the notes, the CSV ----------- */

void print_loadavg(const char *when);
void print_header(int ossl_rc, int argc, char **argv);
void print_table(void);
void print_notes(void);
void write_csv(const char *path);

#endif
