-- lease_acquire.lua: take a lease that is free or already ours; every take
-- draws a new fencing token.
--
-- KEYS[1]  lease hash           <prefix>lease:{<name>}
-- KEYS[2]  fencing counter      <prefix>lease:{<name>}:fence
-- ARGV[1]  holder
-- ARGV[2]  ttl of the lease in ms
-- ARGV[3]  ttl of the fencing counter in ms (longer than the lease: the
--          counter outlives every token drawn from it that may still be
--          held, and names used once, such as per-question leases, do not
--          leave a key behind forever)
--
-- Returns
--   {1, token}          taken by ARGV[1] with this new token
--   {0, holder, token}  held by another holder
local cur = redis.call('HMGET', KEYS[1], 'holder', 'token')
if cur[1] and cur[1] ~= ARGV[1] then
  return {0, cur[1], cur[2]}
end
local token = redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'token', token)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, tostring(token)}
