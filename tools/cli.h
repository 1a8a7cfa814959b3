/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * cli.h - shared declarations of the secretmem command-line tool.
 *
 * The tool uses libsecretmem only through include/secretmem.h.  The
 * conformance cases of `secretmem check` talk to the kernel directly (raw
 * system calls and libc), because their point is to check the kernel.
 */
#ifndef SECRETMEM_CLI_H
#define SECRETMEM_CLI_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit codes (sysexits.h values for the usage and system errors). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_CASE_FAILED 1
#define CLI_EXIT_NOT_USABLE 2
#define CLI_EXIT_MEMLOCK 3      /* check: memory-lock limit too small here */
/* status --quiet: nothing holds secret memory / something does / could not
 * inspect or see every process (hidepid, PID namespace, permission). */
#define CLI_EXIT_STATUS_NONE 0
#define CLI_EXIT_STATUS_HELD 1
#define CLI_EXIT_STATUS_INCOMPLETE 2
#define CLI_EXIT_USAGE 64
#define CLI_EXIT_UNAVAILABLE 69
#define CLI_EXIT_OSERR 71
#define CLI_EXIT_IOERR 74       /* the output could not be written */

/* memfd_secret(2) number: headers first, else 447 where the call is wired. */
#include <sys/syscall.h>
#if defined(SYS_memfd_secret)
#define CLI_NR_MEMFD_SECRET SYS_memfd_secret
#elif defined(__NR_memfd_secret)
#define CLI_NR_MEMFD_SECRET __NR_memfd_secret
#elif defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || \
	(defined(__riscv) && __riscv_xlen == 64) || defined(__s390x__) || defined(__loongarch__)
#define CLI_NR_MEMFD_SECRET 447
#endif

/* What /proc shows for a secretmem file (fd link target, maps path). */
#define CLI_SECRETMEM_NAME "/secretmem (deleted)"

