-- send_clear.lua: take a send mark back, only while it holds the value
-- the caller marked it with (the send it stood for was refused).
--
-- KEYS[1]  send mark            <prefix>sent:{<id>}:<name>
-- ARGV[1]  value
--
-- Returns
--   1  cleared
--   0  not held with this value (gone, or another send's)
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
