# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""bench/benchutil.py - what the heap-mode benchmarks share: CPU ticks from
/proc/PID/stat, a process's children, a free TCP port on 127.0.0.1, and
the configuration of the nginx they measure.  Imported by
bench/heap_bench.sh and bench/stack_bench.py."""
import socket


def ticks(pids):
    """utime + stime of the processes, in clock ticks (gone ones count 0)."""
    t = 0
    for pid in pids:
        try:
            f = open("/proc/%d/stat" % pid).read()
            v = f[f.rindex(")") + 2:].split()
            t += int(v[11]) + int(v[12])
        except OSError:
            pass
    return t


def children(pid):
    """The direct children of pid (its main thread's)."""
    try:
        return [int(x) for x in open("/proc/%d/task/%d/children" % (pid, pid)).read().split()]
    except OSError:
        return []


def free_port():
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def nginx_conf(d, port, crt, key):
    """nginx.conf for one worker in directory d, HTTPS on 127.0.0.1:port,
    /small answering "hello"."""
    return """daemon off;
master_process on;
worker_processes 1;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path %(d)s/body; proxy_temp_path %(d)s/proxy; fastcgi_temp_path %(d)s/fastcgi;
  uwsgi_temp_path %(d)s/uwsgi; scgi_temp_path %(d)s/scgi;
  server {
    listen 127.0.0.1:%(port)d ssl;
    ssl_certificate %(crt)s;
    ssl_certificate_key %(key)s;
    location = /small { return 200 "hello\\n"; }
  }
}
""" % dict(d=d, port=port, crt=crt, key=key)
