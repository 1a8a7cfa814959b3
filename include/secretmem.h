/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * secretmem.h - the public interface of libsecretmem.
 *
 * libsecretmem puts secrets (keys, passwords, tokens) into Linux secret
 * memory (memfd_secret(2)): pages that are removed from the kernel's direct
 * map, so no other process - root included - can read them through
 * /proc/PID/mem, process_vm_readv or ptrace, and they never reach core dumps,
 * swap or a hibernation image.  See secretmem(7) for the threat model.
 *
 * Error conventions (one per function, never both):
 *  - functions returning int return 0 (or a non-negative value) on success
 *    and -errno on failure; they leave errno alone;
 *  - functions returning a pointer return NULL and set errno on failure.
 */
#ifndef SECRETMEM_H
#define SECRETMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Declared first so that SECRETMEM_DEALLOC can name it (contract below). */
void secretmem_free(void *ptr);

#define SECRETMEM_VERSION_MAJOR 1
#define SECRETMEM_VERSION_MINOR 1
#define SECRETMEM_VERSION_STRING "1.1.0"

/*
 * Attributes that let GCC and Clang check callers: a block freed with free(3)
 * instead of secretmem_free, a write past the size asked for, an ignored
 * result that leaks or hides a failure.  Each expands to nothing where the
 * compiler lacks it; they change no behaviour.  NONNULL is only on functions
 * that do not accept NULL (it lets the compiler delete NULL checks).
 * malloc(deallocator) needs GCC 11 (Clang rejects it); plain malloc is not on
 * secretmem_realloc (its result may be the block passed in), and realloc is
 * not named as a deallocator (code that routes one pointer to free(3) or to
 * secretmem_realloc by secretmem_owns() would get false warnings).
 * With alloc_size the compiler (and -D_FORTIFY_SOURCE) takes the size asked
 * for as the size of the block: to use the whole secretmem_usable_size(p),
 * first call p = secretmem_realloc(p, secretmem_usable_size(p)), which never
 * moves the block.  Define SECRETMEM_NO_ATTRIBUTES before the #include to
 * turn them all off.
 */
#if defined(__has_attribute) && !defined(SECRETMEM_NO_ATTRIBUTES)
#define SECRETMEM_HAS_ATTRIBUTE(x) __has_attribute(x)
#else
#define SECRETMEM_HAS_ATTRIBUTE(x) 0
#endif
#if SECRETMEM_HAS_ATTRIBUTE(__warn_unused_result__)
#define SECRETMEM_WARN_UNUSED __attribute__((__warn_unused_result__))
#else
#define SECRETMEM_WARN_UNUSED
#endif
#if SECRETMEM_HAS_ATTRIBUTE(__malloc__)
#define SECRETMEM_MALLOC __attribute__((__malloc__))
#else
#define SECRETMEM_MALLOC
#endif
#if SECRETMEM_HAS_ATTRIBUTE(__alloc_size__)
#define SECRETMEM_ALLOC_SIZE(...) __attribute__((__alloc_size__(__VA_ARGS__)))
#else
#define SECRETMEM_ALLOC_SIZE(...)
#endif
#if SECRETMEM_HAS_ATTRIBUTE(__nonnull__)
#define SECRETMEM_NONNULL(...) __attribute__((__nonnull__(__VA_ARGS__)))
#else
#define SECRETMEM_NONNULL(...)
#endif
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && !defined(SECRETMEM_NO_ATTRIBUTES)
#define SECRETMEM_DEALLOC __attribute__((__malloc__(secretmem_free, 1)))
#else
#define SECRETMEM_DEALLOC
#endif

/* ------------------------------------------------------------------ */
/* Kernel interface                                                    */
/* ------------------------------------------------------------------ */

/*
 * secretmem_memfd - the raw memfd_secret(2) system call.
 * flags: 0 or O_CLOEXEC; any other bit gives -EINVAL (checked here, before
 * the kernel sees it).  Returns a new file descriptor (>= 0), or -errno:
 * -ENOSYS where the kernel or architecture lacks the call or it is disabled,
 * -EPERM or -ENOSYS where a seccomp filter or LSM refuses it, -EMFILE/-ENFILE.
 * The size of the file must then be set exactly once with ftruncate(2), and
 * it can only be mapped MAP_SHARED.  Note: under a seccomp filter whose action
 * kills the process (systemd's @system-service), this call kills the caller;
 * call secretmem_supported() first, which never does.  (The library's own
 * calls never do: they always run in a short-lived child.)
 */
