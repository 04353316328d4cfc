# SPDX-License-Identifier: GPL-2.0
"""Debian's clickhouse-server on loopback for tests: a private config under
a temporary directory, random free ports, the default user (no password)
and `shipper` (password `secret`), killed by stop().  With remote_servers,
a `fleet` cluster whose shards are the given servers' native ports.

  s = Server(dir); s.start(); s.query('SELECT 1'); s.stop()
"""

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

BINARY = shutil.which('clickhouse-server') or '/usr/sbin/clickhouse-server'


class Error(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


USERS = '''<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage>
    <max_insert_block_size>%(block)d</max_insert_block_size></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <shipper><password>secret</password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></shipper>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries>
    <errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows>
    <execution_time>0</execution_time></interval></default></quotas>
</yandex>
'''

CONFIG = '''<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>%(dir)s/server.log</log>
    <errorlog>%(dir)s/server.err</errorlog><console>0</console></logger>
  <http_port>%(http)d</http_port>
  <tcp_port>%(tcp)d</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>%(dir)s/data/</path>
  <tmp_path>%(dir)s/tmp/</tmp_path>
  <user_files_path>%(dir)s/user_files/</user_files_path>
  <format_schema_path>%(dir)s/format_schemas/</format_schema_path>
  <users_config>%(dir)s/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>16777216</mark_cache_size>
  <uncompressed_cache_size>16777216</uncompressed_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
  <remote_servers>%(remote)s</remote_servers>
</yandex>
'''


class Server:
    def __init__(self, d, block=1048576):
        self.dir = d
        self.block = block
        self.http = free_port()
        self.tcp = free_port()
        self.proc = None
        self.shards = []

    @property
    def url(self):
        return 'http://127.0.0.1:%d/' % self.http

    def start(self, timeout=30):
        os.makedirs(self.dir, exist_ok=True)
        remote = ''
        if self.shards:
            remote = '<fleet>%s</fleet>' % ''.join(
                '<shard><replica><host>127.0.0.1</host><port>%d</port></replica></shard>'
                % s.tcp for s in self.shards)
        with open(os.path.join(self.dir, 'config.xml'), 'w') as f:
            f.write(CONFIG % {'dir': self.dir, 'http': self.http, 'tcp': self.tcp,
                              'remote': remote})
        with open(os.path.join(self.dir, 'users.xml'), 'w') as f:
            f.write(USERS % {'block': self.block})
        out = open(os.path.join(self.dir, 'stdout'), 'wb')
        self.proc = subprocess.Popen(
            [BINARY, '--config-file=%s' % os.path.join(self.dir, 'config.xml')],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        out.close()
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise Error('clickhouse-server exited %d: %s' %
                            (self.proc.returncode, self.log()))
            try:
                with urllib.request.urlopen(self.url + 'ping', timeout=1) as r:
                    if r.read().strip() == b'Ok.':
                        return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.1)
        raise Error('clickhouse-server not ready in %d s: %s' % (timeout, self.log()))

    def log(self):
        text = ''
        for name in ('stdout', 'server.err'):
            try:
                with open(os.path.join(self.dir, name), errors='replace') as f:
                    text += f.read()[-1500:]
            except OSError:
                pass
        return text

    def query(self, sql, user=None, password=None):
        """The answer's text (TabSeparated by default); Error with the
        server's message when it fails."""
        req = urllib.request.Request(self.url, data=sql.encode(), method='POST')
        if user:
            import base64
            tok = base64.b64encode(('%s:%s' % (user, password or '')).encode()).decode()
            req.add_header('Authorization', 'Basic ' + tok)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.read().decode()
        except urllib.error.HTTPError as e:
            raise Error('%s: HTTP %d: %s' % (sql, e.code, e.read().decode(errors='replace')))

    def rows(self, sql):
        """TabSeparated rows as lists of strings."""
        return [l.split('\t') for l in self.query(sql).splitlines()]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
