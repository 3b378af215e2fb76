-- callback_begin.lua: look at a claimed callback and, when its question has
-- ended and it is still waiting, start its next attempt. The result JSON
-- and the end time are copied into the callback hash at the first attempt,
-- so the callback outlives a question hash with a short retention.
--
-- KEYS[1]  callback hash        <prefix>callback:{<id>}
-- KEYS[2]  question hash        <prefix>question:{<id>}
-- ARGV[1]  now, unix ms
-- ARGV[2]  give up this many ms after the question ended
-- ARGV[3]  retention in ms, of a callback given up
-- ARGV[4]  how long a registration waits for its question to be stored,
--          in ms, before it is dropped
-- ARGV[5]  how long an attempt may take, in ms: no other attempt begins
--          until it is recorded (callback_finish.lua) or that time is out,
--          whatever brought the callback forward meanwhile
--
-- Returns
--   {1, attempt, url, result JSON, ended}  post: attempt is this one's number
--   {2, deadline}                          wait: the question is pending
--                                          (deadline unix ms), or not stored
--                                          yet (0)
--   {3, attempts}                          gave up: recorded as failed
--   {4, until}                             busy: an attempt is under way
--                                          until then (unix ms)
--   {0}                                    done: delivered or failed before
--   {-1}                                   no such callback (or dropped now)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1}
end
local cb = redis.call('HMGET', KEYS[1], 'state', 'url', 'body', 'ended', 'registered', 'attempts', 'busy')
if cb[1] ~= 'waiting' then
  return {0}
end
local now = tonumber(ARGV[1])
local busy = tonumber(cb[7]) or 0
if busy > now then
  return {4, busy}
end
local body, ended = cb[3], cb[4]
if not body then
  local q = redis.call('HMGET', KEYS[2], 'status', 'result', 'ended', 'deadline')
  if not q[1] then
    if now - (tonumber(cb[5]) or 0) > tonumber(ARGV[4]) then
      redis.call('DEL', KEYS[1])
      return {-1}
    end
    return {2, 0}
  end
  if q[1] == 'pending' or not q[2] or not q[3] then
    return {2, tonumber(q[4]) or 0}
  end
  body, ended = q[2], q[3]
  redis.call('HSET', KEYS[1], 'body', body, 'ended', ended)
end
if now >= tonumber(ended) + tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'state', 'failed', 'done', ARGV[1])
  redis.call('HDEL', KEYS[1], 'body')
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  if redis.call('EXISTS', KEYS[2]) == 1 then
    redis.call('HSET', KEYS[2], 'callback', 'failed')
  end
  return {3, tonumber(cb[6]) or 0}
end
local n = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'busy', now + tonumber(ARGV[5]))
return {1, n, cb[2], body, tonumber(ended)}
