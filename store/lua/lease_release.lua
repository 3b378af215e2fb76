-- lease_release.lua: give a lease up, only while the holder and token match.
--
-- KEYS[1]  lease hash           <prefix>lease:{<name>}
-- ARGV[1]  holder
-- ARGV[2]  token
--
-- Returns
--   1  released
--   0  not held with this holder and token (already released, expired or taken)
local cur = redis.call('HMGET', KEYS[1], 'holder', 'token')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
