-- reject.lua: record a refused request, or one a standing answer answered
-- at once, ended, unless its id is already known.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  result list          <prefix>result:{<id>}
-- ARGV[1]  final status (error for a refused request)
-- ARGV[2]  result JSON without createdAt/endedAt; it ends in '}' and the
--          script appends both stamps (both now)
-- ARGV[3]  now, unix ms
-- ARGV[4]  retention in ms
-- ARGV[5..] further field, value pairs of the hash (a question a standing
--          answer answered at once keeps its request)
--
-- Returns
--   {1, {HGETALL...}}  won: the question was stored ended and its result pushed
--   {0, {HGETALL...}}  the id is already known: nothing changed
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, redis.call('HGETALL', KEYS[1])}
end
local result = string.sub(ARGV[2], 1, -2) .. ',"createdAt":' .. ARGV[3] .. ',"endedAt":' .. ARGV[3] .. '}'
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'result', result,
  'created', ARGV[3], 'deadline', ARGV[3], 'ended', ARGV[3])
if #ARGV > 4 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 5))
end
redis.call('RPUSH', KEYS[2], result)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return {1, redis.call('HGETALL', KEYS[1])}
