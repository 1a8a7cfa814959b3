/*
 * alloc.c - the public allocator API and the library's fork handling.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include "internal.h"

static void fork_prepare(void)
{
	region_fork_prepare();
}

static void fork_parent(void)
{
	region_fork_parent();
}

static void fork_child(void)
{
	region_fork_child((int)sm_option(SECRETMEM_OPT_FORK));
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void install_fork_handlers(void)
{
	sm_option(SECRETMEM_OPT_FORK); /* read the environment outside fork */
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void sm_fork_handlers_install(void)
{
	pthread_once(&fork_once, install_fork_handlers);
}
