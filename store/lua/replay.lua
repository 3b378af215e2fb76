-- replay.lua: push the stored result of an ended question again, when its
-- result list is empty (the agent took the result, and asks again).
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  result list          <prefix>result:{<id>}
--
-- Returns
--   1  pushed: the list now holds the stored result, and expires with the
--      question hash
--   0  nothing to do: no such question, not ended, or its result is
--      still waiting in the list
local res = redis.call('HGET', KEYS[1], 'result')
if not res or redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('RPUSH', KEYS[2], res)
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 1
