/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_hibernation.c - the hibernation line of `secretmem status` and the
 * hibernation case of `secretmem check` match /sys/power/state: where the
 * machine cannot hibernate at all (no "disk" and no /sys/power/disk) both say
 * so (status: "not supported", check: SKIP); where it can, a process holding
 * only a secretmem fd removes "disk" and status says "blocked by N".
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include "secretmem.h"
#include "cli_run.h"

static int has_disk(void)
{
	char buf[256] = "";
	int fd = open("/sys/power/state", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	for (char *t = strtok(buf, " \n"); t; t = strtok(NULL, " \n"))
		if (strcmp(t, "disk") == 0)
			return 1;
	return 0;
}

static const char *hib_line(char *out)
{
	char *p = strstr(out, "\nhibernation: ");
	TL_CHECK(p != NULL, "no hibernation line in:\n%s", out);
	p++;
	char *nl = strchr(p, '\n');
	if (nl)
		*nl = '\0';
	return p;
}

int main(void)
{
	static char out[1 << 20];
	char *status[] = { NULL, "status", NULL };
	char *check[] = { NULL, "check", NULL };
	int supported = access("/sys/power/disk", F_OK) == 0, st, p[2];
	char c;

	tl_need_secretmem();

	/* a process holding only an fd: hibernation must be off while it lives */
	if (pipe(p) != 0)
		TL_FAIL("pipe");
	pid_t holder = fork();
	if (holder == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		c = secretmem_memfd(0) >= 0 ? 'f' : 'x';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	if (read(p[0], &c, 1) != 1 || c != 'f')
		TL_FAIL("the holder could not create a secretmem fd");
	int disk = has_disk();
	st = run_cli(status, out, sizeof(out), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status: %s", tl_status_str(st));
	const char *line = hib_line(out);
	printf("with a holder: /sys/power/state %s disk, /sys/power/disk %s; %s\n",
	       disk ? "has" : "lacks", supported ? "present" : "absent", line);
	TL_CHECK(!disk, "/sys/power/state offers disk while a secretmem file exists");
	if (supported)
		TL_CHECK(strncmp(line, "hibernation: blocked by ", 24) == 0, "wrong line: %s", line);
	else
		TL_CHECK(strncmp(line, "hibernation: not supported on this machine", 42) == 0,
			 "wrong line: %s", line);
	kill(holder, SIGKILL);
	waitpid(holder, &st, 0);

	/* without our holder: available, or as the state says */
	disk = has_disk();
	st = run_cli(status, out, sizeof(out), 0, NULL);
	line = hib_line(out);
	printf("without: /sys/power/state %s disk; %s\n", disk ? "has" : "lacks", line);
	if (disk)
		TL_CHECK(strcmp(line, "hibernation: available") == 0, "wrong line: %s", line);
	else if (!supported)
		TL_CHECK(strncmp(line, "hibernation: not supported on this machine", 42) == 0,
			 "wrong line: %s", line);
	else
		TL_CHECK(strncmp(line, "hibernation: blocked by ", 24) == 0 ||
			 strncmp(line, "hibernation: unavailable", 24) == 0, "wrong line: %s", line);

	/* the check case: SKIP saying why where there is no hibernation */
	st = run_cli(check, out, sizeof(out), 0, NULL);
	char *c_line = strstr(out, "\nhibernation       ");
	TL_CHECK(c_line != NULL, "check lists no hibernation case");
	c_line++;
	*strchr(c_line, '\n') = '\0';
	printf("%s\n", c_line);
	if (!supported && !disk)
		TL_CHECK(strstr(c_line, " SKIP ") && strstr(c_line, "no hibernation support"),
			 "check: %s", c_line);
	else if (disk)
		TL_CHECK(strstr(c_line, " PASS ") != NULL, "check: %s", c_line);
	else
		TL_CHECK(strstr(c_line, " SKIP ") != NULL, "check: %s", c_line);
	return TL_PASS;
}
