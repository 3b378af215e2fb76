-- offer_close.lua: remove the offer of a question (its end timer fired).
--
-- KEYS[1]  offer hash           <prefix>offer:{<id>}
--
-- Returns {1, {HGETALL...}} the offer as it was, removed; {0} none.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0}
end
local o = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
return {1, o}
