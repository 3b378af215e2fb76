-- callback_claim.lua: take the callbacks due by now, each for a lease: its
-- due time moves to the lease's end, so no other caller takes it before
-- then, and it comes back by itself if its taker dies.
--
-- KEYS[1]  the due-set          <prefix>callbacks (ZSET id -> due, unix ms)
-- ARGV[1]  now, unix ms
-- ARGV[2]  the end of the lease, unix ms
-- ARGV[3]  the most ids to take
--
-- Returns
--   {id...}  the ids taken, earliest due first (empty when none is due)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id)
end
return ids
