-- end.lua: end a pending question, first writer wins.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  result list          <prefix>result:{<id>}
-- KEYS[3]  messages list        <prefix>messages:{<id>}
-- ARGV[1]  final status: answered, no_answer or error
-- ARGV[2]  result JSON without createdAt/endedAt; it ends in '}' and the
--          script appends both stamps (created from the hash, ended = now)
-- ARGV[3]  now, unix ms
-- ARGV[4]  retention in ms
--
-- Returns
--   {1, {HGETALL...}, {messages...}}  won: the result was written and pushed
--   {0, {HGETALL...}, {messages...}}  lost: the question had already ended;
--                                     its fields hold the result that won
--   {-1}                              missing: no such question
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return {-1}
end
if status ~= 'pending' then
  return {0, redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[3], 0, -1)}
end
local created = redis.call('HGET', KEYS[1], 'created') or '0'
local result = string.sub(ARGV[2], 1, -2) .. ',"createdAt":' .. created .. ',"endedAt":' .. ARGV[3] .. '}'
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'result', result, 'ended', ARGV[3])
redis.call('RPUSH', KEYS[2], result)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return {1, redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[3], 0, -1)}
