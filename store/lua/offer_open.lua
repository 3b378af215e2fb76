-- offer_open.lua: record the offer to keep the answer of a question
-- (ask-user.md §9), unless it is recorded already.
--
-- KEYS[1]  offer hash           <prefix>offer:{<id>}
-- ARGV[1]  ttl of the hash in ms (past the offer's end, so its end timer
--          finds it)
-- ARGV[2..] field, value pairs of the offer
--
-- Returns 1 when recorded, 0 when an offer was there already (unchanged).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