/* Subcommands; argv[0] is the subcommand name. */
int cmd_check(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_exec(int argc, char **argv);
/* Internal helper of the `exec` case: exits with a bitmask of open fds. */
int cmd_probe_fd(int argc, char **argv);

/* ---- exec_alloc.c: another malloc preloaded (exec --mode heap) ---------- */
/* 1 when LD_PRELOAD or /etc/ld.so.preload loads a file that defines malloc
 * or free (one line naming it into why), else 0. */
int exec_other_allocator(char *why, size_t len);
/* 1 if the ELF file at path exports malloc or free (which: the name), 0 if
 * not, -1 when it is not an ELF file of this machine or cannot be read. */
int exec_defines_malloc(const char *path, const char **which);

/* ---- cases.c: the conformance cases of `secretmem check` --------------- */
/* INFO: a fact of the kernel reported as found, neither pass nor fail. */
enum case_verdict { CASE_PASS, CASE_FAIL, CASE_SKIP, CASE_INFO };

struct case_result {
	int verdict;        /* enum case_verdict */
	char reason[480];   /* one line */
};

struct check_case {
	const char *name;
	const char *checks; /* the kernel behaviour, one line */
	int (*fn)(struct case_result *r); /* runs in a child; returns r->verdict */
};

extern const struct check_case cli_cases[];
extern const size_t cli_ncases;
/* Call once before running cases (in the parent). */
void cli_cases_init(void);
/* size bytes of secret memory mapped shared read-write (fd closed); NULL+errno. */
unsigned char *cli_secret_map(size_t size);
/* VmFlags of the mapping of this process that holds addr; 0 or -errno. */
int cli_vmflags_of(const void *addr, char *flags, size_t size);

/* ---- fake.c: the kernel the cases talk to, real or fake ---------------- */
/*
 * SECRETMEM_CHECK_FAKE_KERNEL (read once with secure_getenv) replaces the
 * secret memory the cases create, for testing `check` itself:
 *   plain                    memfd_create(2) files: ordinary shared memory,
 *                            which every secrecy case must FAIL on;
 *   charge-at-touch          plain files plus a user-space model of the
 *                            fault-time memory-lock regime (commit
 *                            97d34aa65c29): no VM_LOCKED, each page charged
 *                            when first touched, SIGBUS (EFAULT from the
 *                            kernel side) past RLIMIT_MEMLOCK, the charge
 *                            held by the file's pages until they are freed;
 *   charge-at-touch-nosigbus the same model, but a touch past the limit works;
 *   charge-at-touch-uncharge the same model, but munmap drops the charge.
 * The verdict line of `check` names a fake kernel; it never passes as real.
 */
enum cli_fake {
	CLI_FAKE_NONE,
	CLI_FAKE_PLAIN,
	CLI_FAKE_TOUCH,
	CLI_FAKE_TOUCH_NOSIGBUS,
	CLI_FAKE_TOUCH_UNCHARGE,
	CLI_FAKE_INVALID,
};
/* The fake kernel selected by the environment (CLI_FAKE_NONE normally). */
int cli_fake_kernel(void);
/* A fresh model state for the case about to run (called in its child). */
void cli_fake_reset(void);
const char *cli_fake_name(int fake);
/* memfd_secret(2) (or its fake): an fd, or -1 with errno set. */
int cli_memfd_secret(unsigned int flags);
/* 1 if addr is in a mapping of a secretmem file (/proc/self/maps name),
 * 0 if not, -errno if unknown. */
int cli_is_secret_mapping(const void *addr);
/* The memory-lock model: 1 when mapping a secretmem file makes a VM_LOCKED
 * mapping (the mmap-time regime), 0 when not (fault-time), -errno unknown. */
int cli_mapping_locked(const void *addr);
/* Fault the page at p in from the kernel side (read(2) from /dev/zero):
 * 0, or -errno (EFAULT where the fault-time regime refuses the charge). */
int cli_kernel_fault(unsigned char *p, size_t len);
/* Touch (write) the page at p from user space: may raise SIGBUS. */
void cli_touch(unsigned char *p);
/* munmap(2), with the fake's accounting. */
int cli_unmap(void *p, size_t len);

/* ---- json.c: a small streaming JSON writer ---------------------------- */
#define JSON_MAX_DEPTH 16

struct json {
	FILE *out;
	int depth;
	int count[JSON_MAX_DEPTH]; /* members written at each depth */
};

void json_init(struct json *j, FILE *out);
/* key is the member name inside an object, NULL inside an array or at top. */
void json_object_begin(struct json *j, const char *key);
void json_object_end(struct json *j);
void json_array_begin(struct json *j, const char *key);
void json_array_end(struct json *j);
/* value NULL writes null */
void json_string(struct json *j, const char *key, const char *value);
void json_int(struct json *j, const char *key, long long value);
void json_uint(struct json *j, const char *key, unsigned long long value);
void json_bool(struct json *j, const char *key, int value);
void json_null(struct json *j, const char *key);
/* Ends the document with a newline. */
void json_finish(struct json *j);
/* Writes s as a JSON string literal (with quotes) - exposed for tests. */
void json_write_escaped(FILE *out, const char *s);

/* ---- util.c ------------------------------------------------------------ */
/* Reads a small file into buf (NUL-terminated, trailing newlines removed).
 * Returns the length, or -errno. */
ssize_t cli_read_file(const char *path, char *buf, size_t size);
/* "EINVAL" for EINVAL, ...; "errno N" for an unknown value (static buffer). */
const char *cli_errno_name(int err);
/* 1 if word occurs as a whitespace-separated word of s. */
int cli_has_word(const char *s, const char *word);
/* Seccomp mode of this process from /proc/self/status, -1 if unknown. */
int cli_seccomp_mode(void);
/* 1 if CAP_IPC_LOCK is in the effective set, 0 if not, -errno if unknown. */
int cli_has_cap_ipc_lock(void);
/* waitpid() retrying on EINTR: the wait status, or -1. */
int cli_wait(pid_t pid);
/* "exit 3", "signal 11 (Segmentation fault)" for a wait status (static buffer). */
const char *cli_status_text(int status);

/* "VmLck" of this process in bytes, or -errno. */
long long cli_vmlck(void);
/* 1 if capability cap is in the effective set, 0 if not, -errno. */
int cli_has_cap(int cap);
/* Hibernation state of the machine. */
enum cli_hibernation {
	CLI_HIBERNATION_AVAILABLE,     /* "disk" in /sys/power/state       */
	CLI_HIBERNATION_UNAVAILABLE,   /* supported (/sys/power/disk) but
	                                  "disk" missing from the state list */
	CLI_HIBERNATION_UNSUPPORTED,   /* neither: no hibernation here      */
};
int cli_hibernation(char *state, size_t state_size);
const char *cli_hibernation_name(int h);
/* "Function not implemented" style text plus the errno name. */
const char *cli_strerror(int err);

#endif
