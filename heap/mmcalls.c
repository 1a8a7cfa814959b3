/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * mmcalls.c - the program's memory calls in heap mode: memory it locks
 * becomes secret memory (secretmem-heap(7), "Locked memory").
 *
 * libsodium, libgcrypt, OpenSSL's secure heap and Botan keep their keys in
 * private anonymous memory that they lock: mlock(2), mlock2(2) (OpenSSL
 * calls it with syscall(SYS_mlock2, ...)) or mmap(2) with MAP_LOCKED.
 * Here each of those calls hands the range to the library's adopt.c,
 * which makes it secret memory in place; and the calls a program makes on
 * such a range later (munlock, mprotect, madvise, munmap, mremap, and
 * mmap with MAP_FIXED over it) keep the kernel's meaning for private
 * memory while the records stay true.  mlock of secret memory the heap
 * gave (a malloc()ed buffer) succeeds, as on ordinary memory, instead of
 * the kernel's ENOMEM.
 *
 * Everything else goes to the kernel unchanged, by raw system call; and
 * the library's own calls of these functions inside the module never come
 * here (sm_os_direct).  When the module is not serving (another allocator
 * holds malloc, the preload module is loaded) or secret memory is refused,
 * nothing is adopted: the kernel locks, as without the module.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "slab.h"
#include "hp.h"

#define HP_EXPORT __attribute__((visibility("default")))

/* ---- who asked ----------------------------------------------------------------- */

#define NAMES 32
static char names[NAMES][64];
static int nnames;
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

/* The file name of the object that code address ra belongs to, kept for
 * the life of the process (a library may be unloaded). */
static const char *caller(const void *ra)
{
	Dl_info info;
	const char *name = "?";

	if (dladdr(ra, &info) && info.dli_fname && *info.dli_fname) {
		const char *slash = strrchr(info.dli_fname, '/');
		name = slash ? slash + 1 : info.dli_fname;
	}
	pthread_mutex_lock(&names_lock);
	int k = 0;
	while (k < nnames && strncmp(names[k], name, sizeof(names[k]) - 1) != 0)
		k++;
	if (k == nnames && nnames < NAMES - 1)
		strncpy(names[nnames++], name, sizeof(names[0]) - 1);
	else if (k == nnames) /* the last one holds all the others */
		strcpy(names[k = NAMES - 1], "(others)");
	pthread_mutex_unlock(&names_lock);
	return names[k];
}

/* ---- state ---------------------------------------------------------------------- */

static int warned, warned_exec;

/* Whether locked memory is made secret now. */
/* Locked memory is made secret: the module serves, secret memory works,
 * and no seccomp filter would stop the calls (filtercheck.c; asked first:
 * the backend's check reads /proc). */
static int adopting(void)
{
	return hp_serving() && !sm_secret_new_is_off() && secretmem_default_backend() == SECRETMEM_BACKEND_SECRET;
}

/* The module serves, but secret memory is refused (no memfd_secret(2), or
 * a filter that answers it with an error); a filter that kills was said
 * when it came. */
static int refused_here(void)
{
	return hp_serving() && !sm_secret_new_is_off();
}

static int ret(int rc)
{
	if (rc) {
		errno = -rc;
		return -1;
	}
	return 0;
}

void hp_lock_refusal_said(void)
{
	__atomic_store_n(&warned, 1, __ATOMIC_RELAXED);
}

/* The one warning about ranges the program locked that secret memory
 * refused (why: the adoption's error, or 0 where secret memory is not
 * usable at all); rc: the kernel's own lock of it then. */
