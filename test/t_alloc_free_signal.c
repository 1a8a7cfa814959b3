/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_free_signal - a block is zeroed before secretmem_free puts it
 * where an allocation can take it, so a signal handler that leaves
 * secretmem_free with siglongjmp, at any instruction, loses the block at
 * worst: the next secretmem_calloc of its size returns zeroes, and nothing
 * is fatal (secretmem_free(3), NOTES).
 *
 * How: a traced child stops at an int3 just before secretmem_free(x) of a
 * block full of 0xAA, and at a second one just after.  A dry run counts the
 * instructions in between by single-stepping; then, for every k, a new
 * child is stepped k instructions into the call and SIGUSR1 is injected
 * there; its handler siglongjmps out.  The child then takes calloc blocks
 * of the same size (more than a thread cache holds) and checks that each is
 * zero.  Sizes: 48 (zeroed inline), 128 and 2048 (zeroed out of line).
 * x86-64 only (int3, rip); skipped under valgrind.
 * Under ThreadSanitizer, which runs a signal handler installed with
 * sigaction(2) only at its next interceptor (not where the signal came), the
 * handler is installed with the raw system call; and the signal comes only
 * at instructions of the program (the library is linked in), never inside
 * the runtime's calls, which the stepping runs through to their return (they
 * are most instructions there, and jumping out of one would break the
 * runtime's own state, not the library's).
 * Mutation seen failing: free of a slot above 64 bytes pushing it on the
 * thread cache before zeroing it (stop 23's first order, 2e85ec5): the
 * child's calloc meets the dirty slot and the write-after-free check ends
 * it; in the ThreadSanitizer build too (which, with the handler installed
 * by sigaction, passed: the jump came after free had zeroed the slot).
 */
#include "tljmp.h" /* first: the jump out of the handler, under ThreadSanitizer */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/time.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define TAKE 64 /* calloc blocks after the jump: more than a cache holds */
#define WAIT_S 2 /* seconds for the child's calloc blocks, at most */

#if defined(__SANITIZE_THREAD__)
#define T_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define T_TSAN 1
#endif
#endif

static size_t size;
static sigjmp_buf jb;

#ifdef T_TSAN
__attribute__((no_sanitize_thread))
#endif
static void on_usr1(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

#if defined(T_TSAN) && defined(__x86_64__)
#include <sys/syscall.h>
/* the kernel's sigaction needs a restorer (rt_sigreturn) */
extern void tl_usr1_restorer(void);
__asm__(".text\n.globl tl_usr1_restorer\ntl_usr1_restorer:\n mov $15, %rax\n syscall\n");

/* on_usr1 as the handler the kernel runs, past the runtime's */
static int handle_usr1(void)
{
	unsigned long ksa[4] = { (unsigned long)on_usr1, 0x04000000UL /* SA_RESTORER */,
				 (unsigned long)tl_usr1_restorer, 0 };
	return syscall(SYS_rt_sigaction, SIGUSR1, ksa, NULL, (size_t)8) == 0 ? 0 : -1;
}
#else
static int handle_usr1(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	return sigaction(SIGUSR1, &sa, NULL);
}
#endif

/* The traced child: 0 if every block it takes afterwards is zero. */
static int child(void)
{
	static unsigned char *volatile x;
	static unsigned char *v[TAKE];

	if (handle_usr1() != 0)
		return 20;
	/* the thread cache exists and holds a slot of this class */
	void *w = secretmem_malloc(size);
	if (!w)
		return 21;
	secretmem_free(w);
	x = secretmem_malloc(size);
	if (!x)
		return 21;
	memset(x, 0xAA, size);
	if (sigsetjmp(jb, 1) == 0) {
		__asm__ volatile("int3");
		secretmem_free(x);
		__asm__ volatile("int3");
	}
	/* a call left waiting (a lock left held) ends the child: a failure */
	struct itimerval it = { { 0, 0 }, { WAIT_S, 0 } };
	tl_signal_default(SIGALRM);
	if (setitimer(ITIMER_REAL, &it, NULL) != 0)
		return 24;
	for (int i = 0; i < TAKE; i++) {
		v[i] = secretmem_calloc(1, size);
		if (!v[i])
			return 22;
		for (size_t j = 0; j < size; j++)
			if (v[i][j])
				return 23; /* the freed block's bytes */
	}
	for (int i = 0; i < TAKE; i++)
		secretmem_free(v[i]);
	return 0;
}

#if defined(__x86_64__)
static long rip_byte(pid_t pid)
{
	long rip = ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user_regs_struct, rip), NULL);
	return ptrace(PTRACE_PEEKTEXT, pid, rip, NULL) & 0xff;
}

#ifdef T_TSAN
/* The program's code (the same in the fork child): from /proc/self/maps. */
static unsigned long text_lo, text_hi;

static void find_text(void)
{
	char line[512];

	TL_CHECK(tl_maps_line((const void *)secretmem_free, line, sizeof(line)) == 0 &&
			 sscanf(line, "%lx-%lx", &text_lo, &text_hi) == 2,
		 "no mapping for secretmem_free");
}

