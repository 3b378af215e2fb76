// Ask a person one question through askbridge, wait, print the result JSON.
// Needs the redis package (npm ci). Exit status: 0 answered, 1 anything
// else. Ctrl-C cancels the question. For a Redis Cluster use createCluster.
import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';

const url = process.env.ASKUSER_REDIS_URL || 'redis://127.0.0.1:6380';
const prefix = process.env.ASKUSER_REDIS_PREFIX || 'askuser:';
const client = createClient({ url });
client.on('error', (err) => console.error('redis:', err.message));
await client.connect();

// Ctrl-C only raises a flag: a BLPOP cut short could lose a result Redis popped.
let interrupted = false;
process.on('SIGINT', () => { interrupted = true; });

const id = 'node-' + randomBytes(16).toString('hex'); // our own id: a retried XADD never asks twice
const timeout = 300;
const request = {
  id, to: 'web', agent: 'node-example', timeoutSeconds: timeout,
  questions: [{ id: 'deploy_target', header: 'Target', question: 'Where should this deploy?',
    options: [{ label: 'Staging (Recommended)', description: 'Safer default' }, { label: 'Production' }] }],
};
if (process.env.ASK_REMEMBER) { // offer to keep the answer for 1 h or 24 h under this key
  request.remember = { key: process.env.ASK_REMEMBER, offer: [3600, 86400] };
}
await client.xAdd(prefix + 'requests', '*', { ask: JSON.stringify(request) });
console.error(`asked ${id}; answer it on the bridge's web page (Ctrl-C cancels)`);

const key = `${prefix}result:{${id}}`;
const giveUp = Date.now() + (timeout + 60) * 1000; // the bridge ends it at its deadline
let result = null;
while (result === null && !interrupted && Date.now() < giveUp) {
  result = (await client.blPop(key, 2))?.element ?? null; // short rounds, so Ctrl-C is seen soon
}
if (result === null) { // Ctrl-C, or no bridge: cancel, and take the cancelled result
  await client.xAdd(prefix + 'requests', '*', { cancel: id });
  result = (await client.blPop(key, 10))?.element ?? null;
}
await client.close();
if (result === null) {
  console.error('no result: is a bridge running on this Redis, with this prefix?');
  process.exitCode = 1;
} else {
  console.log(result);
  process.exitCode = JSON.parse(result).status === 'answered' ? 0 : 1;
}