int secretmem_memfd(unsigned int flags) SECRETMEM_WARN_UNUSED;

/*
 * secretmem_supported - is secret memory usable in this process?
 * Returns 0 when memfd_secret(2) works here, else -errno telling why:
 * -ENOSYS (kernel too old, disabled with secretmem.enable=0, architecture
 * without support, or a filter answering ENOSYS), -EPERM (a seccomp filter or
 * LSM refuses it, or a filter would kill the caller); or a transient -EMFILE,
 * -ENFILE, -ENOMEM, -EAGAIN (no child process: RLIMIT_NPROC), which is not
 * cached and never a reason to use the fallback.  A refusal is cached for
 * good; a 0 is re-checked when the seccomp filter count of the process
 * (/proc/self/status) changed, and when a creation meets a refusal.
 * Thread-safe.  Never kills the caller under a seccomp filter: the probe, and
 * every later memfd_secret call of the library, runs in a short-lived child
 * (clone with CLONE_VM|CLONE_VFORK, SIGSYS at its default action), so a
 * filter installed at any time, by any thread, whose action for memfd_secret
 * kills or traps ends the child only.  The library needs clone(2) (without
 * CLONE_THREAD) for that, and openat/read (/proc/self/status), wait4, mmap:
 * a filter that kills or traps one of those acts on the caller, as on any
 * code that makes the call.
 * Seccomp strict mode (SECCOMP_SET_MODE_STRICT) is the exception: nothing
 * can be probed there (even reading /proc/self/status is fatal), and a
 * thread in strict mode is killed by the kernel (SIGKILL; the whole process
 * when it has one thread) at this call or at the library's next new mapping.
 * Enter strict mode only after the last use of the library that could map
 * memory.
 */
int secretmem_supported(void);

/* ------------------------------------------------------------------ */
/* Backends                                                            */
/* ------------------------------------------------------------------ */

enum secretmem_backend {
	SECRETMEM_BACKEND_NONE = 0,     /* nothing usable (creation fails)      */
	SECRETMEM_BACKEND_SECRET = 1,   /* memfd_secret(2): out of the direct map */
	SECRETMEM_BACKEND_FALLBACK = 2, /* private anonymous memory, mlock(2)ed
	                                   and MADV_DONTDUMP: kept out of swap and
	                                   core dumps, but readable by root       */
};

/*
 * secretmem_backend_name - "secret", "fallback" or "none" for a backend value;
 * "unknown" for anything else.  Never NULL.
 */
const char *secretmem_backend_name(int backend);

/*
 * secretmem_default_backend - the backend that new regions and allocations of
 * this process get: SECRETMEM_BACKEND_SECRET when secret memory is supported
 * (secretmem_supported(), re-checked after a seccomp change), else
 * SECRETMEM_BACKEND_FALLBACK, or SECRETMEM_BACKEND_NONE when fallback is
 * forbidden (SECRETMEM_REQUIRE=1 or secretmem_set_require(1)).  When secret
 * memory stops working after it was used (a filter installed later), the
 * library prints one warning as the fallback starts being used.
 */
int secretmem_default_backend(void);

/*
 * secretmem_set_require - forbid (1) or allow (0) the fallback backend for the
 * whole process, overriding the SECRETMEM_REQUIRE environment variable.
 * From the call on, no new region and no new block is placed in fallback
 * memory, including fallback memory that already exists (its live blocks
 * stay where they are).  Returns 0, or -EINVAL for another value.
 */
int secretmem_set_require(int require);

/* ------------------------------------------------------------------ */
/* Secret regions: page-granular, with guard pages                     */
/* ------------------------------------------------------------------ */

/* Flags for secretmem_region_create(). */
#define SECRETMEM_REGION_REQUIRE_SECRET 0x1u /* never use the fallback backend */

/* Access modes for secretmem_region_protect(). */
enum secretmem_access {
	SECRETMEM_NOACCESS = 0,
	SECRETMEM_READONLY = 1,
	SECRETMEM_READWRITE = 2,
};

