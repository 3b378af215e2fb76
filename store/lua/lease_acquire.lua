-- lease_acquire.lua: take a lease that is free or already ours; every take
-- draws a new fencing token.
--
-- KEYS[1]  lease hash           <prefix>lease:{<name>}
-- KEYS[2]  fencing counter      <prefix>lease:{<name>}:fence, or for a
--          per-question lease the question hash <prefix>question:{<id>},
--          whose field ARGV[4] is the counter (it lives as long as the
--          question, and costs no key of its own)
-- ARGV[1]  holder
-- ARGV[2]  ttl of the lease in ms
-- ARGV[3]  ttl of the fencing counter key in ms (longer than the lease:
--          the counter outlives every token drawn from it that may still be
--          held, and names used once do not leave a key behind forever);
--          unused with ARGV[4]
-- ARGV[4]  the counter's field in the question hash, or '' for a key
--
-- Returns
--   {1, token}          taken by ARGV[1] with this new token
--   {0, holder, token}  held by another holder
--   -1                  a per-question lease whose question is gone
local cur = redis.call('HMGET', KEYS[1], 'holder', 'token')
if cur[1] and cur[1] ~= ARGV[1] then
  return {0, cur[1], cur[2]}
end
local token
if ARGV[4] ~= '' then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    return -1
  end
  token = redis.call('HINCRBY', KEYS[2], ARGV[4], 1)
else
  token = redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'token', token)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, tostring(token)}
