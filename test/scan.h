/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * scan.h - an attacker's view of a process: find private key material in
 * every readable region of another process (/proc/PID/maps + /proc/PID/mem)
 * or in a file (a core dump).  Used by the preload tests (t_preload_*).
 *
 * The key material of a PEM private key is read with `openssl pkey -text`:
 * RSA d, p, q, dP, dQ, qInv, each searched big-endian (as in DER) and
 * little-endian (OpenSSL's BIGNUM limbs on a little-endian machine: the
 * byte-reversed number), the raw 32-byte Ed25519 private key, and the text
 * of the PEM file (whose base64 encodes all of it).  Each
 * number is searched as 32-byte fragments, so a partial copy is found too.
 */
#ifndef SECRETMEM_SCAN_H
#define SECRETMEM_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SCAN_MAX_NEEDLES 16
#define SCAN_FRAG 32

struct scan_needle {
	char name[24];        /* "d(be)", "p(le)", "ed25519", ...            */
	char group[12];       /* the number: "d", "p", "ed25519", ...        */
	unsigned char *bytes;
	size_t len;
	int required;         /* must be found by a control scan             */
};

struct scan_key {
	struct scan_needle needle[SCAN_MAX_NEEDLES];
	int count;
};

/*
 * Read the private numbers of the PEM key at path (runs `openssl pkey`).
 * Returns 0, or -1 with a message on stderr.
 */
int scan_key_load(struct scan_key *key, const char *path);
void scan_key_free(struct scan_key *key);
/* Add a needle: len >= 8 bytes (reversed if reverse), named name, in group
 * (a number's needles share one); required: the control must find it.
 * 0, or -1 (full, too short, no memory). */
int scan_key_add(struct scan_key *key, const char *name, const char *group, int required,
		 const unsigned char *bytes, size_t len, int reverse);

/* One copy of (part of) a needle: the fragments found at one place. */
struct scan_copy {
	int needle;
	uint64_t start;       /* address (or file offset) of the needle's
	                         first byte, as implied by the fragments   */
	int fragments;        /* fragments found there                     */
	char where[160];      /* mapping: "7f..-7f.. rw-p [heap] +0x12c0"  */
	unsigned char before[8]; /* the 8 bytes before the start, if read */
	int have_before;
};

struct scan_result {
	struct scan_copy *copy;
	int count, cap;
	size_t regions;        /* readable regions scanned               */
	size_t bytes;          /* bytes scanned                          */
	size_t unreadable;     /* regions whose read failed (EIO: secret memory) */
	size_t secret_regions; /* mappings named /secretmem              */
	size_t skipped;        /* regions over 64 GiB, not read (ASan's shadow) */
};

/*
 * Scan every readable mapping of pid.  label prefixes each printed hit
 * (NULL: print nothing).  Returns the number of copies found (>= 0), or -1
 * when the process could not be read at all.
 */
int scan_pid(const struct scan_key *key, pid_t pid, struct scan_result *res, const char *label);
/* Scan a file (a core dump) the same way. */
int scan_file(const struct scan_key *key, const char *path, struct scan_result *res, const char *label);
void scan_result_free(struct scan_result *res);
/* Copies of needle number i (or any needle with i < 0). */
int scan_found(const struct scan_result *res, int i);
/*
 * For a control scan: 0 when every required number (RSA d, p, q; the Ed25519
 * key) was found in at least one byte order, else -1 with the missing ones
 * printed to stderr.
 */
int scan_all_required_found(const struct scan_key *key, const struct scan_result *res);
/* Print a summary line per needle to stderr. */
void scan_report(const struct scan_key *key, const struct scan_result *res, const char *label);

/* ---- scan_rig.c: the processes of the preload tests ------------------- */

/*
 * Every process started here runs in its own process group and is killed
 * (group and all) when the test exits - normally, through TL_FAIL, or on
 * SIGTERM/SIGINT (the runner's timeout).  The temporary directory goes too.
 */

/* A fresh temporary directory, removed at exit. */
const char *rig_tmpdir(void);
/* Skip the test (77) unless prog is found in PATH (or is an absolute path). */
void rig_need(const char *prog);
/* Absolute path of the built preload module; skips the test if missing. */
const char *rig_preload(void);
/*
 * The path of the sanitizer runtime (libasan, libtsan) when the module was
 * built with SANITIZE=address or thread (it must then come first in
 * LD_PRELOAD of uninstrumented programs such as openssl), else NULL.
 */
const char *rig_preload_sanitizer(void);
/* Skip the test (77) when the module was built with ThreadSanitizer. */
void rig_skip_if_tsan(void);
/* The LD_PRELOAD value that loads the module (with the sanitizer runtime
 * first when needed). */
