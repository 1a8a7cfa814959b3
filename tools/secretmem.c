/*
 * secretmem - command-line tool.  Uses libsecretmem only through its public
 * API (include/secretmem.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include "secretmem.h"

static int cmd_check(void)
{
	int rc = secretmem_supported();
	int backend = secretmem_default_backend();

	if (rc == 0) {
		printf("secret memory: usable (backend %s)\n", secretmem_backend_name(backend));
		return 0;
	}
	printf("secret memory: not usable here: %s\n", strerror(-rc));
	printf("new regions use backend: %s\n", secretmem_backend_name(backend));
	return 2;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "check") == 0)
		return cmd_check();
	fprintf(stderr, "usage: secretmem check\n");
	return 64;
}
