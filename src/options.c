/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * options.c - one table of options, read once from SECRETMEM_* environment
 * variables; an invalid value prints a warning and keeps the default.
 * Values set through secretmem_set_option() win over the environment.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

struct option_def {
	int id;
	const char *env;
	long def;
	long max;
	int frozen_after_init; /* cannot change once the allocator is in use */
	const char *const *names; /* symbolic values (index = value), or NULL */
};

static const char *const fork_names[] = { "copy", "share", "drop", NULL };

static const struct option_def defs[] = {
	{ SECRETMEM_OPT_RESERVE, "SECRETMEM_RESERVE", 0, 1L << 40, 1, NULL },
	{ SECRETMEM_OPT_FORK, "SECRETMEM_FORK", SECRETMEM_FORK_COPY, SECRETMEM_FORK_DROP, 0, fork_names },
	{ SECRETMEM_OPT_RELEASE_IDLE, "SECRETMEM_RELEASE_IDLE", 0, 1, 1, NULL },
	{ SECRETMEM_OPT_REQUIRE, "SECRETMEM_REQUIRE", 0, 1, 0, NULL },
};
#define NDEFS (sizeof(defs) / sizeof(defs[0]))

static atomic_long values[NDEFS];
static atomic_int set_by_api[NDEFS];
static atomic_int frozen;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

int sm_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	int saved = errno;

	if (!s || *s < '0' || *s > '9') /* no sign, no blanks */
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	int overflow = errno == ERANGE;
	errno = saved;
	if (overflow)
		return -EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if ((*end == 'b' || *end == 'B') && shift)
		end++;
	if (*end != '\0')
		return -EINVAL;
	if (shift && v > (SIZE_MAX >> shift))
		return -EINVAL;
	*out = (size_t)(v << shift);
	return 0;
}

static int parse_value(const struct option_def *d, const char *s, long *out)
{
	if (d->names) {
		for (long i = 0; d->names[i]; i++) {
			if (strcmp(s, d->names[i]) == 0) {
				*out = i;
				return 0;
			}
		}
		return -EINVAL;
	}
	size_t v;
	if (sm_parse_size(s, &v) || v > (size_t)d->max)
		return -EINVAL;
	*out = (long)v;
	return 0;
}

static void read_env(void)
{
	for (size_t i = 0; i < NDEFS; i++) {
		const struct option_def *d = &defs[i];
		const char *s = secure_getenv(d->env);
		long v = d->def;

		if (s && *s && parse_value(d, s, &v)) {
			sm_warn("invalid value of ", d->env, ", using the default");
			v = d->def;
		}
		if (!atomic_load(&set_by_api[i]))
			atomic_store(&values[i], v);
	}
}

static const struct option_def *find(int id, size_t *idx)
{
	for (size_t i = 0; i < NDEFS; i++) {
		if (defs[i].id == id) {
			*idx = i;
			return &defs[i];
		}
	}
	return NULL;
}

long sm_option(int option)
{
	size_t i;

	pthread_once(&env_once, read_env);
	if (!find(option, &i))
		return -EINVAL;
	return atomic_load_explicit(&values[i], memory_order_relaxed);
}

void sm_options_freeze(void)
{
	pthread_once(&env_once, read_env);
	atomic_store(&frozen, 1);
}

SM_API int secretmem_set_option(int option, long value)
{
	size_t i;
	const struct option_def *d = find(option, &i);

	if (!d || value < 0 || value > d->max)
		return -EINVAL;
	pthread_once(&env_once, read_env);
	if (d->frozen_after_init && atomic_load(&frozen))
		return -EBUSY;
	atomic_store(&set_by_api[i], 1);
	atomic_store(&values[i], value);
	return 0;
}

SM_API long secretmem_get_option(int option)
{
	return sm_option(option);
}

SM_API int secretmem_set_require(int require)
{
	if (require != 0 && require != 1)
		return -EINVAL;
	return secretmem_set_option(SECRETMEM_OPT_REQUIRE, require);
}