const char *rig_ld_preload(void);
/* Run a shell command (sh -c); returns its exit status (0 = success). */
int rig_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A free TCP port on 127.0.0.1. */
int rig_free_port(void);
/*
 * Start argv[0] (PATH search) in a new process group, with env: extra
 * "NAME=value" entries (NULL-terminated, may be NULL) added to or replacing
 * the environment; stdin from /dev/null, stdout and stderr to logpath.
 * cwd: working directory (NULL: unchanged).  core: 1 to allow core dumps.
 */
pid_t rig_spawn(char *const argv[], const char *const env[], const char *logpath, const char *cwd, int core);
/* rig_spawn() in the temporary directory, without CAP_IPC_LOCK and with
 * RLIMIT_MEMLOCK set to memlock bytes. */
pid_t rig_spawn_limited(char *const argv[], const char *const env[], const char *logpath, size_t memlock);
/* rig_spawn() with a fresh logpath, then wait (30 s at most) until the log
 * has a line "ready"; fails the test, with the log, when the process ends
 * or the time is up first. */
pid_t rig_spawn_ready(char *const argv[], const char *const env[], const char *logpath);
/* Wait until 127.0.0.1:port accepts connections: 0, or -1 after timeout_ms
 * or when pid (if > 0) has exited. */
int rig_wait_port(int port, pid_t pid, int timeout_ms);
/* Kill the process group of pid (SIGTERM, then SIGKILL) and reap pid. */
void rig_stop(pid_t pid);
/* Direct children of parent (from /proc/PID/task/PID/children). */
int rig_children(pid_t parent, pid_t *out, int max);
/* Print the file to stderr (indented). */
void rig_cat(const char *path);
/* 1 if the file contains the text. */
int rig_file_has(const char *path, const char *text);
/* Count the lines of the file that contain the text. */
int rig_file_count(const char *path, const char *text);
/* Sum of the Rss of the process's /secretmem mappings, in KiB (-1: unknown). */
long rig_secret_rss_kb(pid_t pid);

/* ---- OpenSSL helpers ---------------------------------------------------- */

/*
 * Generate a private key ("rsa": RSA-2048, "ed25519") and a self-signed
 * certificate for it in the temporary directory: <tmp>/<type>.key and
 * <tmp>/<type>.crt - once per type and test; later calls return the same.
 * Returns the key path; fails the test on error.
 */
const char *rig_make_key(const char *type);
/* The certificate path belonging to rig_make_key(type). */
const char *rig_cert(const char *type);
/*
 * Start `openssl s_server -www` with the key on a free port of 127.0.0.1.
 * mode: NULL (no preload) or a SECRETMEM_OPENSSL value; the preload is
 * then in LD_PRELOAD.  core: allow a core dump (cwd = temporary directory).
 * Waits until it accepts; fails the test if it does not.
 */
pid_t rig_s_server(const char *type, const char *mode, int *port, const char *log, int core);
/* The same without a preload, asking clients for a certificate issued by the
 * key's own certificate (-Verify 1), for client-key tests. */
pid_t rig_s_server_verify(const char *type, int *port, const char *log);
/* A full TLS handshake with `openssl s_client` and one HTTP request: 0 on
 * success (the server answered), -1 otherwise (output in log). */
int rig_s_client(int port, const char *log);
/* Environment entries for a mode (NULL: none), for rig_spawn(): LD_PRELOAD,
 * SECRETMEM_OPENSSL and, in an ASan build, ASAN_OPTIONS=detect_leaks=0 (the
 * programs under test are not ours to leak-check). */
const char *const *rig_env(const char *mode);
/*
 * Write a core dump of the running process pid with gcore to path (gdb
 * appends ".pid"; the real file name is returned in out).  0 or -1.
 */
int rig_gcore(pid_t pid, const char *path, char *out, size_t outlen);
/*
 * Dump the core of a real crash: SIGSEGV to pid (started with core = 1, in
 * the temporary directory), reap it, path of the core file into out.  0, or
 * -1 (with the reason on stderr) when core_pattern does not write a plain
 * file in the working directory.
 */
int rig_crash_core(pid_t pid, char *out, size_t outlen);
/*
 * The s_server proof for one key type ("rsa", "ed25519") and mode (NULL: no
 * preload; else SECRETMEM_OPENSSL): a fresh key, a real handshake, then a
 * scan of the server's memory, of gcore's dump and of the core file of a
 * real crash.  control: every scan must find every required number, else
 * the test fails.  Otherwise returns the number of copies found (0: clean)
 * after checking that the server used secret memory (modes secure and all).
 */
int rig_server_scan(const char *type, const char *mode, int control);

#endif
