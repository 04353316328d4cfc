# SPDX-License-Identifier: GPL-2.0
"""sql_check.py part raw (ringtrace sql's core): raw, event_count and lost
against report of the same trace -- events per name and CPU (raw grouped
and event_count) are report --stat's, losses per CPU are its "losses",
and every raw row is an event line of report (time, CPU, thread, name)."""

from sql_check import check, report_lines, stat_events, stat_losses


def check_raw(db):
    want = stat_events(db.report_stat())
    check(want, 'report --stat of %s has no events' % db.dir)
    got = {(r['name'], r['cpu']): r['count'] for r in
           db.rows('SELECT name, cpu, count FROM event_count')}
    check(got == want, 'event_count differs from report --stat: %s' %
          sorted(set(got.items()) ^ set(want.items()))[:10])
    got = {(r['name'], r['cpu']): r['n'] for r in
           db.rows('SELECT name, cpu, count(*) n FROM raw GROUP BY 1, 2')}
    check(got == want, 'raw grouped differs from report --stat: %s' %
          sorted(set(got.items()) ^ set(want.items()))[:10])
    losses = {r['cpu']: (r['e'], r['p'], r['g']) for r in db.rows(
        'SELECT cpu, sum(events) e, sum(packets) p, sum(damaged) g FROM lost '
        'WHERE cpu IS NOT NULL GROUP BY cpu')}
    for cpu, v in stat_losses(db.report_stat()).items():
        check(losses.get(cpu, (0, 0, 0)) == v, 'lost of cpu%d: %s, report %s' %
              (cpu, losses.get(cpu), v))
    lines = report_lines(db.report())
    rows = sorted(((r['ts'], r['cpu'], r['utid'], r['name']) for r in
                   db.rows('SELECT ts, cpu, utid, name FROM raw')), key=repr)
    check(rows == lines, 'raw differs from report: %d rows, %d lines; first difference %s' %
          (len(rows), len(lines), next((x, y) for x, y in zip(rows, lines) if x != y)
          if any(x != y for x, y in zip(rows, lines)) else '(lengths)'))
