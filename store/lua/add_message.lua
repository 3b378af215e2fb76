-- add_message.lua: record a message that showed a question, once.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  messages list        <prefix>messages:{<id>}
-- ARGV[1]  MessageRef JSON
-- ARGV[2]  most messages kept per question (bounds the loop below)
-- ARGV[3]  the message's identity: the MessageRef JSON of its platform, chat
--          and message without the closing brace. A recorded ref is the
--          same message when it is ARGV[3] .. '}' or starts with
--          ARGV[3] .. ',' (the same message with a part); the first record
--          of a message wins.
--
-- Returns
--   {1, status, created, pttl}  added; pttl is the hash's remaining life in
--                               ms, which the list now shares
--   {0, status, created, pttl}  already recorded: nothing changed
--   {-1}                        missing: no such question
--   {-2}                        full: the question already has ARGV[2] messages
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return {-1}
end
local created = redis.call('HGET', KEYS[1], 'created') or '0'
local pttl = redis.call('PTTL', KEYS[1])
local refs = redis.call('LRANGE', KEYS[2], 0, tonumber(ARGV[2]) - 1)
local whole, withPart = ARGV[3] .. '}', ARGV[3] .. ','
for _, ref in ipairs(refs) do
  if ref == whole or string.sub(ref, 1, #withPart) == withPart then
    return {0, status, created, pttl}
  end
end
if #refs >= tonumber(ARGV[2]) then
  return {-2}
end
redis.call('RPUSH', KEYS[2], ARGV[1])
if pttl > 0 then
  redis.call('PEXPIRE', KEYS[2], pttl)
end
return {1, status, created, pttl}