static void say_refused_lock(int why, int rc)
{
	if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		return;
	if (rc) /* locked without the module, perhaps: the heap's secret memory counts too */
		hp_say(why == -EAGAIN || why == -ENOMEM
			       ? "a range the program locked is neither secret nor locked: the memory-lock limit "
				 "refused it, and the heap's own secret memory counts against that limit (raise "
				 "ulimit -l)"
			       : "a range the program locked is neither secret nor locked: secret memory and then "
				 "the kernel's lock refused it");
	else
		hp_say(why == -EAGAIN || why == -ENOMEM
			       ? "a range the program locked stays in ordinary (locked) memory: the memory-lock limit "
				 "or memory refused secret memory for it (raise ulimit -l)"
		       : why == -EMFILE || why == -ENFILE
			       ? "a range the program locked stays in ordinary (locked) memory: no file could be "
				 "opened (the open-file limit; raise ulimit -n)"
		       : why ? "a range the program locked stays in ordinary (locked) memory: secret memory was "
			       "refused for it"
			     : "a range the program locked stays in ordinary (locked) memory: memfd_secret(2) is "
			       "not usable here (a seccomp filter, or the kernel)");
}

/*
 * Whether the kernel alone, without the module, would refuse to lock the
 * len bytes at addr too: the memory the process holds locked, less the
 * heap's own secret memory, and the range, over the memory-lock limit.
 * Then a refusal is the program's own, as without the module: no word.
 */
static int kernel_refuses_too(const void *addr, size_t len)
{
	struct secretmem_stats st;
	size_t ps = os_page_size();
	uintptr_t lo = (uintptr_t)addr & ~(uintptr_t)(ps - 1);

	if (len > SIZE_MAX - ps || secretmem_stats(&st) != 0 || st.memlock_unlimited)
		return 0;
	size_t span = (((uintptr_t)addr + len + ps - 1) & ~(uintptr_t)(ps - 1)) - lo;
	size_t locked = st.memlock_locked > st.bytes_mapped ? st.memlock_locked - st.bytes_mapped : 0;
	return span > st.memlock_limit || locked > st.memlock_limit - span;
}

static int lock_range_by(const void *addr, size_t len, int flags, int fresh, const char *by)
{
	hp_start(); /* a program may lock memory before its first malloc */
	if (!adopting()) {
		int rc = os_pass_mlock(addr, len, flags);
		/* a range the kernel locked is said, as one refused below (the
		 * kernel's refusal is the program's error: secret memory was
		 * not tried) */
		if (rc == 0 && len && refused_here())
			say_refused_lock(0, 0);
		return rc;
	}
	int rc = sm_adopt_lock(addr, len, flags, fresh, by);
	int why = sm_adopt_last_refusal();
	if (why && !(rc && kernel_refuses_too(addr, len)))
		say_refused_lock(why, rc);
	hp_adopt_figures();
	return rc;
}

/* The program's own call, named for the object that made it (caller). */
static int lock_range(const void *addr, size_t len, int flags, int fresh, const void *ra)
{
	return lock_range_by(addr, len, flags, fresh, caller(ra));
}

int hp_lock_again(const void *addr, size_t len, const char *by)
{
	return lock_range_by(addr, len, 0, 0, by);
}

/* ---- the calls ------------------------------------------------------------------- */

HP_EXPORT int mlock(const void *addr, size_t len)
{
	return ret(lock_range(addr, len, 0, 0, __builtin_return_address(0)));
}

HP_EXPORT int mlock2(const void *addr, size_t len, unsigned int flags)
{
	return ret(lock_range(addr, len, (int)flags, 0, __builtin_return_address(0)));
}

HP_EXPORT int munlock(const void *addr, size_t len)
{
	if (!adopting())
		return ret(os_pass_munlock(addr, len));
	return ret(sm_adopt_unlock(addr, len));
}

