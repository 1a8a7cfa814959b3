/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * region.c - keep one secret in a secret memory region.
 *
 *   region          generate a 256-bit key with getrandom(2)
 *   region -        read a password from standard input (no echo on a terminal)
 *
 * The secret goes straight from the kernel into secret memory: read(2) and
 * getrandom(2) copy into the region, with no stdio buffer or stack copy on
 * the way.  The region is then made read-only while it is used, and
 * inaccessible while it is idle, and destroyed (zeroed, unmapped) at the end.
 *
 * Build: cc region.c $(pkg-config --cflags --libs secretmem)
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <termios.h>
#include <unistd.h>
#include <secretmem.h>

#define KEY_LEN 32
#define MAX_PASSWORD 1024

/* Fill buf with len random bytes; 0 or -errno. */
static int generate_key(unsigned char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = getrandom(buf + done, len - done, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

/*
 * Read one line (without its newline) from fd into buf, at most cap - 1 bytes,
 * NUL-terminated.  Byte by byte, so nothing past the line is consumed and no
 * copy is left anywhere but in buf.  Returns the length or -errno.
 */
static ssize_t read_line(int fd, char *buf, size_t cap)
{
	size_t len = 0;

	while (len < cap - 1) {
		ssize_t n = read(fd, buf + len, 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0 || buf[len] == '\n')
			break;
		len++;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

/* Read a password from standard input, turning echo off on a terminal. */
static ssize_t read_password(char *buf, size_t cap)
{
	struct termios old, quiet;
	int tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;

	if (tty) {
		fputs("password: ", stderr);
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	}
	ssize_t len = read_line(STDIN_FILENO, buf, cap);
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	return len;
}

/*
 * "Use" the secret without revealing it: a stand-in for deriving a key,
 * signing or decrypting.  Here: count the character classes of a password,
 * or check that a key is not all zero.
 */
static void use_password(const char *pw, size_t len)
{
	int lower = 0, upper = 0, digit = 0, other = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)pw[i];
		if (c >= 'a' && c <= 'z')
			lower = 1;
		else if (c >= 'A' && c <= 'Z')
			upper = 1;
		else if (c >= '0' && c <= '9')
			digit = 1;
		else
			other = 1;
	}
	printf("password: %zu characters, %d character classes%s\n", len,
	       lower + upper + digit + other, len < 12 ? " (short)" : "");
}

static void use_key(const unsigned char *key, size_t len)
{
	unsigned char acc = 0;

	for (size_t i = 0; i < len; i++)
		acc |= key[i];
	printf("key: %zu random bytes%s\n", len, acc ? "" : " (all zero?!)");
}

int main(int argc, char **argv)
{
	int want_password = argc > 1 && strcmp(argv[1], "-") == 0;

	if (argc > 2 || (argc == 2 && !want_password)) {
		fprintf(stderr, "usage: %s [-]\n", argv[0]);
		return 64;
	}

	int rc = secretmem_supported();
	if (rc != 0)
		fprintf(stderr, "note: no secret memory here (%s)\n", strerror(-rc));

	/* Rounded up to a page; zero-filled; every page already faulted in. */
	struct secretmem_region *r = secretmem_region_create(MAX_PASSWORD, 0);
	if (!r) {
		perror("secretmem_region_create");
		return 1;
	}
	unsigned char *data = secretmem_region_data(r);
	printf("region: %zu bytes at %p, backend %s\n", secretmem_region_size(r),
	       (void *)data, secretmem_backend_name(secretmem_region_backend(r)));
	if (secretmem_region_backend(r) != SECRETMEM_BACKEND_SECRET)
		fprintf(stderr, "warning: fallback backend: root can read this memory\n");

	ssize_t len = 0;
	if (want_password) {
		len = read_password((char *)data, MAX_PASSWORD);
		if (len < 0)
			fprintf(stderr, "read: %s\n", strerror((int)-len));
	} else {
		rc = generate_key(data, KEY_LEN);
		if (rc < 0)
			fprintf(stderr, "getrandom: %s\n", strerror(-rc));
		len = rc < 0 ? rc : KEY_LEN;
	}
	if (len < 0) {
		secretmem_region_destroy(r);
		return 1;
	}

	/* Read-only while in use: a stray write now faults instead of
	 * corrupting the secret. */
	rc = secretmem_region_protect(r, SECRETMEM_READONLY);
	if (rc)
		fprintf(stderr, "protect: %s\n", strerror(-rc));
	if (want_password)
		use_password((const char *)data, (size_t)len);
	else
		use_key(data, (size_t)len);

	/* No access while idle: even a bug in this process that reads the
	 * region now faults. */
	rc = secretmem_region_protect(r, SECRETMEM_NOACCESS);
	if (rc)
		fprintf(stderr, "protect: %s\n", strerror(-rc));

	/* Zeroed (whatever the access mode), unmapped with its guard pages. */
	rc = secretmem_region_destroy(r);
	if (rc) {
		fprintf(stderr, "destroy: %s\n", strerror(-rc));
		return 1;
	}
	return 0;
}
