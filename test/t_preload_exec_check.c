/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * `secretmem exec` checks its target before it runs it.  Programs the
 * module cannot enter are refused with exit status 125 and a message that
 * names the reason: a set-user-ID or set-group-ID program that changes the
 * IDs (secure-execution mode: the dynamic linker ignores LD_PRELOAD), a
 * statically linked program, and the same behind `#!` interpreters and
 * `#!/usr/bin/env NAME` (also `env -S NAME ARGS`, with assignments and -i;
 * NAME found in the PATH env gives it: PATH=DIR, or env's default after -i
 * or -u PATH), behind the dynamic linker run as a program, found through
 * an empty PATH (the current directory) and, with PATH unset, in glibc's
 * default path (not /usr/local/bin, where exec looked before: it checked
 * one file and ran another); any program run by a process whose
 * effective IDs are not its real IDs; and any program, in every mode,
 * when the module's own path holds a space or a colon, which LD_PRELOAD
 * cannot carry.  An env line exec cannot follow (-C DIR) gets a warning.  Not refused: a set-user-ID
 * script (the kernel ignores its bits), a set-ID program under
 * no_new_privs; an execute-only program exec cannot read gets a warning
 * that it cannot tell.  With --allow-unprotected they run, after a
 * warning saying nothing of them will be protected.  A program with file
 * capabilities run by root is not in secure-execution mode: it is accepted,
 * and the module really loads (--report says so at exit).  An ordinary
 * script runs unchanged.  And the way secretmem-preload(7) gives to
 * protect a set-ID program works: the module installed in a standard
 * library directory with its set-user-ID bit, named in LD_PRELOAD without
 * a slash, is loaded into a set-group-ID OpenSSL program (and is not
 * without the bit).
 */
#include <linux/capability.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "probe.h"
#include "scan.h"
#include "tlib.h"

static char tool[PATH_MAX], sysmod[PATH_MAX];

static int tool_run(const char *args, const char *out)
{
	return rig_sh("cd '%s' && PATH='%s':\"$PATH\" ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 '%s' exec %s > '%s' 2>&1",
		      rig_tmpdir(), rig_tmpdir(), tool, args, out);
}

/* exec OPTIONS -- /bin/true run in cwd by setpriv SETPRIV (IDs that are
 * not the real ones), its output in out (printed): the exit status. */
static int mixed_ids(const char *cwd, const char *setpriv, const char *options, const char *out)
{
	int st = rig_sh("cd '%s' && ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 setpriv %s '%s' exec %s "
			"-- /bin/true > '%s' 2>&1", cwd, setpriv, tool, options, out);

	rig_cat(out);
	return st;
}

static void refused(const char *args, const char *reason)
{
	char out[300];

	snprintf(out, sizeof(out), "%s/refused.out", rig_tmpdir());
	int rc = tool_run(args, out);
	rig_cat(out);
	TL_CHECK(rc == 125, "exec %s: exit %d, want 125", args, rc);
	TL_CHECK(rig_file_has(out, "refusing to run") && rig_file_has(out, reason),
		 "exec %s: the message does not say \"%s\"", args, reason);
}

static void remove_sysmod(void)
{
	if (sysmod[0])
		unlink(sysmod);
}