struct secretmem_region; /* opaque; its bookkeeping is in ordinary memory */

/*
 * secretmem_region_create - map size bytes (rounded up to whole pages) of
 * secret memory, readable and writable, zero-filled, every page already
 * faulted in (so a later touch can never raise SIGBUS), between two
 * inaccessible guard pages that are anonymous PROT_NONE reservations (they
 * cost no locked memory).  No file descriptor stays open.
 * flags: 0 or SECRETMEM_REGION_REQUIRE_SECRET.
 * Returns the region, or NULL with errno: EINVAL (size 0, unknown flag,
 * overflow), ENOMEM (out of memory or at the memory-lock limit, in either
 * kernel regime), ENOSYS/EPERM (secret memory unavailable and fallback
 * forbidden by the flag, SECRETMEM_REQUIRE=1 or secretmem_set_require()),
 * EMFILE/ENFILE (no file descriptor for the secret memory file).
 */
struct secretmem_region *secretmem_region_create(size_t size, unsigned int flags) SECRETMEM_WARN_UNUSED;

/* secretmem_region_data - the first usable byte (page aligned). */
void *secretmem_region_data(const struct secretmem_region *region);

/* secretmem_region_size - the usable size in bytes (a multiple of the page size). */
size_t secretmem_region_size(const struct secretmem_region *region);

/* secretmem_region_backend - SECRETMEM_BACKEND_SECRET or _FALLBACK. */
int secretmem_region_backend(const struct secretmem_region *region);

/*
 * secretmem_region_protect - set the access of the whole region to one of
 * enum secretmem_access.  Returns 0, -EINVAL for a bad mode or NULL region,
 * or -errno from mprotect(2).
 */
int secretmem_region_protect(struct secretmem_region *region, int access) SECRETMEM_WARN_UNUSED;

/*
 * secretmem_region_destroy - zeroize the region (whatever its access mode),
 * unmap it with its guard pages and free the handle.  NULL is a no-op.
 * Returns 0, or -errno if the kernel refused a step; the handle is freed and
 * the mapping released in every case.
 */
int secretmem_region_destroy(struct secretmem_region *region);

/* ------------------------------------------------------------------ */
/* Allocator                                                           */
/* ------------------------------------------------------------------ */

/*
 * secretmem_malloc - a block of at least size bytes in secret memory, zero
 * filled.  Blocks of up to 16 KiB are packed many per page; larger ones get
 * their own page run between guard pages, placed so that the end of the
 * block touches the upper guard page.  Alignment: 16 bytes, except blocks
 * whose size class is not a multiple of 16, which get the largest power of
 * two dividing their class size (enough for any object of that size).
 * malloc(0) returns a unique minimal block.  Returns NULL with errno ENOMEM
 * when memory or the memory-lock limit is exhausted (never SIGBUS), ENOSYS or
 * EPERM when secret memory is unavailable and fallback is forbidden.
 */
void *secretmem_malloc(size_t size)
	SECRETMEM_MALLOC SECRETMEM_DEALLOC SECRETMEM_ALLOC_SIZE(1) SECRETMEM_WARN_UNUSED;

/* secretmem_calloc - nmemb * size bytes, zeroed; NULL/ENOMEM on overflow. */
void *secretmem_calloc(size_t nmemb, size_t size)
	SECRETMEM_MALLOC SECRETMEM_DEALLOC SECRETMEM_ALLOC_SIZE(1, 2) SECRETMEM_WARN_UNUSED;

/*
 * secretmem_realloc - resize ptr to size bytes, keeping the contents up to the
 * smaller size.  When the block moves, the old block is zeroized and freed.
 * ptr NULL acts as secretmem_malloc(size); size 0 frees ptr and returns NULL
 * (errno is left alone).  On failure returns NULL with errno ENOMEM (or
 * ENOSYS/EPERM when a new block was needed and, as for secretmem_malloc,
 * secret memory is refused with the fallback forbidden) and ptr is untouched.
 * A pointer that this allocator did not hand out is fatal.
 */
void *secretmem_realloc(void *ptr, size_t size)
	SECRETMEM_DEALLOC SECRETMEM_ALLOC_SIZE(2) SECRETMEM_WARN_UNUSED;

