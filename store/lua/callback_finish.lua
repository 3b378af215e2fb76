-- callback_finish.lua: record how an attempt went, if it is still the
-- latest one (the attempt number fences out a taker whose claim lapsed).
-- The question hash, when it still exists, shows the state in its field
-- `callback`.
--
-- KEYS[1]  callback hash        <prefix>callback:{<id>}
-- KEYS[2]  question hash        <prefix>question:{<id>}
-- ARGV[1]  the attempt's number
-- ARGV[2]  delivered, retrying or failed (given up)
-- ARGV[3]  the error text ('' when delivered)
-- ARGV[4]  now, unix ms
-- ARGV[5]  retention in ms, of a callback delivered or given up
--
-- Returns
--   1  recorded
--   0  not the latest attempt, or no longer waiting: nothing changed
local cb = redis.call('HMGET', KEYS[1], 'state', 'attempts')
if cb[1] ~= 'waiting' or cb[2] ~= ARGV[1] then
  return 0
end
redis.call('HDEL', KEYS[1], 'busy')
if ARGV[2] == 'retrying' then
  redis.call('HSET', KEYS[1], 'error', ARGV[3], 'last', ARGV[4])
else
  redis.call('HSET', KEYS[1], 'state', ARGV[2], 'error', ARGV[3], 'last', ARGV[4], 'done', ARGV[4])
  redis.call('HDEL', KEYS[1], 'body')
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[2], 'callback', ARGV[2])
end
return 1
