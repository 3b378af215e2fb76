-- sweep_claim.lua: hand the questions whose deadline has come to one
-- sweeper at a time: each id handed out is given the score now + hold, so
-- another sweeper (of this replica or another) passes over it while this
-- one ends it, and a sweeper that dies meanwhile leaves it due again hold
-- ms later. The sweeper removes the ids it settles (ZREM); the end script
-- decides a timeout by the question's own deadline field, never the score.
--
-- KEYS[1]  deadlines zset       <prefix>deadlines
-- ARGV[1]  now, unix ms
-- ARGV[2]  hold, ms
-- ARGV[3]  most ids handed out
--
-- Returns {id, score, id, score, ...}, oldest first, with the scores they
-- had before: their deadlines, or when an earlier claim lapsed. When fewer
-- than ARGV[3] were due (none else is), one more value follows: the
-- earliest score after now, the next deadline (or claim lapse), for the
-- sweeper to sleep until; none when the zset holds nothing later.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
local nxt = {}
if #due < 2 * tonumber(ARGV[3]) then
  nxt = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
end
if #due == 0 then
  return {nxt[2]}
end
local later = tonumber(ARGV[1]) + tonumber(ARGV[2])
-- In chunks of 500 ids: unpack has a limit of a few thousand values.
local args = {'XX'}
for i = 1, #due, 2 do
  args[#args + 1] = later
  args[#args + 1] = due[i]
  if #args > 1000 then
    redis.call('ZADD', KEYS[1], unpack(args))
    args = {'XX'}
  end
end
if #args > 1 then
  redis.call('ZADD', KEYS[1], unpack(args))
end
if nxt[2] then
  due[#due + 1] = nxt[2]
end
return due