/*
 * secretmem_free - zeroize and release a block.  NULL is a no-op.  A double
 * free, a pointer this allocator does not own, or a pointer into the middle of
 * a block is fatal: a fixed message on stderr, then abort().
 */
void secretmem_free(void *ptr);

/*
 * secretmem_strdup - a copy of s in secret memory; NULL/ENOMEM.
 * This copy, secretmem_strndup's and secretmem_realloc's read and write the
 * data with general-purpose registers only (no SIMD register keeps it for a
 * signal frame or a core dump to write out); the program's own copies are
 * its business.
 */
char *secretmem_strdup(const char *s)
	SECRETMEM_MALLOC SECRETMEM_DEALLOC SECRETMEM_NONNULL(1) SECRETMEM_WARN_UNUSED;

/* secretmem_strndup - a copy of at most n bytes of s, NUL-terminated. */
char *secretmem_strndup(const char *s, size_t n)
	SECRETMEM_MALLOC SECRETMEM_DEALLOC SECRETMEM_NONNULL(1) SECRETMEM_WARN_UNUSED;

/*
 * secretmem_usable_size - the number of usable bytes of a live block
 * (>= the size requested).  0 for NULL.  Fatal for a pointer not owned.
 */
size_t secretmem_usable_size(const void *ptr);

/*
 * secretmem_owns - 1 if ptr is the start of a live block of this allocator,
 * 0 otherwise (including NULL and pointers into the middle of a block).
 * Never fatal; meant to route frees in code that mixes allocators.
 */
int secretmem_owns(const void *ptr);

/*
 * secretmem_trim - give back to the kernel every secret page that holds no
 * live block (whole empty chunks, cached large runs, the unused memory of
 * this thread's cache).  Returns the number of bytes released (>= 0), or
 * -errno.
 */
long secretmem_trim(void);

/* Why secret memory could not be had: secretmem_stats().last_failure. */
enum secretmem_failure {
	SECRETMEM_FAILURE_NONE = 0,    /* no failure so far                       */
	SECRETMEM_FAILURE_MEMLOCK = 1, /* the memory-lock limit (RLIMIT_MEMLOCK)  */
	SECRETMEM_FAILURE_NOMEM = 2,   /* out of memory or address space          */
	SECRETMEM_FAILURE_NOSYS = 3,   /* no secret memory in this kernel (ENOSYS) */
	SECRETMEM_FAILURE_SANDBOX = 4, /* a seccomp filter or LSM refused the call,
	                                  or a filter would have killed it (EPERM) */
	SECRETMEM_FAILURE_FDS = 5,     /* no file descriptor (EMFILE, ENFILE)     */
};

/*
 * Statistics, filled by secretmem_stats().  The allocator's figures
 * (bytes_mapped, pages_*, regions*) count its own mappings: chunks and large
 * blocks.  Regions made by secretmem_region_create() are in api_regions and
 * api_region_bytes.  Everything the process holds through the library, by
 * backend: secret_bytes + fallback_bytes = bytes_mapped + api_region_bytes
 * when no other thread creates or destroys a mapping meanwhile (the groups
 * of figures are read one after the other), and except in a fork child whose
 * secrets were dropped (policy drop, or a failed copy): there secret_bytes and
 * the api_region figures still count the dropped, inaccessible regions.
 */
