/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * stackclear.c - no key left in a dead stack frame (secretmem-heap(7),
 * STACKS): how a thread's stack is cleared; waits.c decides when.
 *
 * The frames a function leaves when it returns are not erased: a key that
 * a signing routine copied into a local array stays on the stack, below
 * the stack pointer, until a deeper call happens to write over it, and a
 * program that then waits for its next request (an agent, a server) keeps
 * it there for as long as it waits.  hp_stack_clear() zeroes every page of
 * the calling thread's own stack below the caller that holds memory and
 * is not zero already (mincore: pages without memory are skipped, nothing
 * is faulted in), then the rest up to the caller's frame, then the vector
 * registers (a core file's notes keep them; they are all call-clobbered,
 * so no caller loses a value).
 *
 * The thread's own stack, learnt at its first clearing: the main thread's
 * "[stack]" mapping (/proc/self/maps, raw reads), pthread_getattr_np's
 * bounds for the others.  Not cleared: a stack the thread is not on
 * - a signal handler on its sigaltstack, a coroutine on a stack given to
 * swapcontext or setcontext (both noted here: such a stack may be an
 * array in a live frame of the thread's own stack); those from malloc are
 * in secret memory already - a thread on a stack the program gave
 * (pthread_attr_setstack: its guard pages, if any, are its own), and a
 * thread whose bounds are unknown.
 *
 * A thread that ends leaves its frames too, and glibc keeps the stacks of
 * ended threads for new ones: pthread_create runs every thread under a
 * frame of the module's that clears the stack below it when the thread's
 * function returns, calls pthread_exit or is cancelled.
 *
 * SECRETMEM_HEAP_STACKS=0 turns all of it off; it is also off while the
 * module does not serve the process's malloc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "slab.h"
#include "internal.h"
#include "hp.h"

#define HP_EXPORT __attribute__((visibility("default")))
#define PAGE 4096u

#if defined(__x86_64__)
#define SP_NOW(v) __asm__ volatile("mov %%rsp, %0" : "=r"(v))
#elif defined(__aarch64__)
#define SP_NOW(v) __asm__ volatile("mov %0, sp" : "=r"(v))
#endif

/* ---- glibc's functions behind the module's ------------------------------- */

HP_REAL(sigaltstack)
HP_REAL(pthread_create)
HP_REAL(swapcontext)
HP_REAL(setcontext)

/* All of them, waits.c's too: a dlsym while the program works would leave
 * what its registers held in the frames it runs on. */
static void resolve_all(void)
{
	resolve_sigaltstack();
	resolve_pthread_create();
	resolve_swapcontext();
	resolve_setcontext();
	hp_waits_resolve();
}

/* ---- when ------------------------------------------------------------------ */

enum { ON_UNKNOWN = 0, ON_YES = 1, ON_NO = 2 };
static int on_state; /* ON_*, decided at the first wait after the module serves */

int hp_stack_on(void)
{
	int s = __atomic_load_n(&on_state, __ATOMIC_RELAXED);

	if (SM_LIKELY(s != ON_UNKNOWN))
		return s == ON_YES;
	if (!hp_serving())
		return 0; /* not yet, or never: asked again next time */
#ifdef SP_NOW
	const char *e = getenv("SECRETMEM_HEAP_STACKS");
	s = e && strcmp(e, "0") == 0 ? ON_NO : ON_YES;
	if (s == ON_YES) {
		hp_sandbox_check();
		resolve_all();
	}
#else
	s = ON_NO;
#endif
	int unknown = ON_UNKNOWN;
	if (!__atomic_compare_exchange_n(&on_state, &unknown, s, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		s = unknown; /* another thread decided meanwhile */
	else
		hp_stack_mode(s == ON_YES ? (hp_sandboxed() ? 2 : 1) : 0);
	return s == ON_YES;
}

/* ---- the thread's stack -------------------------------------------------------- */

enum { ST_NEW = 0, ST_KNOWN, ST_NONE, ST_BUSY };

struct tstack {
	uintptr_t lo, hi;     /* the thread's stack                              */
	uintptr_t low;        /* the lowest page seen holding memory             */
	uintptr_t alt_lo, alt_hi; /* the thread's sigaltstack, if any           */
	long tid;             /* the thread's: a clone(CLONE_VM) child that
	                         shares this TLS is not this thread             */
	unsigned char state;  /* ST_*                                            */
	unsigned char grows;  /* the main thread's: lo moves down               */
	unsigned char given;  /* a stack the program gave (pthread_attr_setstack) */
};
static __thread struct tstack t_st __attribute__((tls_model("initial-exec")));

/*
 * Each question to the kernel below is a section of the call gate
 * (src/callgate.c), asked only when no filter is known: a filter that
 * another thread installs for every thread meanwhile waits for it, or it
 * sees the filter and is not asked.
 */

/* This thread's id (and the process's, when pid is not NULL), or -1 under
 * a filter. */
static long ask_ids(long *pid)
{
	long tid = -1;

	sm_calls_enter();
	if (!hp_sandboxed()) {
		tid = syscall(SYS_gettid);
		if (pid)
			*pid = syscall(SYS_getpid);
	}
	sm_calls_leave();
	return tid;
}

/* 1 if the page at p is mapped (mincore answers for it); 0 under a filter. */
static int mapped(uintptr_t p)
{
	unsigned char v;

	sm_calls_enter();
	int yes = !hp_sandboxed() && syscall(SYS_mincore, (void *)p, (size_t)PAGE, &v) == 0;
	sm_calls_leave();
	return yes;
}

struct vma {
	uintptr_t sp, lo, hi;
	int stack; /* the "[stack]" line */
};

static int find_vma(const struct sm_mapline *m, void *arg)
{
	struct vma *v = arg;

	if (v->sp < m->lo || v->sp >= m->hi)
		return 0;
	v->lo = m->lo;
	v->hi = m->hi;
	v->stack = strcmp(m->path, "[stack]") == 0;
	return 1;
}

/* The mapping sp is in (/proc/self/maps with raw system calls: glibc's
 * pthread_getattr_np reads it through fopen for the main thread, and a
 * FILE open while another thread forks is touched by the child before the
 * heap is its own). */
static int vma_of(uintptr_t sp, struct vma *v)
{
	char buf[4096];

	v->sp = sp;
	sm_calls_enter();
	int rc = !hp_sandboxed() && sm_maps_walk(buf, sizeof(buf), find_vma, v) == 1 ? 0 : -1;
	sm_calls_leave();
	return rc;
}

/* The main thread's stack: its "[stack]" mapping; 0 when known. */
static int learn_main(uintptr_t sp)
{
	struct vma v;

	if (vma_of(sp, &v) != 0 || !v.stack)
		return -1;
	t_st.lo = v.lo;
	t_st.hi = v.hi;
	t_st.grows = 1;
	return 0;
}

/* Another thread's: what glibc says, its lowest page mapped; 0 when known.
 * pthread_getattr_np allocates, so it is outside the call gate's section
 * (src/callgate.c: nothing in a section may wait for a lock). */
static int learn_thread(uintptr_t sp)
{
	pthread_attr_t a;
	void *addr;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return -1;
	int ok = pthread_attr_getstack(&a, &addr, &size) == 0;
	pthread_attr_destroy(&a);
	t_st.lo = (uintptr_t)addr;
	t_st.hi = t_st.lo + size;
	return !ok || sp < t_st.lo || sp >= t_st.hi || !mapped(t_st.lo) ? -1 : 0;
}

__attribute__((noinline)) static void stack_learn(uintptr_t sp)
{
	t_st.state = ST_BUSY; /* a wait in a signal handler meanwhile: skipped */
	if (t_st.given) { /* its guard pages, if any, are the program's own */
		t_st.state = ST_NONE;
		return;
	}
	long pid, tid = ask_ids(&pid);
	int rc = -1;
	if (tid > 0) {
		t_st.tid = tid;
		rc = tid == pid ? learn_main(sp) : learn_thread(sp);
	}
	if (rc) {
		t_st.state = ST_NONE;
		return;
	}
	t_st.low = sp & ~(uintptr_t)(PAGE - 1);
	t_st.state = ST_KNOWN;
}

/*
 * A coroutine on an array of the thread's own stack (makecontext on a
 * local array, then swapcontext): the frames below that array are live,
 * so a wait on it is not cleared, as one on a signal stack is not.  At
 * each swapcontext or setcontext the module looks at the context it goes
 * to: its stack pointer inside its uc_stack, and that uc_stack inside the
 * thread's stack, means "on such a coroutine" until the next switch.  A
 * coroutine that ends through uc_link (glibc switches without calling
 * setcontext) leaves the thread marked so until its next switch: its
 * waits are not cleared meanwhile.  Coroutine stacks from malloc or mmap
 * are outside the thread's stack, which is all a clearing reaches.
 */
static __thread unsigned char t_on_co __attribute__((tls_model("initial-exec")));

static uintptr_t context_sp(const ucontext_t *u)
{
#if defined(__x86_64__)
	return (uintptr_t)u->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	return (uintptr_t)u->uc_mcontext.sp;
#else
	(void)u;
	return 0;
#endif
}

static void note_switch(const ucontext_t *u)
{
	uintptr_t sp;

	if (!u || !hp_stack_on())
		return;
	SP_NOW(sp);
	if (t_st.state == ST_NEW && !hp_sandboxed())
		stack_learn(sp);
	uintptr_t lo = (uintptr_t)u->uc_stack.ss_sp, hi = lo + u->uc_stack.ss_size, to = context_sp(u);
	t_on_co = t_st.state == ST_KNOWN && lo && hi > lo && to > lo && to <= hi && lo >= t_st.lo && hi <= t_st.hi;
}

/* ---- the clearing --------------------------------------------------------------- */

/* Zero [p, end) with stores the compiler keeps, without calling anything
 * (the memory is below the stack pointer). */
static inline void zero_words(uintptr_t p, uintptr_t end)
{
	for (volatile uint64_t *q = (volatile uint64_t *)p; (uintptr_t)q < end; q++)
		*q = 0;
}

static inline int page_dirty(uintptr_t p)
{
	const uint64_t *q = (const uint64_t *)p;
	uint64_t acc = 0;

	for (unsigned i = 0; i < PAGE / 8; i++)
		acc |= q[i];
	return acc != 0;
}

/* Pages per mincore call: one call for a stack of up to 16 MiB; the answer
 * (a byte a page) is on the stack, at most 1/4096 of the stack's size. */
#define VEC 4096

/* Zero the page at p if it is not zero already (a read costs less than a
 * write, and writes nothing back). */
static void zero_page(uintptr_t p)
{
	if (page_dirty(p))
		zero_words(p, p + PAGE);
}

/* clear_pages's part with system calls: every page below cut that holds
 * memory; 0 when this thread is not cleared (1 when a filter came: the
 * caller clears without asking). */
static inline __attribute__((always_inline)) int ask_and_clear(uintptr_t sp, uintptr_t cut)
{
	long tid = ask_ids(NULL);
	if (tid < 0)
		return 1;
	if (tid != t_st.tid)
		return 0; /* a clone(CLONE_VM) child on this thread's TLS */
	if (t_st.grows && mapped(t_st.lo - PAGE)) { /* the main stack grew */
		struct vma v;
		if (vma_of(sp, &v) != 0 || !v.stack)
			return hp_sandboxed(); /* a filter came: cleared without asking */
		t_st.lo = v.lo;
	}
	size_t pages = (cut - t_st.lo) / PAGE;
	unsigned char vec[pages < VEC ? pages + 1 : VEC];
	for (uintptr_t top = cut; top > t_st.lo;) { /* from the top down */
		size_t n = (top - t_st.lo) / PAGE < VEC ? (top - t_st.lo) / PAGE : VEC;
		uintptr_t base = top - n * PAGE;
		sm_calls_enter();
		int asked = !hp_sandboxed(), no = asked && syscall(SYS_mincore, (void *)base, n * PAGE, vec) != 0;
		sm_calls_leave();
		if (!asked)
			break;
		if (no) {
			hp_sandbox_seen(); /* refused: a filter */
			break;
		}
		for (size_t i = 0; i < n; i++)
			if (vec[i] & 1) {
				uintptr_t p = base + i * PAGE;
				if (p < t_st.low)
					t_st.low = p;
				zero_page(p);
			}
		top = base;
	}
	return 1;
}

/*
 * Zero every page of the stack wholly below the page this function's
 * stack pointer is in, where the page holds memory and is not zero
 * already.  Returns that page's start (the caller zeroes the rest up to
 * its own frame), or 0 when this thread is not cleared.
 */
__attribute__((noinline)) static uintptr_t clear_pages(void)
{
	uintptr_t sp;

	SP_NOW(sp);
	if (SM_UNLIKELY(t_st.state != ST_KNOWN)) {
		if (t_st.state != ST_NEW || hp_sandboxed())
			return 0;
		stack_learn(sp);
		if (t_st.state != ST_KNOWN)
			return 0;
	}
	if (sp < t_st.lo || sp >= t_st.hi || (sp >= t_st.alt_lo && sp < t_st.alt_hi) || t_on_co)
		return 0; /* on another stack: a signal stack, a coroutine's */
	uintptr_t cut = sp & ~(uintptr_t)(PAGE - 1);
	int ok = hp_sandboxed() || ask_and_clear(sp, cut);
	if (!ok)
		return 0;
	if (hp_sandboxed()) /* no system call: the pages seen holding memory */
		for (uintptr_t p = t_st.low; p < cut; p += PAGE)
			zero_page(p);
	return cut;
}

/* Zero from cut up to this function's own stack pointer: what is left of
 * clear_pages()'s frame and of the dead frames in that page. */
__attribute__((noinline)) static void zero_tail(uintptr_t cut)
{
	uintptr_t sp;

	SP_NOW(sp);
	if (cut && cut < sp)
		zero_words(cut, sp & ~(uintptr_t)7);
}

static int vec_kind = -1; /* 0: SSE, 1: AVX, 2: AVX-512 */

/* Zero the vector registers (all of them are call-clobbered). */
__attribute__((noinline)) static void clear_vectors(void)
{
#if defined(__x86_64__)
	if (vec_kind < 0) {
		__builtin_cpu_init();
		vec_kind = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx") ? 1 : 0;
	}
	if (vec_kind == 2)
		__asm__ volatile("vzeroall\n\t"
				 "vpxord %%xmm16, %%xmm16, %%xmm16\n\tvpxord %%xmm17, %%xmm17, %%xmm17\n\t"
				 "vpxord %%xmm18, %%xmm18, %%xmm18\n\tvpxord %%xmm19, %%xmm19, %%xmm19\n\t"
				 "vpxord %%xmm20, %%xmm20, %%xmm20\n\tvpxord %%xmm21, %%xmm21, %%xmm21\n\t"
				 "vpxord %%xmm22, %%xmm22, %%xmm22\n\tvpxord %%xmm23, %%xmm23, %%xmm23\n\t"
				 "vpxord %%xmm24, %%xmm24, %%xmm24\n\tvpxord %%xmm25, %%xmm25, %%xmm25\n\t"
				 "vpxord %%xmm26, %%xmm26, %%xmm26\n\tvpxord %%xmm27, %%xmm27, %%xmm27\n\t"
				 "vpxord %%xmm28, %%xmm28, %%xmm28\n\tvpxord %%xmm29, %%xmm29, %%xmm29\n\t"
				 "vpxord %%xmm30, %%xmm30, %%xmm30\n\tvpxord %%xmm31, %%xmm31, %%xmm31" ::: "memory");
	else if (vec_kind == 1)
		__asm__ volatile("vzeroall" ::: "memory");
	else
		__asm__ volatile("pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\tpxor %%xmm2, %%xmm2\n\t"
				 "pxor %%xmm3, %%xmm3\n\tpxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
				 "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\tpxor %%xmm8, %%xmm8\n\t"
				 "pxor %%xmm9, %%xmm9\n\tpxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
				 "pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\tpxor %%xmm14, %%xmm14\n\t"
				 "pxor %%xmm15, %%xmm15" ::: "memory");
#endif
}

void hp_stack_clear(void)
{
	int e = errno;

	zero_tail(clear_pages());
	clear_vectors();
	hp_stack_cleared();
	errno = e;
}

/* ---- the signal stack ---------------------------------------------------------------- */

/* Remembered so that a wait inside a handler that runs on it is not taken
 * for a wait on the thread's stack (the signal stack may be an array on
 * that stack, above live frames). */
void hp_stack_altstack(const stack_t *ss)
{
	if (!ss)
		return;
	if (ss->ss_flags & SS_DISABLE) {
		t_st.alt_lo = t_st.alt_hi = 0;
	} else {
		t_st.alt_lo = (uintptr_t)ss->ss_sp;
		t_st.alt_hi = (uintptr_t)ss->ss_sp + ss->ss_size;
	}
}

HP_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	resolve_sigaltstack();
	int r = real_sigaltstack(ss, old);
	if (r == 0)
		hp_stack_altstack(ss);
	return r;
}

HP_EXPORT int swapcontext(ucontext_t *old, const ucontext_t *ucp)
{
	resolve_swapcontext();
	note_switch(ucp);
	int r = real_swapcontext(old, ucp);
	note_switch(old); /* back: where the thread left from */
	return r;
}

HP_EXPORT int setcontext(const ucontext_t *ucp)
{
	resolve_setcontext();
	note_switch(ucp);
	return real_setcontext(ucp);
}

/* ---- a thread's end ---------------------------------------------------------------- */

/*
 * A thread that ends leaves its frames too, and glibc keeps the stacks of
 * ended threads for new ones: every thread the program starts runs under
 * a frame of the module's that clears the stack below it when the
 * thread's function returns, calls pthread_exit or is cancelled (a
 * cleanup handler, run at this frame's depth).
 */
struct start {
	void *(*fn)(void *);
	void *arg;
	int given; /* the program gave the thread's stack */
	int taken;
};

/* Start records: held from pthread_create until the thread runs; a
 * thread's first allocator call is not the module's to make. */
#define STARTS 64
static struct start starts[STARTS];

static void at_end(void *unused)
{
	(void)unused;
	hp_stack_clear();
}

static void start_drop(struct start *s)
{
	if (s >= starts && s < starts + STARTS)
		__atomic_store_n(&s->taken, 0, __ATOMIC_RELEASE);
	else
		free(s);
}

static struct start *start_record(void)
{
	static unsigned next;

	for (unsigned i = 0; i < STARTS; i++) {
		struct start *s = &starts[(__atomic_fetch_add(&next, 1, __ATOMIC_RELAXED)) % STARTS];
		if (!__atomic_exchange_n(&s->taken, 1, __ATOMIC_ACQUIRE))
			return s;
	}
	return malloc(sizeof(struct start)); /* more threads starting than records */
}

static void *run_body(void *(*fn)(void *), void *arg)
{
	void *r;

	pthread_cleanup_push(at_end, NULL);
	r = fn(arg);
	pthread_cleanup_pop(1);
	return r;
}

static void *run_thread(void *p)
{
	struct start *s = p;
	void *(*fn)(void *) = s->fn, *arg = s->arg;

	t_st.given = (unsigned char)s->given;
	start_drop(s);
	return run_body(fn, arg);
}

HP_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	resolve_pthread_create();
	if (!hp_stack_on())
		return real_pthread_create(t, attr, fn, arg);
	struct start *s = start_record();
	if (!s)
		return EAGAIN;
	void *sa;
	size_t ss;
	s->fn = fn;
	s->arg = arg;
	/* glibc answers stackaddr - stacksize, which is 0 when none was set */
	s->given = attr && pthread_attr_getstack(attr, &sa, &ss) == 0 && (uintptr_t)sa + ss != 0;
	int r = real_pthread_create(t, attr, run_thread, s);
	if (r != 0)
		start_drop(s);
	return r;
}
