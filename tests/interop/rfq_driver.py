"""Drive the real ``rfq`` package (PyPI rfq 1.4.0, redis-py 3.5) for the interop tests.

Run with the interpreter of ``.venv-rfq``: ``.venv-rfq/bin/python rfq_driver.py '<json>'`` (or the JSON on
stdin). The JSON is one command or a list of commands; the output is one JSON line with the list of results.
rfq finds Redis through ``RFQ_REDIS_HOST`` / ``RFQ_REDIS_PORT``, as its own CLI does.

Commands (``op`` and arguments):
  publish        topic, message, front=false          -> id
  publish_batch  topic, messages, front=false         -> [id, ...] (rfq 1.4 returns them reversed for front)
  consume        topic, count=1, done=true            -> [{id, fields, published}, ...]; never blocks: it stops
                                                         when the backlog is empty (rfq's consume blocks forever)
  done           topic, ids                           -> [id, ...] (Task.done: rfq's commit)
  harvest        topic                                -> [id, ...] (rfq's blind harvest)
  topics                                              -> [name, ...]
  listq          topic, queue                         -> [id, ...]
  info           topic                                -> [backlog, nextlog]
  peek           topic, id                            -> fields or null
  purge          topic, queue                         -> [id, ...]
"""

import json
import signal
import sys

from rfq.rfq import Queue, Task

TIMEOUT = 20  # seconds: rfq's consume blocks forever on an empty backlog; never hang a test run


def consume(q, topic, count=1, done=True):
    out = []
    for _ in range(count):
        if q.r.llen(f'rfq:{topic}:backlog') == 0:
            break
        task = q.consume(topic=topic)
        out.append({'id': task.msgid, 'fields': task.result(), 'published': task.published().isoformat()})
        if done:
            task.done()
    return out


def run(q, cmd):
    op = cmd['op']
    topic = cmd.get('topic')
    if op == 'publish':
        return q.publish(topic=topic, message=cmd['message'], front=cmd.get('front', False))
    if op == 'publish_batch':
        return q.publish_batch(topic=topic, messages=cmd['messages'], front=cmd.get('front', False))
    if op == 'consume':
        return consume(q, topic, cmd.get('count', 1), cmd.get('done', True))
    if op == 'done':
        return [Task(topic=topic, msgid=i, msg={}, redis=q.r).done() for i in cmd['ids']]
    if op == 'harvest':
        return sorted(q.harvest(topic=topic))
    if op == 'topics':
        return sorted(q.topics())
    if op == 'listq':
        return q.listq(topic=topic, queue=cmd['queue'])
    if op == 'info':
        return list(q.info(topic=topic))
    if op == 'peek':
        return q.peek(topic=topic, msgid=cmd['id'])
    if op == 'purge':
        return q.purge(topic=topic, queue=cmd['queue'])
    raise ValueError(f'unknown op {op!r}')


def main():
    signal.alarm(TIMEOUT)
    text = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    cmds = json.loads(text)
    if isinstance(cmds, dict):
        cmds = [cmds]
    q = Queue()
    print(json.dumps([run(q, cmd) for cmd in cmds]))


if __name__ == '__main__':
    main()
