/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * status_render.c - the renderers of `secretmem status`: text (a verdict on
 * hibernation, then the holders), JSON (secretmem(1) describes every
 * member) and the Prometheus text exposition for node_exporter's textfile
 * collector.
 *
 * Each renderer only reads the struct status_report that status_gather()
 * filled: nothing here looks at /proc or at this process.  Every text taken
 * from another process (its name, command line, environment, the reasons
 * its module pages give) is made safe for a terminal or a metrics file: it
 * can hold any byte; json.c escapes the JSON strings.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "secretmem.h"
#include "cli.h"
#include "status.h"

/* ---- rendering helpers ----------------------------------------------- */

/* A process name or command line made safe for a terminal: \xNN for control
 * and non-ASCII bytes and for the backslash (a name can hold escape
 * sequences). */
static const char *printable(const char *s, char *buf, size_t size)
{
	size_t used = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && used + 5 < size; p++) {
		if (*p < 0x20 || *p >= 0x7f || *p == '\\')
			used += (size_t)snprintf(buf + used, size - used, "\\x%02x", *p);
		else
			buf[used++] = (char)*p;
	}
	buf[used] = '\0';
	return buf;
}

/* The same, written to out, for texts of any length (a command line). */
static void put_printable(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p >= 0x7f || *p == '\\')
			fprintf(out, "\\x%02x", *p);
		else
			putc(*p, out);
	}
}

/* The hibernation state: name for JSON. */
static const char *hibernation_state(int h, size_t holders)
{
	if (h == CLI_HIBERNATION_UNSUPPORTED)
		return "not supported";
	if (h == CLI_HIBERNATION_AVAILABLE)
		return "available";
	return holders ? "blocked" : "unavailable";
}

/* What status can tell of libsecretmem in a process, from outside. */
static const char *lib_mode(const struct status_holder *h, char *buf, size_t size)
{
	const char *openssl = strstr(h->lib_env, "SECRETMEM_OPENSSL=");
	char mode[32] = "secure";

	if (openssl)
		snprintf(mode, sizeof(mode), "%.*s", (int)strcspn(openssl + 18, " "), openssl + 18);
	if (h->lib == STATUS_LIB_HEAP)
		snprintf(buf, size, "heap module (secretmem exec --mode heap)");
	else if (h->lib == STATUS_LIB_PRELOAD)
		snprintf(buf, size, "preload module (SECRETMEM_OPENSSL=%s%s)", mode,
			 openssl ? "" : " by default");
	else if (h->lib == STATUS_LIB_SHARED)
		snprintf(buf, size, "libsecretmem.so");
	else
		snprintf(buf, size, "not seen (static libsecretmem, or memfd_secret used directly)");
	return buf;
}

static const char *lib_key(const struct status_holder *h)
{
	return h->lib == STATUS_LIB_HEAP ? "heap" : h->lib == STATUS_LIB_PRELOAD ? "preload" :
	       h->lib == STATUS_LIB_SHARED ? "shared-library" : "not seen";
}

/* The heap module's figures in one line of text. */
/* 1 when the module is recent enough to keep the stack figures. */
static int stack_figures(const struct sm_heap_stats *s)
{
	return s->size >= offsetof(struct sm_heap_stats, stack_clearings) + sizeof(s->stack_clearings);
}

