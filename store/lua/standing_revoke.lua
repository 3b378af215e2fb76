-- standing_revoke.lua: revoke a standing answer (ask-user.md §9): it is
-- never used again, and its end timer finds it revoked.
--
-- KEYS[1]  standing hash        <prefix>standing:{<agent>}:<key>
-- KEYS[2]  end mark hash        <prefix>standing-end:{<agent>}:<key>
-- ARGV[1]  the keep to revoke (its gen), or "" for whichever stands
--
-- Returns {1, {HGETALL...}} revoked, the fields as they stood; {0} none
-- stands (or another keep than ARGV[1] does).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0}
end
local gen = redis.call('HGET', KEYS[1], 'gen')
if ARGV[1] ~= '' and gen ~= ARGV[1] then
  return {0}
end
local s = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
if redis.call('HGET', KEYS[2], 'gen') == gen then
  redis.call('HSET', KEYS[2], 'state', 'revoked')
end
return {1, s}
