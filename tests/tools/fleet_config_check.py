#!/usr/bin/env python3
"""Checks docs/fleet/otelcol-hangwatch.yaml, the OpenTelemetry Collector example of docs/fleet.md.

The Collector is not a Debian package, so it is not run here. Instead:
  1. the YAML parses, every component a pipeline names is defined, and the filelog receiver
     reads a report and its rotated .1 from the beginning with persistent offsets;
  2. its operators, replayed on records that the agent itself writes (stall_program --agent,
     plus a lag and a start-up stall record) with the documented semantics of the filelog
     operators it uses (json_parser, filter, add, severity_parser, move, remove), find every
     field they name, drop the records that are not hangs, and give a log record shaped like
     `hangwatch export`'s: timestamp = start_unix_ms, severity WARN (13) or FATAL (21),
     resource service.name / host.name / process.pid, hang.* attributes, no stacks.

usage: fleet_config_check.py CONFIG STALL_PROGRAM
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
    return ok


# A field path of the filelog operators: attributes.a.b, attributes["a.b"], resource["x"], body.
PATH_PART = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\["([^"]+)"\]')


def parse_path(text):
    m = re.match(r'(attributes|resource|body)', text)
    if not m:
        raise ValueError('not a field path: ' + text)
    root, rest, parts = m.group(1), text[m.end():], []
    while rest:
        p = PATH_PART.match(rest)
        if not p:
            raise ValueError('not a field path: ' + text)
        parts.append(p.group(1) or p.group(2))
        rest = rest[p.end():]
    return root, parts


def get(entry, text):
    root, parts = parse_path(text)
    node = entry[root]
    for p in parts:
        if not isinstance(node, dict) or p not in node:
            return False, None
        node = node[p]
    return True, node


def put(entry, text, value):
    root, parts = parse_path(text)
    node = entry[root]
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


def delete(entry, text):
    root, parts = parse_path(text)
    node = entry[root]
    for p in parts[:-1]:
        node = node[p]
    del node[parts[-1]]


# The expressions the example uses: FIELD (==|!=) (true|false|nil|"text"|number).
EXPR = re.compile(r'^\s*(\S+)\s*(==|!=)\s*(true|false|nil|"[^"]*"|-?[0-9]+)\s*$')


def evaluate(entry, expr):
    m = EXPR.match(expr)
    if not check(m is not None, 'expression outside the checked forms: ' + expr):
        return False
    found, value = get(entry, m.group(1))
    literal = m.group(3)
    want = {'true': True, 'false': False, 'nil': None}.get(literal)
    if literal.startswith('"'):
        want = literal[1:-1]
    elif literal.lstrip('-').isdigit():
        want = int(literal)
    equal = (value if found else None) == want
    return equal if m.group(2) == '==' else not equal


# severity_parser's default mapping, for the values the example produces.
SEVERITY = {'WARN': 13, 'FATAL': 21}


def replay(operators, line):
    """The log entry the operators make of one line, or None when it is dropped."""
    entry = {'body': line, 'attributes': {}, 'resource': {}, 'timestamp': None, 'severity': 0}
    for op in operators:
        kind = op['type']
        if 'if' in op and not evaluate(entry, op['if']):
            continue
        if kind == 'json_parser':
            parsed = json.loads(entry['body'])
            check(op.get('parse_to', 'attributes') == 'attributes', 'json_parser parses to attributes')
            entry['attributes'].update(parsed)
            ts = op.get('timestamp')
            if ts:
                found, value = get(entry, ts['parse_from'])
                check(found, 'timestamp field missing: ' + ts['parse_from'])
                check(ts.get('layout_type') == 'epoch' and ts.get('layout') == 'ms',
                      'start_unix_ms is milliseconds since the epoch: layout_type epoch, layout ms')
                check(isinstance(value, int), 'timestamp field is not an integer')
                entry['timestamp'] = value
        elif kind == 'filter':
            if evaluate(entry, op['expr']):
                return None
        elif kind == 'add':
            put(entry, op['field'], op['value'])
        elif kind == 'severity_parser':
            found, value = get(entry, op['parse_from'])
            check(found and value in SEVERITY, 'severity value %r' % (value,))
            entry['severity'] = SEVERITY.get(value, 0)
        elif kind == 'move':
            found, value = get(entry, op['from'])
            if check(found, 'move: no field ' + op['from'] + ' in a hang record'):
                delete(entry, op['from'])
                put(entry, op['to'], value)
        elif kind == 'remove':
            found, _ = get(entry, op['field'])
            if check(found, 'remove: no field ' + op['field'] + ' in a hang record'):
                delete(entry, op['field'])
        else:
            check(False, 'operator type outside the checked ones: ' + kind)
    return entry


def main():
    config_path, stall_program = sys.argv[1], sys.argv[2]
    with open(config_path) as f:
        config = yaml.safe_load(f)

    # 1. Structure.
    for section in ('receivers', 'processors', 'exporters', 'service'):
        check(section in config, 'no ' + section + ' section')
    for name in config['service'].get('extensions', []):
        check(name in config.get('extensions', {}), 'extension not defined: ' + name)
    pipelines = config['service']['pipelines']
    check('logs' in pipelines, 'no logs pipeline')
    for kind in ('receivers', 'processors', 'exporters'):
        for name in pipelines['logs'].get(kind, []):
            check(name in config[kind], kind + ' not defined: ' + name)
    filelogs = [n for n in pipelines['logs']['receivers'] if n.split('/')[0] == 'filelog']
    check(len(filelogs) == 1, 'one filelog receiver in the logs pipeline')
    receiver = config['receivers'][filelogs[0]]
    include = receiver['include']
    check(any(p.endswith('.jsonl') for p in include), 'include names a .jsonl report')
    check(any(p + '.1' in include for p in include), 'include names the rotated report (.1)')
    check(receiver.get('start_at') == 'beginning', 'start_at: beginning')
    check(receiver.get('storage') in config['service'].get('extensions', []),
          'storage names an extension the service runs (offsets survive restarts)')
    operators = receiver['operators']
    check(operators[0]['type'] == 'json_parser', 'the first operator parses the JSON line')

    # 2. Replay on records the agent writes.
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, 'hangs.jsonl')
        env = dict(os.environ, HANGWATCH_LABELS='version=1.2,region=eu')
        subprocess.run([stall_program, '--agent', report, '0', '300'], check=True, env=env)
        with open(report) as f:
            lines = [l.rstrip('\n') for l in f if l.strip()]
    hangs = [l for l in lines if json.loads(l).get('type') == 'hang']
    check(len(hangs) >= 1, 'the agent wrote a hang')
    others = [
        '{"type":"lag","format_version":1,"pid":1,"start_unix_ms":1,"end_unix_ms":2}',
        '{"type":"startup_stall","format_version":1,"pid":1,"process":"/bin/a",'
        '"start_unix_ms":1,"duration_ms":3000,"threshold_ms":2000}',
    ]
    for line in others:
        check(replay(operators, line) is None, 'not dropped: ' + line)
    for line in hangs:
        record = json.loads(line)
        for fatal in (False, True):
            record['fatal'] = fatal
            entry = replay(operators, json.dumps(record))
            if not check(entry is not None, 'a hang was dropped'):
                continue
            check(entry['timestamp'] == record['start_unix_ms'], 'timestamp = start_unix_ms')
            check(entry['severity'] == (21 if fatal else 13), 'severity WARN / FATAL')
            res = entry['resource']
            check(res.get('service.name') == record['process_name'], 'service.name')
            check(res.get('host.name') == record['host'], 'host.name')
            check(res.get('process.pid') == record['pid'], 'process.pid')
            attrs = entry['attributes']
            for key, source in (('hang.duration_ms', 'duration_ms'), ('hang.cpu_ms', 'cpu_ms'),
                                ('hang.class', 'class'), ('hang.signature', 'signature'),
                                ('hang.fingerprint', 'fingerprint'), ('hang.samples', 'samples')):
                check(attrs.get(key) == record[source], key + ' from ' + source)
            check(attrs.get('hang.culprit.function') == record['culprit']['symbol'],
                  'hang.culprit.function from culprit.symbol')
            for big in ('stacks', 'timeline', 'modules'):
                check(big not in attrs, big + ' removed')

    if FAILURES:
        for f in FAILURES:
            print('FAIL: ' + f)
        print('0 passed, %d failed' % len(FAILURES))
        return 1
    print('%s: structure and %d hang record(s) replayed: ok' % (config_path, len(hangs)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