static const char *heap_text(const struct status_holder *h, char *buf, size_t size)
{
	const struct sm_heap_stats *s = &h->heap;

	if (h->heap_read)
		snprintf(buf, size, "figures unreadable (%s: root, or ptrace access to the process, reads them)",
			 cli_strerror(-h->heap_read));
	else if (s->state == SM_HEAP_INACTIVE)
		snprintf(buf, size, "inactive (%.*s): every block in ordinary memory", (int)sizeof(s->reason), s->reason);
	else if (s->state == SM_HEAP_STOOD_DOWN)
		snprintf(buf, size, "stood down (the OpenSSL preload module is loaded too): every block in ordinary "
			 "memory, %llu bytes in %llu blocks", (unsigned long long)s->plain_bytes,
			 (unsigned long long)s->plain_blocks);
	else {
		char stacks[96] = "";
		if (stack_figures(s))
			snprintf(stacks, sizeof(stacks), ", stacks 0 bytes secret, %s%llu clearings of dead frames",
				 s->stacks == 2 ? "under a seccomp filter, " : "", (unsigned long long)s->stack_clearings);
		if (stack_figures(s) && !s->stacks)
			snprintf(stacks, sizeof(stacks), ", stacks 0 bytes secret, dead frames not cleared");
		snprintf(buf, size, "secret %llu bytes, locked fallback %llu bytes, plain %llu bytes in %llu "
			 "blocks (%llu refused secret memory, %llu above the huge threshold of %llu), "
			 "early %llu bytes, adopted %llu bytes in %llu ranges the program locked%s%s%s",
			 (unsigned long long)s->secret_bytes, (unsigned long long)s->fallback_bytes,
			 (unsigned long long)s->plain_bytes, (unsigned long long)s->plain_blocks,
			 (unsigned long long)s->refusals, (unsigned long long)s->huge_allocs,
			 (unsigned long long)s->huge_threshold, (unsigned long long)s->early_bytes,
			 (unsigned long long)s->adopted_bytes, (unsigned long long)s->adopted_ranges,
			 s->python & 2 ? ", Python on malloc" : s->python & 1 ? ", Python's arenas" : "", stacks,
			 s->require ? ", SECRETMEM_REQUIRE" : "");
	}
	return buf;
}

static void json_heap(struct json *j, const struct status_holder *h)
{
	const struct sm_heap_stats *s = &h->heap;

	if (!h->heap_page) {
		json_null(j, "heap");
		return;
	}
	json_object_begin(j, "heap");
	json_bool(j, "readable", h->heap_read == 0);
	if (h->heap_read == 0) {
		char reason[sizeof(s->reason) + 1];
		snprintf(reason, sizeof(reason), "%.*s", (int)sizeof(s->reason), s->reason);
		json_string(j, "state", s->state == SM_HEAP_STOOD_DOWN ? "stood down" :
					s->state == SM_HEAP_INACTIVE ? "inactive" : "active");
		json_string(j, "reason", s->state == SM_HEAP_INACTIVE ? reason : NULL);
		json_uint(j, "secret_bytes", s->secret_bytes);
		json_uint(j, "fallback_bytes", s->fallback_bytes);
		json_uint(j, "plain_bytes", s->plain_bytes);
		json_uint(j, "plain_blocks", s->plain_blocks);
		json_uint(j, "early_bytes", s->early_bytes);
		json_uint(j, "refusals", s->refusals);
		json_uint(j, "huge_allocations", s->huge_allocs);
		json_uint(j, "huge_threshold", s->huge_threshold);
		json_bool(j, "require", s->require != 0);
		json_uint(j, "adopted_bytes", s->adopted_bytes);
		json_uint(j, "adopted_ranges", s->adopted_ranges);
		json_string(j, "python", s->python & 2 ? "malloc" : s->python & 1 ? "arenas" : NULL);
		int known = stack_figures(s);
		json_uint(j, "stack_secret_bytes", 0);
		json_string(j, "stacks", !known ? NULL : s->stacks == 2 ? "cleared under a seccomp filter"
						  : s->stacks ? "cleared" : "not cleared");
		if (known)
			json_uint(j, "stack_clearings", s->stack_clearings);
		else
			json_null(j, "stack_clearings");
	}
	json_object_end(j);
}

