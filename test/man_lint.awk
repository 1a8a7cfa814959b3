# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
#
# man_lint.awk - words that troff would run together: the alternating-font
# macros (.BR .RB .BI .IB .IR .RI) join their arguments without a space,
# so two plain words in a row (".BR name (7).  A build ..." rendered
# "name(7).Abuild...") or an argument with its own font escapes followed by
# another (".BI A= b \fR[c] \fId\fR" rendered "[c]d") are mistakes.  Prints
# FILE:LINE: text for each; test/t_man_render.c runs it on every page.
/^\.(BR|RB|BI|IB|IR|RI) / {
	line = $0
	sub(/^\.[A-Z][A-Z] /, "", line)
	n = 0
	while (length(line)) {
		if (substr(line, 1, 1) == "\"") {
			i = index(substr(line, 2), "\"")
			if (!i)
				i = length(line)
			a[++n] = substr(line, 2, i - 1)
			line = substr(line, i + 2)
		} else {
			i = index(line, " ")
			if (!i)
				i = length(line) + 1
			a[++n] = substr(line, 1, i - 1)
			line = substr(line, i + 1)
		}
		sub(/^ +/, "", line)
	}
	for (k = 1; k < n; k++) {
		if ((a[k] ~ /^[A-Za-z][A-Za-z]+[.,;:]?$/ && a[k + 1] ~ /^[A-Za-z][A-Za-z]+$/) ||
		    (a[k] ~ /\\f[BIRP]/ && a[k] !~ / $/ && a[k + 1] ~ /^([A-Za-z[]|\\f)/)) {
			print FILENAME ":" FNR ": " $0
			break
		}
	}
}
