-- standing_set.lua: make a kept answer stand (ask-user.md §9), once per
-- keep: the second step of a keep (offer_take.lua decided it).
--
-- KEYS[1]  standing hash        <prefix>standing:{<agent>}:<key>
-- KEYS[2]  end mark hash        <prefix>standing-end:{<agent>}:<key>
--          (gen, state live|revoked|expired, since, by: the keep the
--          end timer is for; outlives the standing hash by ARGV[4])
-- ARGV[1]  gen of this keep
-- ARGV[2]  since, unix ms
-- ARGV[3]  until, unix ms
-- ARGV[4]  ms the end mark outlives until
-- ARGV[5]  by: the keeper's Person JSON, kept on the end mark
-- ARGV[6..] field, value pairs of the standing hash (gen, since and until
--          among them)
--
-- Returns 1 when set; 0 when this keep was set before (it may have been
-- revoked since: it is never set again) or a later keep stands.
local m = redis.call('HMGET', KEYS[2], 'gen', 'since')
if m[1] then
  if m[1] == ARGV[1] or tonumber(m[2]) > tonumber(ARGV[2]) then
    return 0
  end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'gen', ARGV[1], 'state', 'live', 'since', ARGV[2], 'by', ARGV[5])
redis.call('PEXPIREAT', KEYS[2], tonumber(ARGV[3]) + tonumber(ARGV[4]))
return 1