static void *map(void *addr, size_t len, int prot, int flags, int fd, off_t off, const void *ra)
{
	void *p;
	int rc, lockable = (flags & MAP_LOCKED) && (flags & MAP_ANONYMOUS) && (flags & MAP_TYPE) == MAP_PRIVATE &&
			   (prot & PROT_READ) && !(prot & PROT_EXEC);
	int adopt = lockable && adopting();
	/* Over a fixed address the kernel's own call first: where it refuses
	 * (the memory-lock limit) what was there stays, as without the module;
	 * the fresh range it made is then unlocked (its charge given back, so
	 * the secret memory is not charged twice) and adopted like an
	 * mlock()ed one, or locked again by the kernel if that is refused.
	 * Elsewhere the range is mapped unlocked and locked by adopting it. */
	int later = adopt && !(flags & MAP_FIXED);

	/* MAP_POPULATE: the adoption faults every page in anyway */
	int held = flags & MAP_FIXED ? sm_adopt_hold() : 0;
	rc = os_pass_mmap(addr, len, prot, later ? flags & ~(MAP_LOCKED | MAP_POPULATE) : flags, fd, off, &p);
	if (!rc && (flags & MAP_FIXED)) /* what it replaced */
		sm_adopt_unmapped(p, len);
	sm_adopt_unhold(held);
	if (rc) {
		errno = -rc;
		return MAP_FAILED;
	}
	if (adopt && !later) {
		/* zero pages, unlocked for the moment it takes: nothing to
		 * leak; the kernel's lock again cannot fail on the charge just
		 * given back (unless another thread took it meanwhile) */
		os_pass_munlock(p, len);
		lock_range(p, len, 0, 1, ra);
	} else if (lockable && !adopt && refused_here()) {
		say_refused_lock(0, 0); /* what mlock says of it (lock_range) */
	} else if (adopt) {
		rc = lock_range(p, len, 0, 1, ra);
		if (rc) {
			/* neither secret nor locked: the kernel's MAP_LOCKED
			 * fails at the memory-lock limit as well */
			os_pass_munmap(p, len);
			errno = rc == -ENOMEM ? EAGAIN : -rc;
			return MAP_FAILED;
		}
	}
	return p;
}

HP_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map(addr, len, prot, flags, fd, off, __builtin_return_address(0));
}

HP_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map(addr, len, prot, flags, fd, off, __builtin_return_address(0));
}

HP_EXPORT int munmap(void *addr, size_t len)
{
	int held = sm_adopt_hold(), rc = os_pass_munmap(addr, len), some = sm_adopt_count != 0;

	if (!rc)
		sm_adopt_unmapped(addr, len);
	sm_adopt_unhold(held);
	if (some)
		hp_adopt_figures();
	return ret(rc);
}

/* mprotect (pkey NO_KEY), or pkey_mprotect with pkey */
#define NO_KEY INT_MIN
static int protect(void *addr, size_t len, int prot, int pkey)
{
	size_t ps = os_page_size();

	if ((prot & PROT_EXEC) && sm_adopt_count && len <= SIZE_MAX - ps) {
		/* secret memory cannot be executed (the kernel says EACCES):
		 * what the program makes executable goes back to ordinary
		 * memory, and it is said once */
		size_t before, after, n;
		sm_adopt_totals(&n, &before);
		sm_adopt_release(addr, (len + ps - 1) & ~(ps - 1), NULL, 0);
		sm_adopt_totals(&n, &after);
		if (after != before && !__atomic_exchange_n(&warned_exec, 1, __ATOMIC_RELAXED))
			hp_say("locked memory the program made executable went back to ordinary memory (secret "
			       "memory cannot be executed)");
		hp_adopt_figures();
	}
	int held = sm_adopt_hold();
	int rc = pkey == NO_KEY ? os_pass_mprotect(addr, len, prot) : os_pass_pkey_mprotect(addr, len, prot, pkey);

	if (!rc)
		sm_adopt_protected(addr, len, prot);
	else if (rc != -EINVAL) /* it may have changed a part */
		sm_adopt_resync();
	sm_adopt_unhold(held);
	return ret(rc);
}

HP_EXPORT int mprotect(void *addr, size_t len, int prot)
{
	return protect(addr, len, prot, NO_KEY);
}

HP_EXPORT int pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	return protect(addr, len, prot, pkey);
}

HP_EXPORT int madvise(void *addr, size_t len, int advice)
{
	if (!hp_serving())
		return ret(os_pass_madvise(addr, len, advice));
	return ret(sm_adopt_advise(addr, len, advice));
}

