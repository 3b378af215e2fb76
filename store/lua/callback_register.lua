-- callback_register.lua: register a question's result callback, unless it
-- is registered already (then its URL and state are kept).
--
-- KEYS[1]  callback hash        <prefix>callback:{<id>}
-- ARGV[1]  the callback URL
-- ARGV[2]  now, unix ms
-- ARGV[3]  how long the registration lives, in ms (until its question
--          can no longer be called back, plus the retention)
--
-- Returns
--   1  registered: state waiting, no attempt yet
--   0  already registered: nothing changed
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'url', ARGV[1], 'state', 'waiting', 'registered', ARGV[2], 'attempts', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
