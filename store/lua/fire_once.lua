-- fire_once.lua: mark a timer of a question as announced, once.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- ARGV[1]  the timer's name ("r1", "e2")
--
-- Returns 1 when this call marked it, 0 when it was marked before or the
-- question is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
return redis.call('HSETNX', KEYS[1], 'fired:' .. ARGV[1], '1')
