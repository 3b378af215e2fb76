-- replay.lua: push the stored result of an ended question again, when its
-- result list is empty (the agent took the result, and asks again).
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  result list          <prefix>result:{<id>}
-- ARGV[1]  the stream entry id of the ask at hand ('' when unknown)
--
-- Returns
--   1  pushed: the list now holds the stored result, and expires with the
--      question hash
--   0  nothing to do: no such question, not ended, its result still
--      waiting in the list, or the ask at hand is no new ask: the entry
--      that created the question (handled again), or the ask a cancel
--      came before (a cancel that finds no question leaves one without a
--      request, and its result is not an error)
local res = redis.call('HGET', KEYS[1], 'result')
if not res or redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local f = redis.call('HMGET', KEYS[1], 'request', 'entry', 'status')
if not f[1] and f[3] ~= 'error' then
  return 0
end
if ARGV[1] ~= '' and f[2] == ARGV[1] then
  return 0
end
redis.call('RPUSH', KEYS[2], res)
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 1