/* Stepped into a call out of the program's code (the runtime, or the C
 * library through it): run it to its return address with a breakpoint. */
static void run_foreign(pid_t pid, long n)
{
	long rip = ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user_regs_struct, rip), NULL);
	if ((unsigned long)rip >= text_lo && (unsigned long)rip < text_hi)
		return;
	long rsp = ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user_regs_struct, rsp), NULL);
	long ret = ptrace(PTRACE_PEEKDATA, pid, rsp, NULL);
	TL_CHECK((unsigned long)ret >= text_lo && (unsigned long)ret < text_hi,
		 "step %ld: at %#lx outside the program, not called from it (%#lx)", n, rip, ret);
	errno = 0;
	long word = ptrace(PTRACE_PEEKTEXT, pid, ret, NULL);
	TL_CHECK(errno == 0, "PEEKTEXT: %s", strerror(errno));
	TL_CHECK(ptrace(PTRACE_POKETEXT, pid, ret, (void *)((word & ~0xffL) | 0xcc)) == 0, "POKETEXT");
	int st;
	TL_CHECK(ptrace(PTRACE_CONT, pid, NULL, NULL) == 0, "PTRACE_CONT");
	TL_CHECK(waitpid(pid, &st, 0) == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP,
		 "step %ld: the call from %#lx did not return: %s", n, ret, tl_status_str(st));
	long at = ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user_regs_struct, rip), NULL);
	TL_CHECK(at == ret + 1, "step %ld: stopped at %#lx, not at the return address %#lx", n, at, ret);
	TL_CHECK(ptrace(PTRACE_POKETEXT, pid, ret, (void *)word) == 0, "POKETEXT");
	TL_CHECK(ptrace(PTRACE_POKEUSER, pid, offsetof(struct user_regs_struct, rip), (void *)ret) == 0,
		 "POKEUSER");
}
#else
#define run_foreign(pid, n) ((void)0)
#endif

/*
 * A traced child stopped at its first int3.  steps < 0: single-step to the
 * second int3 and return the number of steps.  steps >= 0: step that many
 * times, inject SIGUSR1 and return the child's wait status.
 */
static long run(long steps)
{
	int st;
	fflush(stdout); /* a sanitizer's _exit in the child may flush a copy */
	pid_t pid = fork();

	TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(30);
		raise(SIGSTOP);
		_exit(child());
	}
	TL_CHECK(waitpid(pid, &st, 0) == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "no SIGSTOP: %s",
		 tl_status_str(st));
	TL_CHECK(ptrace(PTRACE_CONT, pid, NULL, NULL) == 0, "PTRACE_CONT");
	TL_CHECK(waitpid(pid, &st, 0) == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP,
		 "the child did not reach its first int3: %s", tl_status_str(st));
	long n = 0;
	for (; steps < 0 || n < steps; n++) {
		if (steps < 0 && rip_byte(pid) == 0xcc)
			break;
		TL_CHECK(ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) == 0, "PTRACE_SINGLESTEP");
		TL_CHECK(waitpid(pid, &st, 0) == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP,
			 "step %ld: %s", n, tl_status_str(st));
		run_foreign(pid, n);
		TL_CHECK(n < 1000000, "no second int3 after a million steps");
	}
	if (steps < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return n;
	}
	TL_CHECK(ptrace(PTRACE_CONT, pid, NULL, (void *)(long)SIGUSR1) == 0, "PTRACE_CONT SIGUSR1");
	/* past the handler the child runs to its end (the second int3 is
	 * skipped by the jump) */
	for (;;) {
		TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
		if (!WIFSTOPPED(st))
			return st;
		/* a stop for a signal of the child's own (none expected): pass it on */
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)(WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st)));
	}
}
#endif

int main(void)
{
#if !defined(__x86_64__)
	tl_skip("x86-64 only (int3, rip)");
#else
	static const size_t sizes[] = { 48, 128, 2048 };

	if (tl_under_valgrind())
		tl_skip("ptrace under valgrind");
	tl_need_secretmem();
#ifdef T_TSAN
	find_text();
	printf("ThreadSanitizer: SIGUSR1 at each instruction of the program's own code, the runtime's calls run "
	       "through\n");
#endif
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size = sizes[i];
		long n = run(-1);
		TL_CHECK(n > 5, "size %zu: only %ld steps through secretmem_free", size, n);
		for (long k = 0; k <= n; k++) {
			long st = run(k);
			TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				 "size %zu: SIGUSR1 after %ld of the %ld instructions of free, siglongjmp out: %s "
				 "(23: a calloc block held the freed bytes)",
				 size, k, n, tl_status_str((int)st));
		}
		printf("size %zu: a jump out at each of the %ld instructions of secretmem_free: no block handed "
		       "out unzeroed\n",
		       size, n + 1);
	}
	return TL_PASS;
#endif
}
