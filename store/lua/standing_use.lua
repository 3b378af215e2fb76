-- standing_use.lua: decide, once per request, whether a standing answer
-- answers it (ask-user.md §9). The decision is kept under the request's
-- question id, so a retried intake gets the same one whatever happened
-- since; it runs atomically with standing_revoke.lua (one key), so a use
-- and a revoke never both win.
--
-- KEYS[1]  standing hash        <prefix>standing:{<agent>}:<key>
-- KEYS[2]  use decision hash    <prefix>standing-use:{<agent>}:<id>
-- ARGV[1]  gen of the standing answer the caller found ('' for none)
-- ARGV[2]  shape of the request
-- ARGV[3]  now, unix ms
-- ARGV[4]  ttl of the decision in ms
--
-- Returns
--   {1, {HGETALL...}}  used: uses counted; the fields as they stood
--   {0}                not used
--   a repeat returns what the first call returned.
if redis.call('EXISTS', KEYS[2]) == 1 then
  if redis.call('HGET', KEYS[2], 'used') == '1' then
    local d = redis.call('HGETALL', KEYS[2])
    return {1, d}
  end
  return {0}
end
local used = false
if ARGV[1] ~= '' and redis.call('EXISTS', KEYS[1]) == 1 then
  local s = redis.call('HMGET', KEYS[1], 'gen', 'shape', 'until')
  used = s[1] == ARGV[1] and s[2] == ARGV[2] and tonumber(s[3]) > tonumber(ARGV[3])
end
if not used then
  redis.call('HSET', KEYS[2], 'used', '0')
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  return {0}
end
redis.call('HINCRBY', KEYS[1], 'uses', 1)
redis.call('HSET', KEYS[1], 'lastUse', ARGV[3])
local d = redis.call('HGETALL', KEYS[1])
redis.call('HSET', KEYS[2], unpack(d))
redis.call('HSET', KEYS[2], 'used', '1')
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return {1, d}
