/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * options.c - one table of options, read once from SECRETMEM_* environment
 * variables.  Switches accept 1/0, yes/no, true/false, on/off (any case).
 * An invalid value prints one warning that lists the valid values and then
 * takes the value the table says: the default, except for a switch that
 * protects (SECRETMEM_REQUIRE), where a typo takes the safe side (1).
 * SECRETMEM_FORK=junk takes copy, the default: the parent's pages are never
 * written by the child (share, the one unsafe policy, must be spelled out).
 * Values set through secretmem_set_option() win over the environment.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "internal.h"

struct option_def {
	int id;
	const char *env;
	long def;
	long max;
	int frozen_after_init; /* cannot change once the allocator is in use */
	const char *const *names; /* symbolic values (index = value), or NULL */
	int is_switch;         /* 0/1 with the usual spellings */
	long on_invalid;       /* the value an invalid setting takes */
	const char *warning;   /* ", valid: ...; using ..." */
};

static const char *const fork_names[] = { "copy", "share", "drop", NULL };

#define SWITCH_VALUES "1, 0, yes, no, true, false, on, off"

static const struct option_def defs[] = {
	{ SECRETMEM_OPT_RESERVE, "SECRETMEM_RESERVE", 0, 1L << 40, 1, NULL, 0, 0,
	  " (valid: a byte count with an optional k, m or g suffix), using the default 0" },
	{ SECRETMEM_OPT_FORK, "SECRETMEM_FORK", SECRETMEM_FORK_COPY, SECRETMEM_FORK_DROP, 0, fork_names, 0,
	  SECRETMEM_FORK_COPY, " (valid: copy, share, drop), using the default copy" },
	{ SECRETMEM_OPT_RELEASE_IDLE, "SECRETMEM_RELEASE_IDLE", 0, 1, 1, NULL, 1, 0,
	  " (valid: " SWITCH_VALUES "), using the default 0" },
	{ SECRETMEM_OPT_REQUIRE, "SECRETMEM_REQUIRE", 0, 1, 0, NULL, 1, 1,
	  " (valid: " SWITCH_VALUES "), using 1, the safe side: no fallback memory" },
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

/* 1/0, yes/no, true/false, on/off in any case; -EINVAL otherwise. */
static int parse_switch(const char *s, long *out)
{
	static const char *const on[] = { "1", "yes", "true", "on" };
	static const char *const off[] = { "0", "no", "false", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, on[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, off[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_value(const struct option_def *d, const char *s, long *out)
{
	if (d->is_switch)
		return parse_switch(s, out);
	if (d->names) {
		for (long i = 0; d->names[i]; i++) {
			if (strcasecmp(s, d->names[i]) == 0) {
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

		if (s && *s && parse_value(d, s, &v)) { /* empty: unset */
			sm_warn("invalid value of ", d->env, d->warning);
			v = d->on_invalid;
		}
		if (!atomic_load(&set_by_api[i]))
			atomic_store(&values[i], v);
	}
}

int sm_env_switch(const char *name)
{
	const char *s = getenv(name);
	long v = 0;

	if (s && *s && parse_switch(s, &v)) {
		sm_warn("invalid value of ", name, " (valid: " SWITCH_VALUES "), using the default 0");
		return 0;
	}
	return (int)v;
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
