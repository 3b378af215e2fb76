-- create.lua: store a new pending question, unless its id is already known,
-- and take its delivery lease for the caller in the same step.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  delivery lease hash  <prefix>lease:deliver:{<id>}
-- ARGV[1]  ttl of the hash in ms: deadline - created + retention (so the
--          hash never outlives its deadline plus the retention)
-- ARGV[2]  holder of a delivery lease kept in KEYS[2] ('' takes none).
--          The Store passes '': it writes the delivery lease as fields of
--          the new hash instead (ARGV[4..]), the way the versions before
--          it kept it in KEYS[2] being kept for them
-- ARGV[3]  ttl of the lease in ms
-- ARGV[4..] field, value pairs of the new hash (status pending, request,
--          created, deadline, target, answerers and, with a holder, the
--          lease's fencing counter fence:deliver at 1 and the lease
--          itself, lease:deliver = "<until>:1:<holder>" (qlease.lua): the
--          lease's first token, drawn with the question)
--
-- Returns
--   {1}                 created
--   {1, token}          created, and the lease taken with this token
--   {0, {HGETALL...}}   the id is already known: nothing changed; the stored
--                       fields are returned
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, redis.call('HGETALL', KEYS[1])}
end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if ARGV[2] == '' then
  return {1}
end
local token = 1
redis.call('HSET', KEYS[2], 'holder', ARGV[2], 'token', token)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {1, tostring(token)}
