-- offer_take.lua: take the offer of a question for a person and a
-- duration (a keep, ask-user.md §9): the first step of a keep, deciding
-- what will stand. Setting it (standing_set.lua) is the second, in the
-- agent's slot; the offer's end timer finishes a keep whose replica died
-- in between.
--
-- KEYS[1]  offer hash           <prefix>offer:{<id>}
-- ARGV[1]  who keeps, "<platform>:<id>"
-- ARGV[2]  the duration, seconds
-- ARGV[3]  now, unix ms
-- ARGV[4]  gen: a name for this keep
--
-- Returns
--   {1, {HGETALL...}}  taken: gen, since (now) and until (now + duration)
--                      recorded on the offer
--   {2, {HGETALL...}}  taken before (by this person): the fields of that
--                      keep
--   {3}                not this person's offer (taken or not)
--   {4}                closed (past its end) or unknown
--   {5}                the duration is not offered
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {4}
end
local o = redis.call('HMGET', KEYS[1], 'who', 'offer', 'ends', 'gen')
if o[1] ~= ARGV[1] then
  return {3}
end
if o[4] then
  return {2, redis.call('HGETALL', KEYS[1])}
end
if tonumber(ARGV[3]) >= tonumber(o[3]) then
  return {4}
end
if not string.find(',' .. o[2] .. ',', ',' .. ARGV[2] .. ',', 1, true) then
  return {5}
end
local now = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'gen', ARGV[4], 'since', now, 'until', now + tonumber(ARGV[2]) * 1000)
return {1, redis.call('HGETALL', KEYS[1])}