static const char *plural(size_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void render_verdict(const struct status_report *r, FILE *out)
{
	size_t n = r->n;

	if (r->hib == CLI_HIBERNATION_UNSUPPORTED)
		fprintf(out, "verdict: this machine cannot hibernate (no hibernation support); %zu "
			"process%s hold%s secret memory%s\n", n, plural(n, "", "es"), plural(n, "s", ""),
			r->complete ? "" : " (among those it could see: a process it could not see or "
					   "inspect may hold more)");
	else if (n)
		fprintf(out, "verdict: hibernation is blocked by %zu process%s holding secret memory\n",
			n, plural(n, "", "es"));
	else if (r->hib == CLI_HIBERNATION_AVAILABLE)
		fprintf(out, "verdict: hibernation is not blocked (available)%s\n",
			r->complete ? "" : "; this tool could not see or inspect every process");
	else
		fprintf(out, "verdict: hibernation is unavailable, but not because of secret memory "
			"this tool could inspect (nohibernate, lockdown%s)\n",
			r->complete ? "" : ", or a process it could not see or inspect");
	if (n && r->hib != CLI_HIBERNATION_UNSUPPORTED)
		fprintf(out, "to do: stop or restart the holders below (systemctl restart UNIT), or run "
			"them with SECRETMEM_RELEASE_IDLE=1 so that libsecretmem gives idle secret "
			"memory back\n");
}

static void render_visibility(const struct status_report *r, FILE *out)
{
	const struct status_visibility *v = &r->vis;

	if (r->uninspected) {
		fprintf(out, "not inspected: %u process%s (permission denied%s):", r->uninspected,
			plural(r->uninspected, "", "es"),
			r->root ? " even to root: another namespace or a security module" :
					 "; run as root to see all");
		for (unsigned i = 0; i < r->uninspected && i < STATUS_MAX_UNINSPECTED; i++)
			fprintf(out, " %d", (int)r->uninspected_pid[i]);
		fprintf(out, "%s\n", r->uninspected > STATUS_MAX_UNINSPECTED ? " ..." : "");
	}
	if (v->hidden)
		fprintf(out, "not seen: /proc is mounted with hidepid=%s%s: other users' processes are "
			"invisible to this one (run as root or in the gid= group)\n", v->hidepid,
			v->subset[0] ? " (and subset=pid)" : "");
	if (r->env_cut) {
		fprintf(out, "environment cut: %u process%s ha%s an environment larger than %u bytes (moved with "
			"prctl PR_SET_MM): only that much of it was read, a SECRETMEM_* or LD_PRELOAD after it "
			"is not seen:", r->env_cut, plural(r->env_cut, "", "es"), plural(r->env_cut, "s", "ve"),
			STATUS_STRINGS_MAX);
		for (unsigned i = 0; i < r->env_cut && i < STATUS_MAX_UNINSPECTED; i++)
			fprintf(out, " %d", (int)r->env_cut_pid[i]);
		fprintf(out, "%s\n", r->env_cut > STATUS_MAX_UNINSPECTED ? " ..." : "");
	}
	if (v->pidns)
		fprintf(out, "not seen: this process runs in a PID namespace (a container): holders "
			"on the host and in other containers cannot be seen; run on the host\n");
}

/* ---- renderers --------------------------------------------------------- */

void status_render_text(const struct status_report *r, FILE *out)
{
	char buf[2048], mode[160], heap[1024];

	render_verdict(r, out);
	if (r->n) {
		fprintf(out, "%-8s %-12s %12s %12s %5s %4s %s\n", "PID", "USER", "MAPPED", "RESIDENT",
			"FILES", "FDS", "COMMAND");
		for (size_t i = 0; i < r->n; i++) {
			const struct status_holder *p = &r->holders[i];
			fprintf(out, "%-8d %-12s %12llu %12llu %5u %4u %s\n", (int)p->pid, p->user,
				p->mapped, p->resident, p->files, p->fds,
				printable(p->comm, buf, sizeof(buf)));
			fputs("         command line: ", out);
			put_printable(out, p->cmdline);
			if (p->cmdline_cut)
				fprintf(out, " [cut: only its first %u bytes were read]", STATUS_STRINGS_MAX);
			fputc('\n', out);
			if (p->unit[0])
				fprintf(out, "         unit: %s\n", printable(p->unit, buf, sizeof(buf)));
			if (p->container[0])
				fprintf(out, "         container: %s\n", printable(p->container, buf,
										sizeof(buf)));
			/* the mode comes from the process's environment, the heap
			 * figures' reason from its memory: both its own to write */
			fprintf(out, "         libsecretmem: %s\n",
				printable(lib_mode(p, mode, sizeof(mode)), buf, sizeof(buf)));
			if (p->heap_page)
				fprintf(out, "         heap: %s\n",
					printable(heap_text(p, heap, sizeof(heap)), buf, sizeof(buf)));
			if (p->lib_env[0] || p->env_cut) {
				fprintf(out, "         environment: %s", printable(p->lib_env, buf, sizeof(buf)));
				if (p->env_cut)
					fprintf(out, "%s[cut: only its first %u bytes were read]",
						p->lib_env[0] ? " " : "", STATUS_STRINGS_MAX);
				fputc('\n', out);
			}
			if (p->fds)
				fprintf(out, "         holds %u secretmem fd%s: pidfd_getfd can take %s\n",
					p->fds, plural(p->fds, "", "s"), plural(p->fds, "it", "them"));
			if (p->unprotected[0]) {
				fputs("         unprotected: ", out);
				put_printable(out, p->unprotected);
				fputc('\n', out);
			}
		}
	} else {
		fprintf(out, "no process holds secret memory\n");
	}
	for (size_t i = 0; i < r->heap_n; i++) {
		const struct status_holder *p = &r->heap_only[i];
		char figures[sizeof(heap) * 4 + 1];
		fprintf(out, "heap mode without secret memory: %d %s (%s): %s\n", (int)p->pid,
			printable(p->comm, buf, sizeof(buf)), p->user,
			printable(heap_text(p, heap, sizeof(heap)), figures, sizeof(figures)));
	}
	for (size_t i = 0; i < r->unprot_n; i++) {
		const struct status_holder *p = &r->unprot[i];
		char why[sizeof(p->unprotected) * 4 + 1];
		fprintf(out, "unprotected: %d %s (%s): %s\n", (int)p->pid, printable(p->comm, buf, sizeof(buf)),
			p->user, printable(p->unprotected, why, sizeof(why)));
	}
	fprintf(out, "total: %zu process%s, %llu bytes mapped, %llu bytes resident, "
		"%zu secretmem file%s\n", r->n, plural(r->n, "", "es"), r->mapped, r->resident,
		r->files, plural(r->files, "", "s"));
	render_visibility(r, out);
	if (r->hib == CLI_HIBERNATION_UNSUPPORTED)
		fprintf(out, "hibernation: not supported on this machine (/sys/power/state: \"%s\")\n",
			r->power_state);
	else if (r->hib == CLI_HIBERNATION_AVAILABLE)
		fprintf(out, "hibernation: available\n");
	else if (r->n)
		fprintf(out, "hibernation: blocked by %zu process%s\n", r->n, plural(r->n, "", "es"));
	else
		fprintf(out, "hibernation: unavailable, but not because of secret memory this tool could "
			"inspect (nohibernate, lockdown%s)\n",
			r->complete ? "" : ", or a process it could not see or inspect");
	fflush(out);
}

void status_render_json(const struct status_report *r, FILE *out)
{
	char mode[160];
	struct json j;

	json_init(&j, out);
	json_object_begin(&j, NULL);
	json_string(&j, "tool", "secretmem");
	json_string(&j, "version", SECRETMEM_VERSION_STRING);
	json_string(&j, "command", "status");
	json_array_begin(&j, "processes");
	for (size_t i = 0; i < r->n; i++) {
		const struct status_holder *p = &r->holders[i];
		json_object_begin(&j, NULL);
		json_int(&j, "pid", p->pid);
		json_string(&j, "command", p->comm);
		json_string(&j, "cmdline", p->cmdline);
		json_bool(&j, "cmdline_cut", p->cmdline_cut);
		json_string(&j, "user", p->user);
		if (p->uid == (uid_t)-1)
			json_null(&j, "uid");
		else
			json_uint(&j, "uid", p->uid);
		json_string(&j, "unit", p->unit[0] ? p->unit : NULL);
		json_string(&j, "container", p->container[0] ? p->container : NULL);
		json_uint(&j, "mapped_bytes", p->mapped);
		json_uint(&j, "resident_bytes", p->resident);
		json_uint(&j, "mappings", p->mappings);
		json_uint(&j, "fds", p->fds);
		json_uint(&j, "files", p->files);
		json_object_begin(&j, "libsecretmem");
		json_string(&j, "seen", lib_key(p));
		json_string(&j, "mode", lib_mode(p, mode, sizeof(mode)));
		json_string(&j, "environment", p->env_readable ? p->lib_env : NULL);
		json_bool(&j, "environment_cut", p->env_cut);
		json_object_end(&j);
		json_heap(&j, p);
		json_string(&j, "unprotected", p->unprotected[0] ? p->unprotected : NULL);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "unprotected");
	for (size_t i = 0; i < r->unprot_n; i++) {
		const struct status_holder *p = &r->unprot[i];
		json_object_begin(&j, NULL);
		json_int(&j, "pid", p->pid);
		json_string(&j, "command", p->comm);
		json_string(&j, "cmdline", p->cmdline);
		json_bool(&j, "cmdline_cut", p->cmdline_cut);
		json_string(&j, "user", p->user);
		json_string(&j, "reason", p->unprotected);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "heap_without_secret_memory");
	for (size_t i = 0; i < r->heap_n; i++) {
		const struct status_holder *p = &r->heap_only[i];
		json_object_begin(&j, NULL);
		json_int(&j, "pid", p->pid);
		json_string(&j, "command", p->comm);
		json_string(&j, "cmdline", p->cmdline);
		json_bool(&j, "cmdline_cut", p->cmdline_cut);
		json_string(&j, "user", p->user);
		json_heap(&j, p);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_begin(&j, "totals");
	json_uint(&j, "processes", r->n);
	json_uint(&j, "mapped_bytes", r->mapped);
	json_uint(&j, "resident_bytes", r->resident);
	json_uint(&j, "fds", r->fds);
	json_uint(&j, "files", r->files);
	json_object_end(&j);
	json_uint(&j, "scanned", r->scanned);
	json_uint(&j, "uninspected", r->uninspected);
	json_array_begin(&j, "uninspected_pids");
	for (unsigned i = 0; i < r->uninspected && i < STATUS_MAX_UNINSPECTED; i++)
		json_int(&j, NULL, r->uninspected_pid[i]);
	json_array_end(&j);
	json_uint(&j, "environment_cut", r->env_cut);
	json_array_begin(&j, "environment_cut_pids");
	for (unsigned i = 0; i < r->env_cut && i < STATUS_MAX_UNINSPECTED; i++)
		json_int(&j, NULL, r->env_cut_pid[i]);
	json_array_end(&j);
	json_object_begin(&j, "visibility");
	json_bool(&j, "complete", r->complete);
	json_string(&j, "hidepid", r->vis.hidepid[0] ? r->vis.hidepid : NULL);
	json_string(&j, "subset", r->vis.subset[0] ? r->vis.subset : NULL);
	if (r->vis.gid >= 0)
		json_int(&j, "gid", r->vis.gid);
	else
		json_null(&j, "gid");
	json_bool(&j, "hidden_processes_possible", r->vis.hidden);
	json_bool(&j, "pid_namespace", r->vis.pidns);
	json_object_end(&j);
	json_object_begin(&j, "hibernation");
	json_string(&j, "state", hibernation_state(r->hib, r->n));
	json_uint(&j, "blocking_processes", r->hib == CLI_HIBERNATION_UNSUPPORTED ? 0 : r->n);
	json_string(&j, "power_state", r->power_state);
	json_object_end(&j);
	json_int(&j, "quiet_exit_status", r->quiet_exit);
	json_object_end(&j);
	json_finish(&j);
}

/* A Prometheus label value: backslash, quote and newline escaped; bytes
 * that are not printable ASCII as \xNN (itself escaped), so the file is
 * always valid UTF-8. */
static void prom_label(FILE *out, const char *s)
{
	char buf[2048];

	printable(s, buf, sizeof(buf));
	fputc('"', out);
	for (const char *p = buf; *p; p++) {
		if (*p == '\\' || *p == '"')
			fputc('\\', out);
		fputc(*p, out);
	}
	fputc('"', out);
}

static void prom_metric(FILE *out, const char *name, const char *help, unsigned long long v)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", name, help, name, name, v);
}

void status_render_prometheus(const struct status_report *r, FILE *out)
{
	static const struct {
		const char *name, *help;
		int resident;
	} per[] = {
		{ "secretmem_process_mapped_bytes", "Secret memory mapped by a process, in bytes.", 0 },
		{ "secretmem_process_resident_bytes", "Secret memory resident in a process, in bytes.", 1 },
	};

	prom_metric(out, "secretmem_holders", "Processes that hold secret memory (memfd_secret).",
		    r->n);
	prom_metric(out, "secretmem_mapped_bytes", "Secret memory mapped by all holders, in bytes.",
		    r->mapped);
	prom_metric(out, "secretmem_resident_bytes",
		    "Secret memory resident in all holders, in bytes.", r->resident);
	prom_metric(out, "secretmem_fds", "Open secret memory file descriptors.", r->fds);
	prom_metric(out, "secretmem_files", "Distinct secret memory files.", r->files);
	prom_metric(out, "secretmem_hibernation_supported", "1 if this machine can hibernate.",
		    r->hib != CLI_HIBERNATION_UNSUPPORTED);
	prom_metric(out, "secretmem_hibernation_blocked",
		    "1 if secret memory keeps this machine from hibernating.",
		    r->hib != CLI_HIBERNATION_UNSUPPORTED && r->n > 0);
	prom_metric(out, "secretmem_unprotected_processes",
		    "Processes outside a module they asked for, in part or whole (another allocator, an "
		    "OpenSSL out of reach, a module not loaded).", r->unprot_n);
	prom_metric(out, "secretmem_uninspected_processes",
		    "Processes whose memory could not be inspected.", r->uninspected);
	prom_metric(out, "secretmem_scan_complete",
		    "1 if every process could be seen and inspected (no hidepid, no PID namespace).",
		    r->complete);
	prom_metric(out, "secretmem_scan_timestamp_seconds", "When the scan ended (Unix time).",
		    (unsigned long long)r->time);
	for (size_t k = 0; k < 2; k++) {
		fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", per[k].name, per[k].help, per[k].name);
		for (size_t i = 0; i < r->n; i++) {
			const struct status_holder *p = &r->holders[i];
			fprintf(out, "%s{pid=\"%d\",command=", per[k].name, (int)p->pid);
			prom_label(out, p->comm);
			fputs(",unit=", out);
			prom_label(out, p->unit);
			fprintf(out, "} %llu\n", per[k].resident ? p->resident : p->mapped);
		}
	}
	static const struct {
		const char *name, *help;
		size_t off;
	} heap[] = {
		{ "secretmem_heap_secret_bytes", "Heap module: secret memory of the allocator, in bytes.",
		  offsetof(struct sm_heap_stats, secret_bytes) },
		{ "secretmem_heap_fallback_bytes", "Heap module: locked fallback memory of the allocator, in bytes.",
		  offsetof(struct sm_heap_stats, fallback_bytes) },
		{ "secretmem_heap_plain_bytes", "Heap module: live blocks in ordinary memory, in bytes.",
		  offsetof(struct sm_heap_stats, plain_bytes) },
		{ "secretmem_heap_early_bytes", "Heap module: live blocks in its static arena (ordinary memory), in bytes.",
		  offsetof(struct sm_heap_stats, early_bytes) },
		{ "secretmem_heap_adopted_bytes", "Heap module: memory the program locked, made secret memory, in bytes.",
		  offsetof(struct sm_heap_stats, adopted_bytes) },
		{ "secretmem_heap_stack_clearings", "Heap module: clearings of dead stack frames its threads made.",
		  offsetof(struct sm_heap_stats, stack_clearings) },
	};
	for (size_t k = 0; k < sizeof(heap) / sizeof(heap[0]); k++) {
		fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", heap[k].name, heap[k].help, heap[k].name);
		for (int list = 0; list < 2; list++) {
			const struct status_holder *v = list ? r->heap_only : r->holders;
			size_t n = list ? r->heap_n : r->n;
			for (size_t i = 0; i < n; i++) {
				const struct status_holder *p = &v[i];
				if (!p->heap_page || p->heap_read)
					continue;
				uint64_t val;
				memcpy(&val, (const char *)&p->heap + heap[k].off, sizeof(val));
				fprintf(out, "%s{pid=\"%d\",command=", heap[k].name, (int)p->pid);
				prom_label(out, p->comm);
				fprintf(out, "} %llu\n", (unsigned long long)val);
			}
		}
	}
}
