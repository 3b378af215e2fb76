-- place_failed.lua: record that one place of an open question cannot be
-- reached (ask-user.md §5), and report which of the places that count
-- have failed so far.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- ARGV[1]  the place's index
-- ARGV[2]  the platform's words
-- ARGV[3]  how many places count (those of the request's `to`: places
--          0 .. ARGV[3]-1)
--
-- Returns
--   {1, status, failed...}   recorded; failed lists the indexes below
--                            ARGV[3] that have failed, this one included
--   {-1}                     missing: no such question
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1}
end
redis.call('HSET', KEYS[1], 'failed:' .. ARGV[1], ARGV[2])
local out = {1, redis.call('HGET', KEYS[1], 'status')}
for i = 0, tonumber(ARGV[3]) - 1 do
  if redis.call('HEXISTS', KEYS[1], 'failed:' .. i) == 1 then
    out[#out + 1] = i
  end
end
return out
