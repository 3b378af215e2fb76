-- text_cursor_set.lua: write a named text position (a Matrix sync's
-- next_batch token), fenced by the lease of that name, as cursor_set.lua
-- writes an integer one.
--
-- KEYS[1]  lease hash           <prefix>lease:{<name>}
-- KEYS[2]  text cursor          <prefix>textcursor:{<name>}
-- ARGV[1]  holder
-- ARGV[2]  token
-- ARGV[3]  value (a string)
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
