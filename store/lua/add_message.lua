-- add_message.lua: record a message that showed a question, once.
--
-- The messages are the question hash's msgs field: the MessageRef JSON of
-- each, in the order they were added, joined by newlines (JSON has none).
-- A question created before that field (it has none) keeps them in the
-- list of KEYS[2] instead, as it was stored then.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  legacy messages list <prefix>messages:{<id>}
-- ARGV[1]  MessageRef JSON
-- ARGV[2]  most messages kept per question (bounds the loop below)
-- ARGV[3]  the message's identity: the MessageRef JSON of its platform, chat
--          and message without the closing brace. A recorded ref is the
--          same message when it is ARGV[3] .. '}' or starts with
--          ARGV[3] .. ',' (the same message with a part); the first record
--          of a message wins.
-- ARGV[4]  now, unix ms
-- ARGV[5]  the result retention in ms
-- ARGV[6]  (optional) holder of a delivery lease of the question, given
--          up in the same step (as qlease.lua's release) while ARGV[6]
--          and ARGV[7] still hold it: the last part of a prompt is
--          recorded and its delivery lease released in one call
-- ARGV[7]  the lease's token
-- ARGV[8]  the lease's field in the question hash, lease:<kind>
--
-- The lease is given up whatever the outcome but a full question (the
-- caller then still holds it, and gives it up itself); with a message to
-- add, in the same HSET.
--
-- Returns
--   {1, status, created, life, target}
--                               added; life is how long the list (and the
--                               caller's index of the message) lives, in
--                               ms: as long as the hash, that is to the
--                               deadline plus the retention while pending,
--                               the retention once ended; target is the
--                               question's target field
--   {0, status, created, life, target}  already recorded: nothing changed
--   {-1}                        missing: no such question
--   {-2}                        full: the question already has ARGV[2] messages
local fields = {'status', 'created', 'deadline', 'target', 'msgs'}
if ARGV[8] then
  fields[6] = ARGV[8]
end
local q = redis.call('HMGET', KEYS[1], unpack(fields))
local status, created, target, msgs = q[1], q[2] or '0', q[4] or '', q[5]
if not status then
  return {-1}
end
-- ours is whether the lease field holds the caller's lease, unexpired:
-- then the writes below give it up.
local ours = false
if ARGV[8] and q[6] then
  local u, t, h = string.match(q[6], '^(%d+):(%d+):(.*)$')
  ours = u and tonumber(u) > tonumber(ARGV[4]) and t == ARGV[7] and h == ARGV[6]
end
local function hset(...)
  if ours then
    redis.call('HSET', KEYS[1], ARGV[8], '', ...)
  else
    redis.call('HSET', KEYS[1], ...)
  end
end
local life = tonumber(ARGV[5])
if status == 'pending' then
  life = math.max(tonumber(q[3] or '0') - tonumber(ARGV[4]), 0) + life
end
local refs = {}
if msgs then
  for ref in string.gmatch(msgs, '[^\n]+') do
    refs[#refs + 1] = ref
  end
else
  refs = redis.call('LRANGE', KEYS[2], 0, tonumber(ARGV[2]) - 1)
end
local whole, withPart = ARGV[3] .. '}', ARGV[3] .. ','
for _, ref in ipairs(refs) do
  if ref == whole or string.sub(ref, 1, #withPart) == withPart then
    if ours then
      redis.call('HDEL', KEYS[1], ARGV[8])
    end
    return {0, status, created, life, target}
  end
end
if #refs >= tonumber(ARGV[2]) then
  return {-2}
end
if not msgs then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], life)
  if ours then
    redis.call('HDEL', KEYS[1], ARGV[8])
  end
elseif msgs == '' then
  hset('msgs', ARGV[1])
else
  hset('msgs', msgs .. '\n' .. ARGV[1])
end
return {1, status, created, life, target}
