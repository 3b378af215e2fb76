-- lease_renew.lua: extend a lease, only while the holder and token match.
--
-- KEYS[1]  lease hash           <prefix>lease:{<name>}
-- KEYS[2]  fencing counter      <prefix>lease:{<name>}:fence (or the
--          question hash, see lease_acquire.lua)
-- ARGV[1]  holder
-- ARGV[2]  token
-- ARGV[3]  ttl of the lease in ms
-- ARGV[4]  ttl of the fencing counter key in ms (see lease_acquire.lua)
-- ARGV[5]  the counter's field in the question hash ('' for a key, whose
--          life is extended; a question's is its own)
--
-- Returns
--   1  renewed
--   0  lost: expired, or taken by another holder or token
local cur = redis.call('HMGET', KEYS[1], 'holder', 'token')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if ARGV[5] == '' then
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return 1
