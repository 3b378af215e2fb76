-- create.lua: store a new pending question, unless its id is already known.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- ARGV[1]  ttl of the hash in ms: deadline - created + retention (so the
--          hash never outlives its deadline plus the retention)
-- ARGV[2..] field, value pairs of the new hash (status pending, request,
--          created, deadline, target, answerers)
--
-- Returns
--   {1}                 created
--   {0, {HGETALL...}}   the id is already known: nothing changed; the stored
--                       fields are returned
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, redis.call('HGETALL', KEYS[1])}
end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {1}