static void on_signal(int sig)
{
	remove_sysmod();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The module in a standard directory with its set-user-ID bit. */
static void setid_protected(void)
{
	char out[300], cmd[PATH_MAX * 2];
	const char *dir = rig_tmpdir();

	if (rig_preload_sanitizer()) {
		printf("sanitizer build: set-ID preload not checked\n");
		return;
	}
	snprintf(sysmod, sizeof(sysmod), "/usr/lib/x86_64-linux-gnu/libsecretmem-preload-test-%d.so", (int)getpid());
	if (access("/usr/lib/x86_64-linux-gnu", W_OK) != 0) {
		sysmod[0] = '\0';
		printf("/usr/lib/x86_64-linux-gnu not writable: set-ID preload not checked\n");
		return;
	}
	atexit(remove_sysmod);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	TL_CHECK(rig_sh("cp '%s' '%s' && chmod 0644 '%s' && cp '%s' '%s/sg-probe' && chgrp 65534 '%s/sg-probe' && "
			"chmod 2755 '%s/sg-probe'", rig_preload(), sysmod, sysmod, probe_path(), dir, dir, dir) == 0,
		 "cannot set up the set-ID test");
	snprintf(out, sizeof(out), "%s/setid.out", dir);
	snprintf(cmd, sizeof(cmd), "LD_PRELOAD='%s' SECRETMEM_REPORT=1 SECRETMEM_OPENSSL=secure '%s/sg-probe' secmem secure "
		 "> '%s' 2>&1", strrchr(sysmod, '/') + 1, dir, out);
	/* Without the set-user-ID bit the dynamic linker refuses the module... */
	rig_sh("%s", cmd);
	rig_cat(out);
	TL_CHECK(!rig_file_has(out, "secretmem-preload: report:"), "the module loaded without its set-user-ID bit");
	/* ...with it, the module is in the set-group-ID program. */
	TL_CHECK(rig_sh("chmod 4644 '%s'", sysmod) == 0, "chmod");
	TL_CHECK(rig_sh("%s", cmd) == 0, "set-group-ID probe failed");
	rig_cat(out);
	TL_CHECK(rig_file_has(out, "secretmem-preload: report: libcrypto") &&
		 rig_file_has(out, "secure heap: ") && rig_file_has(out, "backend secret"),
		 "the module was not loaded into the set-group-ID program");
	remove_sysmod();
	sysmod[0] = '\0';
}

int main(void)
{
	char out[300];
	const char *dir;

	if (!realpath(tl_build_path("secretmem"), tool))
		tl_skip("the secretmem tool is not built");
	rig_preload();
	if (geteuid() != 0)
		tl_skip("needs root (set-ID files owned by another user)");
	dir = rig_tmpdir();
	snprintf(out, sizeof(out), "%s/exec.out", dir);
	TL_CHECK(rig_sh("cd '%s' && cp /bin/true su-true && chown 65534 su-true && chmod 4755 su-true && "
			"cp /bin/true sg-true && chgrp 65534 sg-true && chmod 2755 sg-true && "
			"cp /bin/sh sg-sh && chgrp 65534 sg-sh && chmod 2755 sg-sh && "
			"printf '#!%s/sg-sh\\nexit 0\\n' > via-sgid && chmod 755 via-sgid && "
			"printf '#!/bin/sh\\nexit 5\\n' > plain.sh && chmod 755 plain.sh", dir, dir) == 0,
		 "cannot make the test programs");

	refused("-- ./su-true", "is set-user-ID (owner uid 65534)");
	refused("-- ./sg-true", "is set-group-ID (group gid 65534)");
	refused("-- sg-true", "is set-group-ID"); /* found in PATH */
	refused("-- ./via-sgid", "sg-sh is set-group-ID");
	refused("--mode all -- /sbin/ldconfig -p", "is statically linked");

	/* A static program of our own, directly and behind #!/usr/bin/env. */
	if (rig_sh("cd '%s' && printf 'int main(void) { return 3; }\\n' > st.c && cc -static -o static-prog st.c "
		   "2>/dev/null && printf '#!/usr/bin/env static-prog\\n' > via-env && chmod 755 via-env && "
		   "printf '#!/usr/bin/env -S static-prog -x\\n' > via-env-s && chmod 755 via-env-s && "
		   "printf '#!/usr/bin/env -S -i PATH=%s A=1 static-prog\\n' > via-env-sa && chmod 755 via-env-sa && "
		   "mkdir -p stdir && cp static-prog stdir/true && "
		   "printf '#!/usr/bin/env -S PATH=%s/stdir true\\n' > via-env-path && chmod 755 via-env-path && "
		   "printf '#!/usr/bin/env -S -u PATH true\\n' > via-env-unset && chmod 755 via-env-unset && "
		   "printf '#!/usr/bin/env -S -i true\\n' > via-env-i && chmod 755 via-env-i && "
		   "printf '#!/usr/bin/env -S -C / static-prog\\n' > via-env-chdir && chmod 755 via-env-chdir",
		   dir, dir, dir) == 0) {
		refused("-- ./static-prog", "static-prog is statically linked");
		refused("-- ./via-env", "static-prog is statically linked");
		/* env -S: its string is split by env (it was taken for env's own
		 * option, and the static program ran unprotected) */
		refused("-- ./via-env-s", "static-prog is statically linked");
		refused("-- ./via-env-sa", "static-prog is statically linked");
		/* NAME is found in the PATH env gives it, not in exec's own:
		 * stdir/true is static, the true of exec's PATH is not */
		refused("-- ./via-env-path", "stdir/true is statically linked");
		/* env -i and -u PATH: env's default path (/bin:/usr/bin), where
		 * true is dynamic, not exec's PATH, where it is static */
		int st_i = rig_sh("cd '%s' && PATH='%s/stdir':\"$PATH\" ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 "
				  "'%s' exec -- ./via-env-i > '%s' 2>&1 && PATH='%s/stdir':\"$PATH\" "
				  "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 '%s' exec -- ./via-env-unset >> '%s' 2>&1",
				  dir, dir, tool, out, dir, tool, out);
		rig_cat(out);
		TL_CHECK(st_i == 0 && !rig_file_has(out, "refusing"), "env -i / -u PATH: exit %d, want 0 (env's PATH)", st_i);
		/* an option exec cannot follow (-C DIR): a warning, it runs */
		TL_CHECK(tool_run("-- ./via-env-chdir", out) == 3, "env -C: not run");
		rig_cat(out);
		TL_CHECK(rig_file_has(out, "which exec cannot follow") && rig_file_has(out, "cannot tell"),
			 "env -C: no warning that exec cannot tell");
		/* the dynamic linker run as a program: the module is loaded into
		 * the program it runs (no false refusal), unless that program is
		 * statically linked */
		if (access("/lib64/ld-linux-x86-64.so.2", X_OK) == 0) {
			TL_CHECK(tool_run("--report -- /lib64/ld-linux-x86-64.so.2 /bin/true", out) == 0 &&
				 rig_file_has(out, "secretmem-preload: report:"),
				 "ld.so /bin/true: refused, or the module did not load");
			rig_cat(out);
			refused("-- /lib64/ld-linux-x86-64.so.2 --argv0 x ./static-prog",
				"./static-prog is statically linked: the dynamic linker");
			/* ld.so as a script's interpreter: the program it runs
			 * is not checked, so it is refused */
			TL_CHECK(rig_sh("cd '%s' && printf '#!/lib64/ld-linux-x86-64.so.2 %s/static-prog\\n' > via-ldso && "
					"chmod 755 via-ldso", dir, dir) == 0, "via-ldso");
			refused("-- ./via-ldso", "runs a program exec cannot check");
		}
		/* an empty PATH is the current directory, as for execvp() */
		int st0 = rig_sh("cd '%s' && PATH= ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 '%s' exec "
				 "-- static-prog > '%s' 2>&1", dir, tool, out);
		rig_cat(out);
		TL_CHECK(st0 == 125 && rig_file_has(out, "is statically linked"),
			 "PATH= and a static program in the current directory: exit %d, want 125", st0);
		/* execute-only (0711), run by a user who cannot read it: a
		 * warning that exec cannot tell (it ran, silently) */
		if (rig_sh("setpriv --reuid=65534 --regid=65534 --clear-groups test -x '%s'", tool) == 0 &&
		    rig_sh("mkdir -p /tmp/secretmem-x.%d && chmod 755 /tmp/secretmem-x.%d && cp '%s/static-prog' "
			   "/tmp/secretmem-x.%d/ && chmod 0711 /tmp/secretmem-x.%d/static-prog", (int)getpid(),
			   (int)getpid(), dir, (int)getpid(), (int)getpid()) == 0) {
			int st1 = rig_sh("cd /tmp/secretmem-x.%d && setpriv --reuid=65534 --regid=65534 --clear-groups "
					 "'%s' exec -- ./static-prog > '%s.x' 2>&1; s=$?; cat '%s.x' > '%s'; rm -rf "
					 "/tmp/secretmem-x.%d '%s.x'; exit $s", (int)getpid(), tool, out, out, out,
					 (int)getpid(), out);
			rig_cat(out);
			TL_CHECK(st1 == 3 && rig_file_has(out, "cannot be read") && rig_file_has(out, "cannot tell"),
				 "an execute-only static program: exit %d, want 3 after a warning", st1);
		} else {
			printf("uid 65534 cannot run the tool here: the execute-only case is left out\n");
		}
		TL_CHECK(tool_run("--allow-unprotected -- ./static-prog", out) == 3, "--allow-unprotected: not run");
		rig_cat(out);
		TL_CHECK(rig_file_has(out, "warning: ./static-prog: nothing of it will be protected") &&
			 rig_file_has(out, "statically linked"), "--allow-unprotected: no precise warning");
	} else {
		printf("cc -static not available: static program not built\n");
	}
	/* the kernel ignores a script's set-ID bits, and every set-ID bit under
	 * no_new_privs: no secure-execution mode, the module loads */
	TL_CHECK(rig_sh("cd '%s' && printf '#!/bin/sh\\nexit 0\\n' > su-script && chown 65534 su-script && "
			"chmod 4755 su-script", dir) == 0, "cannot make the set-user-ID script");
	TL_CHECK(tool_run("--report -- ./su-script", out) == 0 && rig_file_has(out, "secretmem-preload: report:"),
		 "a set-user-ID script was refused, or the module did not load");
	rig_cat(out);
	TL_CHECK(rig_sh("cd '%s' && ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 setpriv --no-new-privs "
			"'%s' exec --report -- ./su-true > '%s' 2>&1", dir, tool, out) == 0 &&
		 rig_file_has(out, "secretmem-preload: report:"),
		 "a set-user-ID program under no_new_privs was refused, or the module did not load");
	rig_cat(out);
	/* the tool and its module in a directory whose name has a space:
	 * LD_PRELOAD cannot carry the path, so the program is refused (it
	 * ran without the module, silently) */
	TL_CHECK(rig_sh("cd '%s' && mkdir -p 'sp ace' && cp '%s' '%s' 'sp ace/'", dir, tool, rig_preload()) == 0,
		 "cannot copy the tool");
	int st = rig_sh("cd '%s' && ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 './sp ace/secretmem' exec "
			"-- /bin/true > '%s' 2>&1", dir, out);
	rig_cat(out);
	TL_CHECK(st == 125 && rig_file_has(out, "holds a space or a colon"),
		 "a module path with a space: exit %d, want 125 and the reason", st);
	/* --mode off puts the module in LD_PRELOAD too: the same refusal
	 * (ld.so loaded the pieces of the path relative to the current
	 * directory) */
	st = rig_sh("cd '%s' && ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 './sp ace/secretmem' exec "
		    "--mode off -- /bin/true > '%s' 2>&1", dir, out);
	rig_cat(out);
	TL_CHECK(st == 125 && rig_file_has(out, "holds a space or a colon"),
		 "--mode off, a module path with a space: exit %d, want 125 and the reason", st);

	/* a process whose effective IDs are not its real IDs (run by a
	 * set-user-ID wrapper): the kernel puts every program it runs in
	 * secure-execution mode */
	st = mixed_ids(dir, "--egid=65534 --keep-groups", "", out);
	TL_CHECK(st == 125 && rig_file_has(out, "refusing to run /bin/true: secretmem runs with effective gid 65534 "
						 "but real gid 0: the kernel runs /bin/true in secure-execution mode"),
		 "effective gid not the real gid: exit %d, want 125 and the reason", st);
#ifdef TL_SANITIZED
	/* a sanitizer's runtime in a secure-execution tool ignores
	 * ASAN_OPTIONS, and LeakSanitizer cannot run as another euid */
	if (0) {
#else
	if (rig_sh("setpriv --euid=65534 test -x '%s'", tool) == 0) {
#endif
		st = mixed_ids("/", "--euid=65534", "", out);
		TL_CHECK(st == 125 && rig_file_has(out, "effective uid 65534 but real uid 0"),
			 "effective uid not the real uid: exit %d, want 125 and the reason", st);
	}
	st = mixed_ids(dir, "--egid=65534 --keep-groups", "--allow-unprotected", out);
	TL_CHECK(st == 0 && rig_file_has(out, "warning: /bin/true: nothing of it will be protected: secretmem runs "
						"with effective gid"), "mixed IDs, --allow-unprotected: exit %d", st);

	/* PATH unset: exec searches glibc's default path (/bin:/usr/bin) and
	 * runs the file it checked; /usr/local/bin, where it looked before,
	 * gets a static "true" (refused, where /bin/true then ran) and a
	 * harmless "su" (passed, where the set-user-ID /bin/su then ran) */
	if (rig_sh("unshare -m true 2>/dev/null") == 0 && access("/usr/local/bin", F_OK) == 0) {
		st = rig_sh("cd '%s' && unshare -m sh -c \"mount -t tmpfs -o mode=755 none /usr/local/bin || exit 90; "
			    "cp static-prog /usr/local/bin/true && cp /bin/true /usr/local/bin/su && "
			    "env -u PATH ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 '%s' exec -- true || exit 91; "
			    "if [ -u /bin/su ] && setpriv --reuid=65534 --regid=65534 --clear-groups test -x '%s'; then "
			    "setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all env -u PATH "
			    "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 '%s' exec -- su --version "
			    "</dev/null; [ \\$? = 125 ] || exit 92; fi\" > '%s' 2>&1", dir, tool, tool, tool, out);
		rig_cat(out);
		if (st == 90)
			printf("note: no tmpfs mount here: the PATH-unset case was not run\n");
		else
			TL_CHECK(st == 0 && rig_file_has(out, "/bin/su is set-user-ID") == (access("/bin/su", F_OK) == 0 &&
											  rig_sh("[ -u /bin/su ]") == 0 &&
											  rig_sh("setpriv --reuid=65534 --regid=65534 --clear-groups test -x '%s'", tool) == 0),
				 "PATH unset: exit %d (91: /bin/true not run, 92: /bin/su not refused)", st);
	}
	TL_CHECK(tool_run("--allow-unprotected -- ./sg-true", out) == 0 &&
		 rig_file_has(out, "nothing of it will be protected: ./sg-true is set-group-ID"),
		 "--allow-unprotected with a set-group-ID program");

	/* Ordinary programs: unchanged, no message; --report tells at exit. */
	TL_CHECK(tool_run("-- ./plain.sh", out) == 5, "plain script: exit status");
	TL_CHECK(!rig_file_has(out, "secretmem"), "plain script: unexpected message");
	TL_CHECK(tool_run("--report -- ./plain.sh", out) == 5 &&
		 rig_file_has(out, "secretmem-preload: report: no libcrypto was loaded: nothing was protected"),
		 "--report: no report for a program without libcrypto");
	/* SECRETMEM_REPORT is a switch like the others (secretmem(7)):
	 * yes/on/true and no/off/false; another value warns */
	TL_CHECK(rig_sh("cd '%s' && ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 SECRETMEM_REPORT=yes '%s' exec -- ./plain.sh > '%s' 2>&1; [ $? = 5 ]", dir, tool,
			out) == 0 && rig_file_has(out, "secretmem-preload: report: no libcrypto"),
		 "SECRETMEM_REPORT=yes: no report");
	TL_CHECK(rig_sh("cd '%s' && ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 SECRETMEM_REPORT=Off '%s' exec -- ./plain.sh > '%s' 2>&1; [ $? = 5 ]", dir, tool,
			out) == 0 && !rig_file_has(out, "secretmem"), "SECRETMEM_REPORT=Off: a report or a warning");
	TL_CHECK(rig_sh("cd '%s' && ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 SECRETMEM_REPORT=maybe '%s' exec -- ./plain.sh > '%s' 2>&1; [ $? = 5 ]", dir, tool,
			out) == 0 && rig_file_has(out, "invalid value of SECRETMEM_REPORT (valid: 1, 0, yes, no") &&
		 !rig_file_has(out, "report: no libcrypto"), "SECRETMEM_REPORT=maybe: no warning, or a report");
	rig_cat(out);

	/* File capabilities, run by root: not secure-execution, accepted. */
	{
		struct vfs_cap_data cap;
		char capfile[300];

		memset(&cap, 0, sizeof(cap));
		cap.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE;
		cap.data[0].permitted = 1u << CAP_NET_BIND_SERVICE;
		snprintf(capfile, sizeof(capfile), "%s/cap-true", dir);
		if (rig_sh("cp /bin/true '%s'", capfile) == 0 &&
		    setxattr(capfile, "security.capability", &cap, sizeof(cap), 0) == 0) {
			TL_CHECK(tool_run("--report -- ./cap-true", out) == 0 &&
				 rig_file_has(out, "secretmem-preload: report: no libcrypto was loaded"),
				 "root: a program with file capabilities was refused or the module did not load");
			/* run by another user under no_new_privs: file capabilities
			 * still make secure-execution mode, refused */
			if (rig_sh("setpriv --reuid=65534 --regid=65534 --clear-groups test -x '%s'", tool) == 0 &&
			    rig_sh("mkdir -p /tmp/secretmem-c.%d && chmod 755 /tmp/secretmem-c.%d && cp -p '%s' "
				   "/tmp/secretmem-c.%d/ && chmod 755 /tmp/secretmem-c.%d/cap-true", (int)getpid(),
				   (int)getpid(), capfile, (int)getpid(), (int)getpid()) == 0 &&
			    setxattr(capfile, "security.capability", &cap, sizeof(cap), 0) == 0) {
				char cf2[300];
				snprintf(cf2, sizeof(cf2), "/tmp/secretmem-c.%d/cap-true", (int)getpid());
				setxattr(cf2, "security.capability", &cap, sizeof(cap), 0);
				int st2 = rig_sh("cd /tmp/secretmem-c.%d && setpriv --reuid=65534 --regid=65534 "
						 "--clear-groups --no-new-privs '%s' exec -- ./cap-true > '%s.c' 2>&1; "
						 "s=$?; cat '%s.c' > '%s'; rm -rf /tmp/secretmem-c.%d '%s.c'; exit $s",
						 (int)getpid(), tool, out, out, out, (int)getpid(), out);
				rig_cat(out);
				TL_CHECK(st2 == 125 && rig_file_has(out, "has file capabilities"),
					 "no_new_privs, another user: a program with file capabilities: exit %d, want 125",
					 st2);
			}
		} else {
			printf("cannot set file capabilities here: case not checked\n");
		}
	}

	setid_protected();
	printf("exec refuses what the module cannot enter, says why, and runs it on request\n");
	return 0;
}
