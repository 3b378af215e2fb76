-- admit.lua: count a question against its agent's cap of pending
-- questions, unless the cap is reached.
--
-- KEYS[1]  the agent's pending index   <prefix>agent:{<agent>} (ZSET of
--          question ids scored by deadline, unix ms)
-- ARGV[1]  question id
-- ARGV[2]  its deadline, unix ms
-- ARGV[3]  now, unix ms: members whose deadline has passed are dropped
--          (their question has ended, or is about to: a member left by a
--          replica that died between an end and its cleanup)
-- ARGV[4]  the cap (≥ 1)
-- ARGV[5]  the index key's life in ms (longer than any question's)
--
-- Returns
--   {1, n}  admitted, or already counted (a retried request): n pending
--           questions of the agent, this one included
--   {0, n}  refused: the agent already has n ≥ cap pending questions
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
local n = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return {1, n}
end
if n >= tonumber(ARGV[4]) then
  return {0, n}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, n + 1}
