-- standing_expire.lua: end a standing answer at its time (its end timer
-- fired), exactly once across replicas.
--
-- KEYS[1]  standing hash        <prefix>standing:{<agent>}:<key>
-- KEYS[2]  end mark hash        <prefix>standing-end:{<agent>}:<key>
-- ARGV[1]  gen of the keep the timer is for
-- ARGV[2]  now, unix ms
--
-- Returns
--   {1, by, {HGETALL...}}  ended by this call: the keeper's Person JSON,
--                      and the fields when the hash had not lapsed yet
--                      (else empty)
--   {0}                moot: revoked, replaced by a later keep, or ended
--   {2}                not yet: its until is still ahead
local m = redis.call('HMGET', KEYS[2], 'gen', 'state', 'by')
if m[1] ~= ARGV[1] or m[2] ~= 'live' then
  return {0}
end
local s = {}
if redis.call('EXISTS', KEYS[1]) == 1 and redis.call('HGET', KEYS[1], 'gen') == ARGV[1] then
  if tonumber(redis.call('HGET', KEYS[1], 'until')) > tonumber(ARGV[2]) then
    return {2}
  end
  s = redis.call('HGETALL', KEYS[1])
  redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[2], 'state', 'expired')
return {1, m[3] or '', s}