struct secretmem_stats {
	size_t bytes_in_use;       /* sum of usable sizes of live blocks        */
	size_t live_allocations;   /* live blocks                               */
	size_t bytes_mapped;       /* allocator bytes mapped (secret or fallback,
	                              without guard pages)                      */
	size_t pages_mapped;       /* allocator pages mapped                    */
	size_t pages_faulted;      /* pages made ready for blocks, over the
	                              lifetime: faulted in, or (mmap-time
	                              regime) left to their first touch      */
	size_t pages_released;     /* pages given back, over the lifetime       */
	size_t regions;            /* allocator mappings (chunks and large
	                              blocks) now; not secretmem_region_create  */
	size_t regions_created;    /* allocator mappings created, lifetime      */
	int backend;               /* enum secretmem_backend of new memory now
	                              (re-checked when the seccomp state changed) */
	int memlock_unlimited;     /* 1 if RLIMIT_MEMLOCK is infinite or the
	                              process has CAP_IPC_LOCK                  */
	size_t memlock_limit;      /* RLIMIT_MEMLOCK soft limit, bytes          */
	size_t memlock_left;       /* limit minus locked memory of the process;
	                              SIZE_MAX when unlimited                   */
	/* since 1.1 (were reserved, zero, in 1.0) */
	size_t secret_bytes;       /* bytes held in secret memory (memfd_secret):
	                              allocator mappings and regions            */
	size_t fallback_bytes;     /* bytes held in fallback memory (readable by
	                              root): allocator mappings and regions     */
	size_t api_regions;        /* live regions of secretmem_region_create   */
	size_t api_region_bytes;   /* their usable bytes                        */
	size_t last_failure;       /* enum secretmem_failure: why the last
	                              request could not get secret memory (it
	                              then failed, or got fallback memory)      */
	size_t last_failure_bytes; /* the size that request asked for           */
	size_t memlock_locked;     /* bytes locked by the process now (VmLck);
	                              0 when unlimited                          */
	size_t reserved[1];        /* zero; room to grow without a new soname   */
};

/*
 * secretmem_stats - fill *st with a snapshot of the allocator and regions
 * (each group of figures is consistent in itself; see the struct's comment).
 * Returns 0, or -EINVAL for NULL.
 */
int secretmem_stats(struct secretmem_stats *st);

/* Options; each can also be set by the environment variable in brackets. */
enum secretmem_option {
	SECRETMEM_OPT_RESERVE = 1,      /* [SECRETMEM_RESERVE] bytes faulted in at
	                                   first use (suffix k, m, g allowed)      */
	SECRETMEM_OPT_FORK = 2,         /* [SECRETMEM_FORK] a secretmem_fork_policy */
	SECRETMEM_OPT_RELEASE_IDLE = 3, /* [SECRETMEM_RELEASE_IDLE] 0/1: release
	                                   every secret mapping when the last block
	                                   is freed                                */
	SECRETMEM_OPT_REQUIRE = 4,      /* [SECRETMEM_REQUIRE] 0/1: no fallback    */
};

enum secretmem_fork_policy {
	SECRETMEM_FORK_COPY = 0,  /* default: child gets private copies          */
	SECRETMEM_FORK_SHARE = 1, /* child shares the pages (and the slots!);
	                             fallback memory stays private            */
	SECRETMEM_FORK_DROP = 2,  /* child has no secret mappings, empty heap    */
};

/*
 * secretmem_set_option - set an option before the allocator's first use.
 * Returns 0; -EINVAL for an unknown option or bad value; -EBUSY once the
 * allocator is in use (RESERVE and RELEASE_IDLE) - FORK and REQUIRE can be
 * changed at any time.  Values set here win over the environment.
 */
int secretmem_set_option(int option, long value);

/* secretmem_get_option - the value in force (>= 0), or -EINVAL. */
long secretmem_get_option(int option);

/* ------------------------------------------------------------------ */
/* Helpers (since 1.1, version node SECRETMEM_1.1)                     */
/* ------------------------------------------------------------------ */

/*
 * secretmem_memzero - set len bytes at ptr to zero, in a way the compiler
 * cannot remove as a dead store (unlike memset before free or return).  Works
 * on any memory.  ptr may be NULL only when len is 0 (then a no-op).
 * Replaces sodium_memzero and OPENSSL_cleanse.
 */
void secretmem_memzero(void *ptr, size_t len);

/*
 * secretmem_memeq - compare len bytes at a and b in a time that depends on
 * len only, never on the contents or on where they differ.  Returns 1 when
 * they are EQUAL, 0 when they differ - note: the opposite sense of memcmp,
 * sodium_memcmp and CRYPTO_memcmp, which return 0 for equal.  len 0 gives 1;
 * a and b may be NULL only when len is 0.
 */
int secretmem_memeq(const void *a, const void *b, size_t len) SECRETMEM_WARN_UNUSED;

/*
 * secretmem_version - the version of the library that is running, such as
 * "1.1.0" (SECRETMEM_VERSION_STRING is the version of the header compiled
 * against).  Never NULL; a static string.
 */
const char *secretmem_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SECRETMEM_H */
