-- add_message.lua: record a message that showed a question, once.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  messages list        <prefix>messages:{<id>}
-- ARGV[1]  MessageRef JSON
-- ARGV[2]  most messages kept per question (bounds the loop below)
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
for _, ref in ipairs(refs) do
  if ref == ARGV[1] then
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
