#!/usr/bin/env python3
"""Ask a person one question through askbridge, wait, print the result JSON.

Needs redis-py in the python3 that runs it: python3 -m pip install -r
requirements.txt (pyenv, a virtual environment), or, for Debian's and Ubuntu's
own python3, apt-get install python3-redis. See README.md.
Exit status: 0 answered, 1 anything else. Ctrl-C cancels the question.
For a Redis Cluster use redis.cluster.RedisCluster.from_url instead.
"""
import json, os, secrets, signal, sys, time

try:
    import redis
except ImportError:
    sys.exit(f"ask.py needs redis-py, which {sys.executable} does not have: run "
             f"{os.path.basename(sys.executable)} -m pip install -r requirements.txt in examples/python "
             "(or, with Debian's or Ubuntu's own python3, apt-get install python3-redis); see its README.md")

url = os.environ.get("ASKUSER_REDIS_URL") or "redis://127.0.0.1:6380"
prefix = os.environ.get("ASKUSER_REDIS_PREFIX") or "askuser:"
r = redis.Redis.from_url(url, decode_responses=True)

# Ctrl-C only raises a flag: a BLPOP cut short could lose a result Redis popped.
interrupted = []
signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))

qid = "py-" + secrets.token_hex(16)  # our own id: a retried XADD never asks twice
timeout = 300
request = {
    "id": qid, "to": "web", "agent": "python-example", "timeoutSeconds": timeout,
    "questions": [{"id": "deploy_target", "header": "Target", "question": "Where should this deploy?",
                   "options": [{"label": "Staging (Recommended)", "description": "Safer default"},
                               {"label": "Production"}]}]}
if os.environ.get("ASK_REMEMBER"):  # offer to keep the answer for 1 h or 24 h under this key
    request["remember"] = {"key": os.environ["ASK_REMEMBER"], "offer": [3600, 86400]}
r.xadd(prefix + "requests", {"ask": json.dumps(request)})
print(f"asked {qid}; answer it on the bridge's web page (Ctrl-C cancels)", file=sys.stderr, flush=True)

key = prefix + "result:{" + qid + "}"
give_up = time.monotonic() + timeout + 60  # the bridge ends it at its deadline
result = None
while result is None and not interrupted and time.monotonic() < give_up:
    item = r.blpop([key], timeout=2)  # short rounds, so Ctrl-C is seen soon
    result = item[1] if item else None
if result is None:  # Ctrl-C, or no bridge: cancel, and take the cancelled result
    r.xadd(prefix + "requests", {"cancel": qid})
    item = r.blpop([key], timeout=10)
    result = item[1] if item else None
if result is None:
    sys.exit("no result: is a bridge running on this Redis, with this prefix?")
print(result, flush=True)
sys.exit(0 if json.loads(result)["status"] == "answered" else 1)