HP_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *to = NULL, *p;
	int rc;

	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		to = va_arg(ap, void *);
		va_end(ap);
	}
	rc = sm_adopt_remap(old, old_len, new_len, flags, to, &p);
	if (rc == 1) {
		int held = flags & MREMAP_FIXED ? sm_adopt_hold() : 0;
		rc = os_pass_mremap(old, old_len, new_len, flags, to, &p);
		if (!rc && (flags & MREMAP_FIXED))
			sm_adopt_unmapped(to, new_len); /* what it replaced */
		sm_adopt_unhold(held);
	}
	hp_adopt_figures();
	if (rc) {
		errno = -rc;
		return MAP_FAILED;
	}
	return p;
}

#if defined(__x86_64__)
/*
 * syscall(3): OpenSSL locks its secure heap with syscall(SYS_mlock2, ...).
 * The memory calls go where the functions above would send them; every
 * other number goes to the kernel as glibc's syscall() sends it (-1 and
 * errno for a result in [-4095, -1]).
 */
static long raw6(long n, long a, long b, long c, long d, long e, long f)
{
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;

	__asm__ __volatile__("syscall"
			     : "=a"(r)
			     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return r;
}

/* The module's own text: its library copy calls syscall() too, and those
 * calls (made with the library's locks held) go straight to the kernel. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char __etext[] __attribute__((visibility("hidden")));

HP_EXPORT long syscall(long n, ...)
{
	const char *ra = __builtin_return_address(0);
	va_list ap;
	long a[6];

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	switch (ra >= __ehdr_start && ra < __etext ? -1 : n) {
	case SYS_mlock:
		return ret(lock_range((const void *)a[0], (size_t)a[1], 0, 0, ra));
	case SYS_mlock2:
		return ret(lock_range((const void *)a[0], (size_t)a[1], (int)a[2], 0, ra));
	case SYS_munlock:
		return munlock((const void *)a[0], (size_t)a[1]);
	case SYS_munmap:
		return munmap((void *)a[0], (size_t)a[1]);
	case SYS_mprotect:
		return mprotect((void *)a[0], (size_t)a[1], (int)a[2]);
	case SYS_pkey_mprotect:
		return pkey_mprotect((void *)a[0], (size_t)a[1], (int)a[2], (int)a[3]);
	case SYS_mmap: {
		void *p = map((void *)a[0], (size_t)a[1], (int)a[2], (int)a[3], (int)a[4], (off_t)a[5], ra);
		return p == MAP_FAILED ? -1 : (long)p;
	}
	case SYS_mremap:
		return (long)mremap((void *)a[0], (size_t)a[1], (size_t)a[2], (int)a[3], (void *)a[4]);
	case SYS_madvise:
		return madvise((void *)a[0], (size_t)a[1], (int)a[2]);
	default:
		break;
	}
	int mine = ra >= __ehdr_start && ra < __etext;
	/* a seccomp install (sandbox.c): SYS_seccomp's operations 0 and 1
	 * are the modes 1 and 2 (strict only without flags or arguments) */
	unsigned long mode = 0;
	if (!mine && n == SYS_seccomp && (a[0] == SECCOMP_SET_MODE_FILTER || (a[0] == SECCOMP_SET_MODE_STRICT && !a[1] && !a[2])))
		mode = a[0] + 1;
	if (!mine && n == SYS_prctl && a[0] == PR_SET_SECCOMP)
		mode = a[1];
	const void *prog = (const void *)a[2]; /* the filter, or the strict mode's none */
	if (mode)
		hp_sandbox_before(mode, prog);
	long r = raw6(n, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (mode) {
		/* with NEW_LISTENER the filter's success is the listener's
		 * descriptor; else 0 (a positive TSYNC answer is a failure) */
		int listener = n == SYS_seccomp && (a[1] & SECCOMP_FILTER_FLAG_NEW_LISTENER);
		hp_sandbox_after(r == 0 || (listener && r > 0) ? 0 : r ? r : -1, mode, prog);
	}
	if (!mine && n == SYS_sigaltstack && r == 0)
		hp_stack_altstack((const stack_t *)a[0]); /* stackclear.c */
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}
#endif
