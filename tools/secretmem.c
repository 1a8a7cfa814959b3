/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * secretmem - command-line tool: `secretmem check` (can programs use secret
 * memory here, and does the kernel behave as documented?) and `secretmem
 * status` (which processes hold secret memory, and so block hibernation).
 * See secretmem(1).  Uses libsecretmem only through include/secretmem.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "secretmem.h"
#include "cli.h"

static void usage(FILE *out)
{
	fputs("usage: secretmem [--help] [--version] COMMAND [OPTIONS]\n"
	      "\n"
	      "Commands:\n"
	      "  check [--json] [--case NAME]...\n"
	      "                   is secret memory (memfd_secret) usable here, and does the\n"
	      "                   kernel behave as documented? Runs the conformance cases.\n"
	      "  status [--json] [--quiet] [--prometheus FILE]\n"
	      "                   why can't this machine hibernate: the processes that hold\n"
	      "                   secret memory, for people, scripts and monitoring\n"
	      "  exec [--mode M] -- PROGRAM [ARGS...]\n"
	      "                   run a program with libsecretmem's preload module\n"
	      "  help             show this text\n"
	      "\n"
	      "Exit status of check: 0 usable and no case failed, 1 a case failed,\n"
	      "2 secret memory not usable here, 3 memory-lock limit too small; of\n"
	      "status --quiet: 0 none, 1 held, 2 not every process seen; 64 usage error.\n"
	      "See secretmem(1).\n",
	      out);
}

/*
 * The `exec` subcommand lives in exec.c when it is built; this weak default
 * answers when it is not.
 */
__attribute__((weak)) int cmd_exec(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("secretmem: exec: not built in this version\n", stderr);
	return CLI_EXIT_UNAVAILABLE;
}

/* rc, or CLI_EXIT_IOERR when the output could not be written (a full
 * disk would leave a truncated report behind an exit status of success). */
static int written(int rc)
{
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		/* an earlier write's error: its cause is gone */
		fprintf(stderr, "secretmem: cannot write the output%s%s\n", errno ? ": " : "",
			errno ? strerror(errno) : "");
		return CLI_EXIT_IOERR;
	}
	return rc;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	cmd = argv[1];
	int info = strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0 ||
		   strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0;
	if (info && argc > 2) {
		/* `secretmem --version --bogus` is a usage error, as
		 * secretmem(1) says of any unknown argument */
		fprintf(stderr, "secretmem: %s: unexpected argument '%s'\n", cmd, argv[2]);
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return written(CLI_EXIT_OK);
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
		printf("secretmem %s\n", secretmem_version());
		return written(CLI_EXIT_OK);
	}
	if (strcmp(cmd, "check") == 0)
		return written(cmd_check(argc - 1, argv + 1));
	if (strcmp(cmd, "status") == 0)
		return written(cmd_status(argc - 1, argv + 1));
	if (strcmp(cmd, "exec") == 0)
		return written(cmd_exec(argc - 1, argv + 1)); /* --help, or a failure */
	if (strcmp(cmd, "internal-probe-fd") == 0)
		return cmd_probe_fd(argc - 1, argv + 1);
	fprintf(stderr, "secretmem: unknown command '%s'\n", cmd);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
