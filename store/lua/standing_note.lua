-- standing_note.lua: record the message that shows a standing answer, if
-- that keep still stands.
--
-- KEYS[1]  standing hash        <prefix>standing:{<agent>}:<key>
-- ARGV[1]  gen of the keep
-- ARGV[2]  MessageRef JSON
--
-- Returns 1 when recorded, 0 when that keep no longer stands.
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'msg', ARGV[2])
return 1
