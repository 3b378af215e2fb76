-- cursor_set.lua: write a named position, fenced by the lease of that name.
--
-- KEYS[1]  lease hash           <prefix>lease:{<name>}
-- KEYS[2]  cursor               <prefix>cursor:{<name>}
-- ARGV[1]  holder
-- ARGV[2]  token
-- ARGV[3]  value (an integer)
--
-- Returns
--   1  written
--   0  refused: the lease is not held with this holder and token
local cur = redis.call('HMGET', KEYS[1], 'holder', 'token')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
  return 0
end
redis.call('SET', KEYS[2], ARGV[3])
return 1
