/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heap_keyholder FD wait|abort - a program that keeps a key the way most
 * programs do: a random 32-byte key in a malloc()ed buffer, its hex text in
 * another and a strdup() of that.  The key goes to file descriptor FD (the
 * test's pipe: no copy in this process's ordinary memory), "ready" to
 * stdout; then it waits for a signal, or aborts (a core dump).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static const char digits[] = "0123456789abcdef";

	if (argc != 3)
		return 64;
	int fd = atoi(argv[1]);
	unsigned char *key = malloc(32);
	char *hex = malloc(65);
	if (!key || !hex || getrandom(key, 32, 0) != 32)
		return 1;
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = digits[key[i] >> 4];
		hex[2 * i + 1] = digits[key[i] & 15];
	}
	hex[64] = '\0';
	char *copy = strdup(hex);
	if (!copy || write(fd, key, 32) != 32)
		return 1;
	close(fd);
	if (write(1, "ready\n", 6) != 6)
		return 1;
	if (strcmp(argv[2], "abort") == 0)
		abort();
	pause();
	free(copy);
	free(hex);
	free(key);
	return 0;
}
